"""kproto.spark and ``kproto export`` on real Spark.

One Spark session for the module (start-up costs ~20 s here): local[2], or a
standalone cluster with ``KPROTO_TEST_SPARK_MASTER=standalone`` (make test
runs this module both ways). Expected rows are the records as
tests/spark/spark_fixtures.py built them.

Column names, order and types of the Kafka part are Spark's Kafka source's
(KafkaRecordToRowConverter.kafkaSchema in Spark's
connector/kafka-0-10-sql, and its documented "Each row in the source has
the following schema"); option semantics for startingOffsets/endingOffsets
(-2 earliest, -1 latest) are KafkaSourceProvider's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import components
from tests.spark.spark_fixtures import T0, Written, batch_positions, build_data_dir, spark_for_tests

pytestmark = pytest.mark.slow

KAFKA_SOURCE = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
                ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int")]
KPROTO = str(components.VENV_BIN / "kproto")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Written]:
    root = tmp_path_factory.mktemp("kafka-data")
    return root, build_data_dir(root)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    with spark_for_tests(tmp_path_factory.mktemp("spark")) as s:
        yield s


def read(spark, path, **options):
    r = spark.read.format("kafka-log")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(str(path))


def rows_of(df, *cols):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def expected(written: Written, topic: str, partition: int, offsets=None):
    rows = written.records[(topic, partition)]
    return sorted((o, k, v) for o, k, v, _, _ in rows if offsets is None or o in offsets)


# --- schema ---------------------------------------------------------------------------

def test_columns_begin_like_sparks_kafka_source(spark, data):
    df = read(spark, data[0])
    assert df.dtypes[:7] == KAFKA_SOURCE
    assert df.dtypes[7] == ("headers", "array<struct<key:string,value:binary>>")
    assert df.columns[8:] == ["base_offset", "magic", "compression", "producer_id", "producer_epoch",
                              "base_sequence", "is_transactional", "is_control", "crc_valid", "segment",
                              "position", "error"]


def test_arrow_types_are_what_spark_accepts():
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType
    from kproto.spark import columns as C
    fields = []
    import pyspark.sql.types as T
    kinds = {"BINARY": T.BinaryType(), "STRING": T.StringType(), "INT": T.IntegerType(), "BIGINT": T.LongType(),
             "TIMESTAMP": T.TimestampType(), "BOOLEAN": T.BooleanType(),
             "ARRAY<STRUCT<key: STRING, value: BINARY>>": T.ArrayType(T.StructType(
                 [T.StructField("key", T.StringType()), T.StructField("value", T.BinaryType())]))}
    for name, sql, _ in C.COLUMNS:
        fields.append(T.StructField(name, kinds[sql]))
    assert to_arrow_schema(StructType(fields), timezone="UTC").equals(C.arrow_schema(C.NAMES))


def test_tasks_run_on_the_chosen_master(spark):
    """Tasks import this kproto; on a standalone cluster their Python runs
    under an executor JVM of its own, not the driver's."""
    import os
    import kproto

    def where(_):
        import os
        import kproto
        pid, jvm = os.getpid(), ""
        for _ in range(6):                      # worker -> pyspark daemon -> the JVM
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            if "java" in cmd.split(" ")[0]:
                jvm = cmd
                break
        yield kproto.__file__, "CoarseGrainedExecutorBackend" in jvm
    got = set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(where).collect())
    standalone = os.environ.get("KPROTO_TEST_SPARK_MASTER") == "standalone"
    assert got == {(kproto.__file__, standalone)}


# --- reading --------------------------------------------------------------------------

def test_every_codec_and_segment_read_back_as_written(spark, data):
    root, written = data
    df = read(spark, root, topics="codecs", maxPartitionBytes="1500").cache()
    try:
        assert df.rdd.getNumPartitions() > 4          # small segments split at .index positions
        for p in (0, 1):
            got = rows_of(df.where(f"partition = {p}"), "offset", "key", "value")
            assert got == [(o, k, v) for o, k, v in expected(written, "codecs", p)]
        heads = {r.offset: [(h.key, h.value) for h in r.headers]
                 for r in df.where("partition = 0").select("offset", "headers").collect()}
        assert heads == {o: list(h) for o, _, _, h, _ in written.records[("codecs", 0)]}
        stamps = {r.offset: int(r.timestamp.timestamp() * 1000)
                  for r in df.where("partition = 0").select("offset", "timestamp").collect()}
        assert stamps == {o: ts for o, _, _, _, ts in written.records[("codecs", 0)]}
        codecs = rows_of(df.where("partition = 0").groupBy("compression").count(), "compression", "count")
        assert codecs == [("gzip", 40), ("lz4", 40), ("none", 40), ("snappy", 40), ("zstd", 40)]
        assert df.where("error IS NOT NULL OR NOT crc_valid").count() == 0
    finally:
        df.unpersist()


