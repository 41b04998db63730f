"""What the Spark tests read: a data directory written by kproto's log, and
the Spark to read it with (local[2], or a standalone cluster on loopback).

Every expected value here comes from the records as they were built, never
from kproto.spark's output. ``KPROTO_TEST_SPARK_MASTER=standalone`` runs the
same tests against a Master and a Worker started from the pyspark wheel
(``bin/spark-class``), so the sources run in executors of their own.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from kproto.compression import CompressionType
from kproto.log import LogManager
from kproto.records import NewRecord, build_control_batch, build_message_set, build_record_batch
from kproto.schemas import records as S
from tests import components

T0 = 1_700_000_000_000
ABORT, COMMIT = 0, 1


@dataclass
class Written:
    """topic-partition -> [(offset, key, value, headers, timestamp)] as built."""
    records: dict[tuple[str, int], list[tuple]] = field(default_factory=dict)

    def add(self, topic: str, partition: int, base: int, recs: list[NewRecord]) -> None:
        rows = self.records.setdefault((topic, partition), [])
        rows += [(base + i, r.key, r.value, tuple(r.headers), r.timestamp) for i, r in enumerate(recs)]


def _records(n: int, tag: str, t0: int, *, headers=True) -> list[NewRecord]:
    out = []
    for i in range(n):
        hs = [("h", f"{tag}{i}".encode()), ("h", None), ("trace", b"\x00\xff")] if headers and i % 3 else []
        out.append(NewRecord(None if i % 7 == 0 else f"{tag}-k{i}".encode(),
                             None if i % 11 == 5 else f"{tag}-value-{i}-".encode() * (1 + i % 4), hs, t0 + i))
    return out


def _append(log, written: Written, topic: str, partition: int, base: int, recs, **kw) -> int:
    log.append(build_record_batch(recs, base_offset=base, **kw), assign_offsets=False)
    written.add(topic, partition, base, recs)
    return base + len(recs)


def build_data_dir(root: Path) -> Written:
    """Topics: ``codecs`` (p0 every codec, p1 many small segments), ``txn``
    (aborted, committed and open transactions), ``legacy`` (magic 0/1,
    plain and wrappers), ``lazy`` (an undecompressable batch with a valid
    CRC before good ones), ``corrupt`` (p0 a flipped byte, p1 a broken length)."""
    written = Written()
    m = LogManager(root)
    m.set_topic_config("codecs", {"segment.bytes": 4096, "index.interval.bytes": 256})
    log = m.get_or_create_log("codecs", 0)
    off = 0
    for i, codec in enumerate(CompressionType):
        off = _append(log, written, "codecs", 0, off, _records(40, codec.name_lower, T0 + 1000 * i), compression=codec)
    log = m.get_or_create_log("codecs", 1)
    off = 0
    for i in range(30):
        off = _append(log, written, "codecs", 1, off, _records(10, f"s{i}", T0 + 100 * i, headers=False),
                      compression=CompressionType.GZIP if i % 2 else CompressionType.NONE)

    log = m.get_or_create_log("txn", 0)
    _append(log, written, "txn", 0, 0, _records(3, "aborted", T0), is_transactional=True, producer_id=7,
            producer_epoch=0, base_sequence=0)
    log.append(build_control_batch(ABORT, producer_id=7, producer_epoch=0, base_offset=3, timestamp=T0 + 3),
               assign_offsets=False)
    _append(log, written, "txn", 0, 4, _records(2, "committed", T0 + 4), is_transactional=True, producer_id=8,
            producer_epoch=0, base_sequence=0, compression=CompressionType.LZ4)
    log.append(build_control_batch(COMMIT, producer_id=8, producer_epoch=0, base_offset=6, timestamp=T0 + 6),
               assign_offsets=False)
    _append(log, written, "txn", 0, 7, _records(2, "plain", T0 + 7))
    _append(log, written, "txn", 0, 9, _records(2, "open", T0 + 9), is_transactional=True, producer_id=9,
            producer_epoch=0, base_sequence=0)
    _append(log, written, "txn", 0, 11, _records(1, "after", T0 + 11))

    log = m.get_or_create_log("legacy", 0)
    specs = [(0, CompressionType.NONE, 1), (0, CompressionType.GZIP, 3), (1, CompressionType.NONE, 1),
             (1, CompressionType.SNAPPY, 4), (1, CompressionType.LZ4, 2)]
    off = 0
    for magic, codec, n in specs:
        recs = [NewRecord(f"m{magic}-{off + i}".encode(), f"legacy {codec.name_lower} {off + i}".encode(), (),
                          T0 + off + i) for i in range(n)]
        log.append(build_message_set(recs, magic=magic, base_offset=off, compression=codec), assign_offsets=False)
        written.records.setdefault(("legacy", 0), []).extend(
            (off + i, r.key, r.value, (), r.timestamp if magic else None) for i, r in enumerate(recs))
        off += n

    log = m.get_or_create_log("lazy", 0)
    log.append(undecompressable_batch(0, 10), assign_offsets=False)
    off = 10
    for i in range(3):
        off = _append(log, written, "lazy", 0, off, _records(5, f"lazy{i}", T0 + off), compression=CompressionType.ZSTD)

    for p in (0, 1):
        log = m.get_or_create_log("corrupt", p)
        off = 0
        for i in range(3):
            off = _append(log, written, "corrupt", p, off, _records(4, f"c{p}{i}", T0 + off))
    m.close()
    corrupt_segment(root / "corrupt-0" / f"{0:020d}.log", root / "corrupt-1" / f"{0:020d}.log")
    return written


def undecompressable_batch(base_offset: int, count: int) -> bytes:
    """A v2 batch that says lz4 and holds garbage, with a valid CRC: only
    decompressing it finds the fault."""
    good = bytearray(build_record_batch(_records(count, "x", T0), base_offset=base_offset,
                                        compression=CompressionType.LZ4))
    body = (bytes(range(256)) * 64)[: len(good) - S.RECORD_BATCH_OVERHEAD]
    good[S.RECORD_BATCH_OVERHEAD:] = body
    from crc32c import crc32c
    good[17:21] = crc32c(bytes(good[21:])).to_bytes(4, "big")
    return bytes(good)


def batch_positions(path: Path) -> list[int]:
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 8:pos + 12], "big") + 12
    return out


def corrupt_segment(flip: Path, broken: Path) -> None:
    """``flip``: one value byte of the second batch changed (CRC mismatch,
    still decodable). ``broken``: the second batch's length made huge, so the
    walk must resynchronise to read the third."""
    second = batch_positions(flip)[1]
    data = bytearray(flip.read_bytes())
    data[second + 70] ^= 0x20          # inside the first record's value
    flip.write_bytes(data)
    second = batch_positions(broken)[1]
    data = bytearray(broken.read_bytes())
    data[second + 8:second + 12] = (0x7FFF0000).to_bytes(4, "big")
    broken.write_bytes(data)


# --- Spark ------------------------------------------------------------------------------

def spark_home() -> Path:
    try:
        import pyspark
    except ImportError:
        pytest.fail("pyspark is missing: pip install 'kproto[spark]' (make test does)", pytrace=False)
    return Path(pyspark.__file__).parent


@contextlib.contextmanager
def _spark_class(args: list[str], port: int, log: Path) -> Iterator[None]:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    cmd = ["bash", str(spark_home() / "bin" / "spark-class"), *args]
    with components.running(cmd, port, env=env, timeout=90, log=log):
        yield


@contextlib.contextmanager
def standalone_cluster(tmp: Path, cores: int = 2) -> Iterator[str]:
    """A Spark Master and one Worker on loopback, stopped (process groups) on exit."""
    components.require_executable("java", "apt-get install default-jre-headless (make test does)")
    port, web, wport, wweb = (components.free_port() for _ in range(4))
    master = f"spark://127.0.0.1:{port}"
    with _spark_class(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                       "--webui-port", str(web)], port, tmp / "master.log"):
        with _spark_class(["org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1",
                           "--port", str(wport), "--cores", str(cores), "--memory", "2g",
                           "--webui-port", str(wweb), "--work-dir", str(tmp / "work")], wport, tmp / "worker.log"):
            yield master


@contextlib.contextmanager
def spark_for_tests(tmp: Path) -> Iterator[object]:
    """One session for every Spark test: local[2], or a standalone cluster
    when KPROTO_TEST_SPARK_MASTER=standalone (or spark://...)."""
    spark_home()
    components.require_executable("java", "apt-get install default-jre-headless (make test does)")
    from kproto.spark.session import spark_session
    want = os.environ.get("KPROTO_TEST_SPARK_MASTER", "local[2]")
    with contextlib.ExitStack() as stack:
        master = stack.enter_context(standalone_cluster(tmp)) if want == "standalone" else want
        conf = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"}
        if master.startswith("spark://"):
            conf.update({"spark.executor.memory": "1g", "spark.cores.max": "2"})
        spark = spark_session(master, app="kproto-tests", conf=conf)
        try:
            _wait_for_executors(spark, master)
            yield spark
        finally:
            spark.stop()


def _wait_for_executors(spark, master: str, timeout: float = 60) -> None:
    if not master.startswith("spark://"):
        return
    deadline = time.monotonic() + timeout
    tracker = spark.sparkContext.statusTracker()
    while time.monotonic() < deadline:
        if len(tracker.getExecutorInfos()) > 1:       # the driver is listed too
            return
        time.sleep(0.2)
    raise TimeoutError(f"no executor registered with {master} in {timeout}s")
