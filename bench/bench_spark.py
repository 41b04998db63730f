"""Spark benchmark: Kafka segments -> Parquet through kproto's ``kafka-log``
source, beside a JVM-only Spark job writing the same rows from ``spark.range``.

    .venv/bin/python bench/bench_spark.py [--records 4000000] [--runs 5] [--cores 2 1] [--keep]

Writes bench/results/bench_spark.md (the table, the command, the machine and its load);
a run with fewer records or core counts than the defaults says so in that file.

Data: one topic, 2 partitions, 4M records (21 B keys, 100 B JSON-ish values with
~50 random hex digits,
one header), lz4 batches of 500 records, written through kproto.log
(segment.bytes 256 MiB, so segments roll and get split at .index positions).

Each side writes Parquet (snappy) of the same 20 columns with the same types:
kproto decodes every record (key, value, headers, timestamps, batch
metadata); the JVM-only side computes them from ``spark.range(N)``
(Spark's own codegen, no Python, no decompression) — the ceiling for a Spark
job producing that output. Per core count: one session, one warm-up run of
each side, then ``--runs`` runs alternating the two sides; median and
min-max of wall time, rows/s, and the ratio of medians (JVM-only / kproto: the
share of the ceiling kproto reaches). Each core count runs
in its own process (a JVM's master cannot change).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import Report, cell, check_runs, ratio, table  # noqa: E402

OUT = Path(__file__).parent / "out" / "spark"
TOPIC = "bench"


def build(root: Path, records: int) -> None:
    from kproto.compression import CompressionType
    from kproto.log import LogManager
    from kproto.records import NewRecord, build_record_batch
    stamp = root / "built.json"
    if stamp.exists() and json.loads(stamp.read_text()) == {"records": records}:
        return
    shutil.rmtree(root, ignore_errors=True)
    m = LogManager(root)
    m.set_topic_config(TOPIC, {"segment.bytes": 256 << 20})
    rnd = random.Random(7)
    per_batch, t0 = 500, 1_700_000_000_000
    for p in (0, 1):
        log = m.get_or_create_log(TOPIC, p)
        n = records // 2
        for base in range(0, n, per_batch):
            recs = []
            for i in range(base, min(n, base + per_batch)):
                v = f'{{"id":{i},"user":"u{rnd.randrange(10**6):06d}","amount":0.{rnd.randrange(10**6):06d},"x":"'
                v += "%064x" % rnd.getrandbits(256)
                recs.append(NewRecord(f"key-{p}-{i:010d}".encode(), (v[:98] + '"}').encode(),
                                      [("trace", b"%016x" % rnd.getrandbits(64))], t0 + i))
            log.append(build_record_batch(recs, base_offset=base, compression=CompressionType.LZ4),
                       assign_offsets=False)
    m.close()
    stamp.write_text(json.dumps({"records": records}))


def jvm_frame(spark, n: int):
    """The same 20 columns and types, computed by the JVM from spark.range."""
    from pyspark.sql import functions as F
    half = n // 2
    i = F.col("id") % half
    p = (F.col("id") >= half).cast("int")
    value = F.rpad(F.concat(F.lit('{"id":'), i.cast("string"), F.lit(',"user":"u'),
                            F.lpad((F.col("id") * 7919 % 1000000).cast("string"), 6, "0"),
                            F.lit('","amount":0.'), F.lpad((F.col("id") * 104729 % 1000000).cast("string"), 6, "0"),
                            F.lit(',"x":"'), *[F.lpad(F.hex(F.xxhash64("id", F.lit(s))), 16, "0") for s in range(4)]),
                   98, "0")
    return spark.range(n, numPartitions=8).select(
        F.concat(F.lit("key-"), p.cast("string"), F.lit("-"), F.lpad(i.cast("string"), 10, "0")).cast("binary").alias("key"),
        F.concat(value, F.lit('"}')).cast("binary").alias("value"),
        F.lit(TOPIC).alias("topic"), p.alias("partition"), i.alias("offset"),
        F.timestamp_millis(F.lit(1_700_000_000_000) + i).alias("timestamp"), F.lit(0).alias("timestampType"),
        F.array(F.struct(F.lit("trace").alias("key"),
                         F.hex(F.col("id") * 2654435761).cast("binary").alias("value"))).alias("headers"),
        (i - i % 500).alias("base_offset"), F.lit(2).alias("magic"), F.lit("lz4").alias("compression"),
        F.lit(-1).cast("bigint").alias("producer_id"), F.lit(-1).alias("producer_epoch"),
        F.lit(-1).alias("base_sequence"), F.lit(False).alias("is_transactional"), F.lit(False).alias("is_control"),
        F.lit(True).alias("crc_valid"), F.concat(F.lit("/data/bench-"), p.cast("string"), F.lit("/0.log")).alias("segment"),
        (i * 130).alias("position"), F.lit(None).cast("string").alias("error"))


def child(args) -> None:
    """One core count: warm-up, then alternating timed runs; prints JSON."""
    from kproto.spark.session import spark_session
    spark = spark_session(f"local[{args.child}]", app="bench_spark", driver_memory="4g",
                          conf={"spark.sql.shuffle.partitions": str(args.child)})
    data, n = OUT / "data", args.records
    kproto_df = spark.read.format("kafka-log").load(str(data))
    jvm_df = jvm_frame(spark, n)
    assert kproto_df.dtypes == jvm_df.dtypes, (kproto_df.dtypes, jvm_df.dtypes)

    def timed(df, name) -> float:
        out = OUT / f"parquet-{name}-{args.child}"
        t = time.perf_counter()
        df.write.mode("overwrite").parquet(str(out))
        return time.perf_counter() - t

    timed(kproto_df, "kproto"), timed(jvm_df, "jvm")          # warm-up: JIT, Python workers
    import pyarrow.parquet as pq
    for name in ("kproto", "jvm"):
        rows = pq.ParquetDataset(OUT / f"parquet-{name}-{args.child}").read(columns=["offset"]).num_rows
        assert rows == n, (name, rows)
    times = {"kproto": [], "jvm": []}
    for r in range(args.runs):
        order = ("kproto", "jvm") if r % 2 == 0 else ("jvm", "kproto")
        for name in order:
            times[name].append(timed(kproto_df if name == "kproto" else jvm_df, name))
    spark.stop()
    print(json.dumps(times))


def run_child(cores: int, args) -> subprocess.CompletedProcess:
    """One core count in its own process group (its JVM included), stopped
    on timeout or interrupt."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, __file__, "--child", str(cores), "--records", str(args.records), "--runs", str(args.runs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=3600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