def test_legacy_magic_0_and_1(spark, data):
    root, written = data
    df = read(spark, root, topics="legacy")
    assert rows_of(df, "offset", "key", "value") == expected(written, "legacy", 0)
    got = rows_of(df, "offset", "magic", "compression", "timestampType")
    assert got == [(0, 0, "none", -1), (1, 0, "gzip", -1), (2, 0, "gzip", -1), (3, 0, "gzip", -1),
                   (4, 1, "none", 0), (5, 1, "snappy", 0), (6, 1, "snappy", 0), (7, 1, "snappy", 0),
                   (8, 1, "snappy", 0), (9, 1, "lz4", 0), (10, 1, "lz4", 0)]
    stamps = rows_of(df, "offset", "timestamp")
    assert stamps[0][1] is None and int(stamps[4][1].timestamp() * 1000) == T0 + 4


def test_isolation_levels_and_control_batches(spark, data):
    root, _ = data
    offsets = lambda **o: [r.offset for r in read(spark, root, topics="txn", **o).orderBy("offset").collect()]
    assert offsets() == [0, 1, 2, 4, 5, 7, 8, 9, 10, 11]
    assert offsets(includeControl="true") == list(range(12))
    # Aborted (producer 7) dropped by its ABORT marker; committed kept; reading
    # stops at the last stable offset 9 where producer 9's transaction is open.
    assert offsets(isolationLevel="read_committed") == [4, 5, 7, 8]
    ctrl = read(spark, root, topics="txn", includeControl="true").where("is_control").collect()
    assert [(r.offset, r.producer_id, r.is_transactional) for r in sorted(ctrl, key=lambda r: r.offset)] == \
        [(3, 7, True), (6, 8, True)]


def test_permissive_keeps_reading_past_corruption(spark, data):
    root, written = data
    df = read(spark, root, topics="corrupt")
    flipped = df.where("partition = 0").orderBy("offset").collect()
    assert [r.offset for r in flipped] == list(range(12))
    assert [r.crc_valid for r in flipped] == [True] * 4 + [False] * 4 + [True] * 4
    assert all("crc mismatch" in r.error for r in flipped[4:8]) and flipped[0].error is None
    assert [(r.offset, r.key, r.value) for r in flipped[8:]] == expected(written, "corrupt", 0, range(8, 12))
    second = batch_positions(root / "corrupt-1" / f"{0:020d}.log")[1]
    broken = df.where("partition = 1").collect()
    errors = [r for r in broken if r.error is not None]
    assert len(errors) == 1 and errors[0].offset is None and errors[0].position == second
    assert f"@ byte {second}" in errors[0].error and "next valid batch" in errors[0].error
    good = sorted((r.offset, r.key, r.value) for r in broken if r.error is None)
    assert good == expected(written, "corrupt", 1, [0, 1, 2, 3, 8, 9, 10, 11])


def test_failfast_names_file_and_byte(spark, data):
    root, _ = data
    with pytest.raises(Exception) as e:
        read(spark, root, topics="corrupt", mode="FAILFAST").where("partition = 0").collect()
    second = batch_positions(root / "corrupt-0" / f"{0:020d}.log")[1]
    assert f"corrupt-0/{0:020d}.log @ byte {second + 17}: crc: crc mismatch" in str(e.value)


def test_unread_batches_are_never_decompressed(spark, data):
    """lazy-0 starts with a batch whose lz4 payload is garbage (valid CRC):
    reading it gives an error row; bounds that exclude it give none."""
    root, written = data
    assert read(spark, root, topics="lazy").where("error IS NOT NULL").count() == 1
    for df in (read(spark, root, topics="lazy", startingOffsets='{"lazy":{"0":10}}'),
               read(spark, root, topics="lazy").where("offset >= 12"),
               read(spark, root).where("topic = 'lazy' AND offset IN (13, 20)")):
        rows = df.collect()
        assert all(r.error is None for r in rows) and rows
    got = rows_of(read(spark, root, topics="lazy").where("offset >= 12 AND offset < 17"), "offset", "key", "value")
    assert got == expected(written, "lazy", 0, range(12, 17))


def test_offset_and_timestamp_bounds(spark, data):
    root, written = data
    df = read(spark, root, startingOffsets='{"codecs":{"0":35,"1":-1}}', endingOffsets='{"codecs":{"0":85}}',
              topics="codecs")
    assert rows_of(df, "offset", "key", "value") == expected(written, "codecs", 0, range(35, 85))
    # codecs-0's batches have timestamps T0 + 1000*i + j: the first >= T0+2010 is offset 90.
    df = read(spark, root, topicPattern="codec.*", startingTimestamp=str(T0 + 2010))
    first = {r.partition: r[1] for r in df.groupBy("partition").min("offset").collect()}
    assert first[0] == 90
    assert first[1] == min(o for o, *_, ts in written.records[("codecs", 1)] if ts >= T0 + 2010)
    assert read(spark, root, topics="codecs", startingOffsets="latest").count() == 0


def test_columns_option_reads_only_those(spark, data):
    root, written = data
    df = read(spark, root, topics="codecs", columns="partition,offset")
    assert df.columns == ["partition", "offset"]
    assert df.count() == len(written.records[("codecs", 0)]) + len(written.records[("codecs", 1)])
    # A URI (pyarrow.fs), a partition directory, a single segment file.
    by_uri = read(spark, f"file://{root}", topics="legacy", columns="offset,segment").collect()
    assert sorted(r.offset for r in by_uri) == list(range(11))
    assert by_uri[0].segment == f"file://{root}/legacy-0/{0:020d}.log"
    assert read(spark, root / "txn-0").count() == 10
    assert read(spark, root / "codecs-1" / f"{0:020d}.log").count() < 300


def test_bad_options_are_one_line_errors(spark, data):
    with pytest.raises(Exception, match="option mode must be PERMISSIVE or FAILFAST"):
        read(spark, data[0], mode="LENIENT").collect()
    with pytest.raises(Exception, match="startingOffsets: expected earliest, latest or JSON"):
        read(spark, data[0], startingOffsets="{nope").collect()


# --- export ---------------------------------------------------------------------------

def test_export_to_parquet_read_back_with_pyarrow(spark, data, tmp_path):
    import pyarrow.parquet as pq
    from click.testing import CliRunner
    from kproto.tools.main import cli
    root, written = data
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["export", str(root), "--out", str(out), "--where", "topic = 'codecs'",
                                   "--select", "partition, offset, key, value, headers"])
    assert res.exit_code == 0, res.output
    n = len(written.records[("codecs", 0)]) + len(written.records[("codecs", 1)])
    assert res.output.startswith(f"exported {n:,} rows to {out} (parquet) in ")
    table = pq.read_table(out)
    assert table.column_names == ["partition", "offset", "key", "value", "headers"]
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("partition", "offset", "key", "value"))))
    want = sorted((p, o, k, v) for p in (0, 1) for o, k, v in expected(written, "codecs", p))
    assert got == want