DEFAULTS = {"records": 4_000_000, "cores": [2, 1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=DEFAULTS["records"])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cores", type=int, nargs="+", default=DEFAULTS["cores"])
    ap.add_argument("--keep", action="store_true", help="keep bench/out/spark")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    check_runs(args.runs)
    report = Report("bench_spark", "Spark: Kafka segments -> Parquet through kproto's kafka-log source, "
                    "beside a JVM-only Spark job writing the same rows")
    reduced = args.records < DEFAULTS["records"] or args.cores != DEFAULTS["cores"]
    OUT.mkdir(parents=True, exist_ok=True)
    t = start = time.perf_counter()
    build(OUT / "data", args.records)
    size = sum(f.stat().st_size for f in (OUT / "data").rglob("*.log"))
    report.add(f"{args.records:,} records (21 B keys, 100 B values, one header) in 2 partitions, lz4 batches of 500, "
               f"{size / 2**20:.0f} MiB of segments (built or reused in {time.perf_counter() - t:.0f} s). Each side "
               "writes the same 20 columns to Parquet (snappy): kproto decodes every record of the segments, the "
               "JVM-only side computes them from spark.range (no Python, no decompression: the ceiling). Per core "
               f"count one Spark session, one untimed warm-up of each side, then {args.runs} runs alternating the "
               "sides; wall time and rows/s as median (min-max); ratio = JVM-only median / kproto median.")
    rows = []
    try:
        for cores in args.cores:
            p = run_child(cores, args)
            if p.returncode:
                sys.exit(f"bench_spark: local[{cores}] failed:\n{p.stderr[-3000:]}")
            times = json.loads(p.stdout.strip().splitlines()[-1])
            for name, label in (("kproto", "kproto kafka-log"), ("jvm", "JVM-only spark.range")):
                rows.append([f"local[{cores}]", label, cell(times[name]),
                             cell([args.records / s for s in times[name]], "{:,.0f}"),
                             ratio(times["jvm"], times["kproto"]) if name == "kproto" else ""])
    finally:
        if not args.keep:
            shutil.rmtree(OUT, ignore_errors=True)
    report.add(table(["cores", "side", "wall s", "rows/s", "ratio"], rows, right=2))
    if reduced:
        minutes = (time.perf_counter() - start) / 60
        report.add(
            f"**Reduced settings** (the full run would take well over 10 minutes here): {args.records:,} records on "
            f"local{args.cores}, against the defaults' {DEFAULTS['records']:,} on local{DEFAULTS['cores']}. This "
            f"run took {minutes:.0f} min; the defaults decode {DEFAULTS['records'] / args.records:.0f}x the records "
            f"in each of {len(DEFAULTS['cores'])} sessions, one of them on a single core.")
    report.write()


if __name__ == "__main__":
    main()