def test_export_usage_errors_are_one_line():
    for args, msg in ((["export"], "give a PATH to export or --consumer-offsets DATADIR"),
                      (["export", "x"], "--out DIR is required")):
        p = subprocess.run([KPROTO, *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and p.stderr.strip() == msg and not p.stdout


# --- writing back -----------------------------------------------------------------------

def test_write_back_is_a_log_dump_log_and_serve_read(spark, data, tmp_path):
    root, written = data
    out = tmp_path / "written"
    src = read(spark, root, topics="codecs").where("partition = 1 OR offset >= 30")
    src.write.format("kafka-log").mode("append").option("segmentBytes", "2048").save(str(out))
    want0 = expected(written, "codecs", 0, range(30, 10**6))
    want1 = expected(written, "codecs", 1)
    back = read(spark, out)
    assert rows_of(back.where("partition = 0"), "offset", "key", "value") == want0
    assert rows_of(back.where("partition = 1"), "offset", "key", "value") == want1
    heads = {r.offset: [(h.key, h.value) for h in r.headers] for r in back.where("partition = 0").collect()}
    assert heads == {o: list(h) for o, _, _, h, _ in written.records[("codecs", 0)] if o >= 30}
    # Rebuilt batch by batch: same codecs; the first batch cut at offset 30 keeps its offsets.
    meta = rows_of(back.where("partition = 0").groupBy("base_offset", "compression").count(),
                   "base_offset", "compression", "count")
    assert meta == [(30, "none", 10), (40, "gzip", 40), (80, "snappy", 40), (120, "lz4", 40), (160, "zstd", 40)]
    segs = sorted(p.name for p in (out / "codecs-1").iterdir())
    assert len([s for s in segs if s.endswith(".log")]) > 1
    assert {s[:20] for s in segs if s.endswith(".log")} == {s[:20] for s in segs if s.endswith(".timeindex")}
    assert (out / "codecs-0" / f"{30:020d}.log").exists()

    dump = subprocess.run([KPROTO, "dump-log", "--files", str(out / "codecs-0" / f"{30:020d}.log"),
                           "--print-data-log"], capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stderr
    offsets = [int(line.split("offset: ")[1].split()[0]) for line in dump.stdout.splitlines()
               if line.startswith("| offset: ")]
    assert offsets == [o for o, _, _ in want0][:len(offsets)] and offsets[0] == 30

    with components.kproto_broker(tmp_path, data_dir=out) as bootstrap:
        got = consume_all(bootstrap, "codecs", 2, len(want0) + len(want1))
    assert sorted(got) == sorted([(0, o, k, v) for o, k, v in want0] + [(1, o, k, v) for o, k, v in want1])


def test_write_back_drops_error_rows_keeps_offsets(spark, data, tmp_path):
    """A PERMISSIVE read of a broken segment written back: the error row is no
    record; the records around the hole keep their offsets."""
    root, written = data
    read(spark, root, topics="corrupt").where("partition = 1").write.format("kafka-log").mode("overwrite") \
        .save(str(tmp_path / "repaired"))
    back = read(spark, tmp_path / "repaired")
    assert back.where("error IS NOT NULL").count() == 0
    assert rows_of(back, "offset", "key", "value") == expected(written, "corrupt", 1, [0, 1, 2, 3, 8, 9, 10, 11])


def consume_all(bootstrap: str, topic: str, partitions: int, n: int, timeout: float = 60) -> list[tuple]:
    import time
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "spark-test", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, deadline = [], time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value()))
        return out
    finally:
        c.close()


# --- captures ---------------------------------------------------------------------------

def test_kafka_pcap_rows_are_kproto_decode_json(spark, tmp_path):
    """A tcpdump capture of confluent-kafka producing (lz4) and consuming
    through ``kproto serve``: one row per exchange, the fields and bodies
    ``kproto decode --json`` prints for the same file."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from tests.capture.capture_session import tcpdump
    pcap = tmp_path / "traffic.pcap"
    with components.kproto_broker(tmp_path) as bootstrap:
        port = int(bootstrap.rsplit(":", 1)[1])
        with tcpdump(pcap, "lo", f"tcp port {port}"):
            p = Producer({"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 5})
            for i in range(20):
                p.produce("captured", key=b"k%d" % i, value=b"v" * i, headers=[("h", b"%d" % i)])
            p.flush(30)
            del p
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pcap", "auto.offset.reset": "earliest"})
            c.assign([TopicPartition("captured", 0, 0)])
            got = [m for m in (c.poll(0.5) for _ in range(40)) if m is not None and not m.error()]
            c.close()
            assert len(got) == 20
    cli = subprocess.run([KPROTO, "decode", "--json", "-p", str(port), str(pcap)], capture_output=True, text=True,
                         timeout=120)
    assert cli.returncode == 0, cli.stderr
    want = [json.loads(line) for line in cli.stdout.splitlines()]
    df = spark.read.format("kafka-pcap").option("ports", str(port)).load(str(pcap))
    rows = df.orderBy("ts", "connection", "correlation_id").collect()
    assert len(rows) == len(want) > 5
    key = lambda r: (r["connection"], r["correlation_id"] if r["correlation_id"] is not None else -1, r["api_name"] or "")
    by_key = {key(w): w for w in want}
    for r in rows:
        w = by_key[key(r.asDict())]
        assert (r.api_key, r.api_name, r.api_version, r.client_id, r.latency_ms, list(r.warnings)) == \
            (w["api_key"], w["api_name"], w["api_version"], w["client_id"], w["latency_ms"], w["warnings"])
        assert (json.loads(r.request) if r.request else None) == w["request"]
        assert (json.loads(r.response) if r.response else None) == w["response"]
    produce = df.where("api_name = 'Produce'").count()
    assert produce >= 1 and df.where("api_name = 'Fetch'").count() >= 1
    assert {r.capture for r in rows} == {str(pcap)}
    import pyarrow.parquet as pq
    from click.testing import CliRunner
    from kproto.tools.main import cli as kproto_cli
    res = CliRunner().invoke(kproto_cli, ["export", str(pcap), "--out", str(tmp_path / "ex"), "--where",
                                          "api_name = 'Produce'", "--select", "correlation_id, request"])
    assert res.exit_code == 0, res.output
    table = pq.read_table(tmp_path / "ex")
    assert table.num_rows == produce == sum(w["api_name"] == "Produce" for w in want)


# --- __consumer_offsets -------------------------------------------------------------------

def test_consumer_offsets_match_groups_describe(spark, tmp_path):
    """Commits made by confluent-kafka through ``kproto serve``; with the
    broker stopped, ``kproto export --consumer-offsets`` rebuilds the table
    ``kproto groups --describe`` showed while it ran."""
    from click.testing import CliRunner
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kproto.tools.main import cli
    data_dir = tmp_path / "broker"
    with components.kproto_broker(tmp_path, "num.partitions=3", "offsets.topic.num.partitions=3",
                                  "group.initial.rebalance.delay.ms=0", data_dir=data_dir) as bootstrap:
        p = Producer({"bootstrap.servers": bootstrap})
        for i in range(30):
            p.produce("orders", key=str(i).encode(), value=b"v", partition=i % 3)
        p.flush(30)
        del p                                  # no reconnect attempts once the broker stops
        for group, commits in (("billing", {0: 4, 1: 7, 2: 10}), ("audit", {1: 3}), ("gone", {0: 2})):
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
            c.commit(offsets=[TopicPartition("orders", part, off) for part, off in commits.items()],
                     asynchronous=False)
            c.close()
        subprocess.run([KPROTO, "groups", "--bootstrap-server", bootstrap, "--delete", "--group", "gone"],
                       capture_output=True, timeout=60, check=True)
        live = subprocess.run([KPROTO, "groups", "--bootstrap-server", bootstrap, "--describe", "--all-groups",
                               "--output", "json"], capture_output=True, text=True, timeout=60, check=True)
    described = json.loads(live.stdout)
    keys = ("group", "topic", "partition", "current_offset", "log_end_offset", "lag")
    want = sorted(tuple(r[k] for k in keys) for r in described)
    assert [w[:4] for w in want] == [("audit", "orders", 1, 3), ("billing", "orders", 0, 4),
                                     ("billing", "orders", 1, 7), ("billing", "orders", 2, 10)]
    res = CliRunner().invoke(cli, ["export", "--consumer-offsets", str(data_dir), "--out", str(tmp_path / "co"),
                                   "--format", "json"])
    assert res.exit_code == 0, res.output
    got = [json.loads(line) for f in sorted((tmp_path / "co").glob("*.json")) for line in f.read_text().splitlines()]
    assert sorted(tuple(r.get(k) for k in keys) for r in got) == want
    text = CliRunner().invoke(cli, ["export", "--consumer-offsets", str(data_dir)])
    assert text.exit_code == 0, text.output
    assert "\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG" in text.output
    assert "billing         orders          2          10              10              0  " in text.output


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


WORKER_PYTHON_JOB = """
import json, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
         .getOrCreate())
import kproto.spark                      # after the session started: register must still set its workers
kproto.spark.register(spark)
df = spark.read.format("kafka-log").load(sys.argv[1]).where("topic = 'codecs' AND partition = 0")
print(json.dumps(sorted([r.offset, r.key and r.key.hex(), r.value and r.value.hex()]
                        for r in df.select("offset", "key", "value").collect())))
spark.stop()
"""


def test_workers_run_the_drivers_python_without_an_activated_venv(data, tmp_path):
    """`.venv/bin/python job.py`, PYSPARK_PYTHON unset and the venv not on PATH:
    PySpark would start `python3` from PATH for the data source's workers (no
    kproto, no pyarrow there); kproto.spark has them run the driver's interpreter."""
    root, written = data
    job = tmp_path / "job.py"
    job.write_text(WORKER_PYTHON_JOB)
    venv_bin = str(components.VENV_BIN)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    proc = subprocess.run([str(components.VENV_BIN / "python"), str(job), str(root)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = [[o, k and k.hex(), v and v.hex()] for o, k, v in expected(written, "codecs", 0)]
    assert json.loads(proc.stdout.splitlines()[-1]) == want and len(want) > 100
