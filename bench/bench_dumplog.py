"""dump-log bench: `kproto dump-log --deep-iteration --print-data-log` against the
same Kafka lines printed by a script over aiokafka's C record reader (the anchor)
and by Apache Kafka 4.4's own DumpLogSegments, with kproto's pure-Python path and
the script over kafka-python beside them.

    python bench/bench_dumplog.py [--size-mib 256] [--runs 5] [--quick] [--keep]

Builds one segment under bench/out/ (batches of 100 records of ~100 B JSON-ish
values, 16 B keys, one header; a third each uncompressed, lz4, zstd), then runs
every tool as its own process with stdout to /dev/null, >= 5 runs alternating
the tools: wall time (MB/s of segment) and peak RSS (psutil, every 20 ms). Before
timing, every tool's record lines on a 2 MiB prefix segment must be identical.
The peer script reads the file into memory (aiokafka's C reader takes bytes
only) and batch fields the readers do not expose (size, record count, leader
epoch) from the header bytes with struct, the same for both readers.
kproto's speed is its C record codec (kproto._crecords, csrc/, generated from the
schema by generators/c.py); "kproto pure Python" is KPROTO_NO_EXTENSIONS=1.

Kafka's org.apache.kafka.tools.DumpLogSegments runs as a user runs it, a whole
JVM per run: (1) with tests/kafka_ref.py run_tool's command line (-Xmx512m
-XX:+UseSerialGC -XX:TieredStopAtLevel=1: C1 only), (2) with kafka-run-class.sh's
default JVM options (what kafka-dump-log.sh gives: -Xmx256M, G1, full JIT). Its
warm figure: run (1) with the segment given twice (--files seg,seg), one JVM;
the second file's time is that run's minus the one-file run of the same round.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import Report, alternate, cell, check_runs, kafka_version, ratio, table  # noqa: E402
from kproto.compression import CompressionType  # noqa: E402
from kproto.records import NewRecord, build_record_batch  # noqa: E402

OUT = Path(__file__).parent / "out" / "dumplog"
SEGMENT = "00000000000000000000.log"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
# bin/kafka-run-class.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS): a kafka-dump-log.sh run
RUN_CLASS_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                 "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                 "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

# The peer: a record reader (argv[1]: aiokafka or kafka), printing Kafka's lines
# (DumpLogSegments.scala's batch and record formats).
PEER = r'''
import importlib, struct, sys
MemoryRecords = importlib.import_module(sys.argv[1] + ".record.memory_records").MemoryRecords
path = sys.argv[2]
out = sys.stdout
codecs = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
head = struct.Struct(">qiiB")
count_at = struct.Struct(">i")
with open(path, "rb") as f:
    mm = f.read()      # aiokafka's C MemoryRecords takes bytes only; both readers get the same
    out.write(f"Dumping {path}\nLog starting offset: 0\n")
    records = MemoryRecords(mm)
    position = 0
    while records.has_next():
        b = records.next_batch()
        _, length, epoch, _ = head.unpack_from(mm, position)
        size = length + 12
        count, = count_at.unpack_from(mm, position + 57)
        last = b.base_offset + b.last_offset_delta
        seq = b.base_sequence
        lseq = -1 if seq < 0 else seq + b.last_offset_delta
        valid = b.validate_crc()
        out.write(f"baseOffset: {b.base_offset} lastOffset: {last} count: {count} "
                  f"baseSequence: {seq} lastSequence: {lseq} producerId: {b.producer_id} "
                  f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {epoch} "
                  f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control_batch).lower()} "
                  f"deleteHorizonMs: OptionalLong.empty position: {position} CreateTime: {b.max_timestamp} "
                  f"size: {size} magic: 2 compresscodec: {codecs[b.compression_type]} crc: {b.crc} "
                  f"isvalid: {str(valid).lower()}\n")
        base = b.base_offset
        for r in b:
            k, v = r.key, r.value
            hk = ",".join(h[0] for h in r.headers)
            line = (f"| offset: {r.offset} CreateTime: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                    f"valueSize: {-1 if v is None else len(v)} sequence: {-1 if seq < 0 else seq + r.offset - base} "
                    f"headerKeys: [{hk}]")
            if k is not None:
                line += " key: " + bytes(k).decode("utf-8", "replace")
            if v is not None:
                line += " payload: " + bytes(v).decode("utf-8", "replace")
            out.write(line + "\n")
        position += size
'''


TWICE = "Kafka DumpLogSegments, the segment twice in one JVM"


def build_segment(path: Path, size: int, seed: int = 7) -> int:
    rnd = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "kafka", "offset", "record", "segment", "broker"]
    codecs = [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD]
    written, offset, i = 0, 0, 0
    with open(path, "wb") as f:
        while written < size:
            recs = []
            for j in range(100):
                value = '{"id":%d,"text":"%s"}' % (offset + j, " ".join(rnd.choice(words) for _ in range(12)))
                recs.append(NewRecord(b"user-%011d" % rnd.randrange(10**9), value.encode()[:100],
                                      [("trace", b"%016x" % rnd.getrandbits(64))], 1_700_000_000_000 + offset + j))
            data = build_record_batch(recs, base_offset=offset, compression=codecs[i % 3])
            f.write(data)
            written += len(data)
            offset += 100
            i += 1
    return written


def run(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS, sampled every 20 ms with psutil (wait4's
    ru_maxrss would report this bench's own RSS, inherited at fork, as a floor)."""
    import psutil
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE, env=env)
        watch, peak = psutil.Process(proc.pid), 0
        while proc.poll() is None:
            try:
                peak = max(peak, watch.memory_info().rss)
            except psutil.Error:
                pass
            time.sleep(0.02)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.read().decode()[-2000:]}")
    return elapsed, peak


def record_lines(cmd: list[str], env: dict | None = None) -> list[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return [line for line in out.splitlines() if line.startswith("| offset:")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="an 8 MiB segment: check the script works")
    ap.add_argument("--keep", action="store_true", help="keep the segment for another run")
    args = ap.parse_args()
    check_runs(args.runs)
    if args.quick:
        args.size_mib = 8
    OUT.mkdir(parents=True, exist_ok=True)
    # Bytecode for kproto as an installed package has it (the peers' packages have theirs):
    # with PYTHONDONTWRITEBYTECODE set, each run would otherwise compile kproto's modules
    # again (~0.3 s of a 64 MiB run, measured with cProfile).
    import compileall
    compileall.compile_dir(ROOT / "kproto", quiet=1)
    kproto_bin = str(Path(sys.executable).parent / "kproto")
    peer = OUT / "peer_reader.py"
    peer.write_text(PEER)
    pure_env = dict(os.environ, KPROTO_NO_EXTENSIONS="1")

    from tests.kafka_ref import TOOL_JVM, reference
    ref = reference(OUT / "kafka-ref")
    kafka = f"Kafka {kafka_version()} DumpLogSegments"

    def tools(seg: Path, twice: bool = True) -> dict[str, tuple[list[str], dict | None]]:
        flags = ["--deep-iteration", "--print-data-log", "--files"]
        dump = [kproto_bin, "dump-log", *flags, str(seg)]
        java = ref.tool_command(DUMP_LOG_SEGMENTS, *flags, str(seg))
        shipped = [java[0], *RUN_CLASS_JVM, *java[1 + len(TOOL_JVM):]]
        out = {
            "aiokafka C script (anchor)": ([sys.executable, str(peer), "aiokafka", str(seg)], None),
            "kproto dump-log": (dump, None),
            "kproto dump-log, pure Python": (dump, pure_env),
            "kafka-python script": ([sys.executable, str(peer), "kafka", str(seg)], None),
            f"{kafka}, run_tool's JVM (C1 only)": (java, None),
            f"{kafka}, kafka-dump-log.sh's JVM options": (shipped, None),
        }
        if twice:
            out[TWICE] = (ref.tool_command(DUMP_LOG_SEGMENTS, *flags, f"{seg},{seg}"), None)
        return out

    small = OUT / "small" / SEGMENT
    small.parent.mkdir(exist_ok=True)
    build_segment(small, 2 << 20)
    lines = {name: record_lines(cmd, env) for name, (cmd, env) in tools(small, twice=False).items()}
    first = next(iter(lines.values()))
    assert first and all(v == first for v in lines.values()), "the tools print different record lines"

    seg = OUT / SEGMENT
    size = args.size_mib << 20
    if not seg.exists() or abs(seg.stat().st_size - size) > (1 << 20):
        t = time.perf_counter()
        build_segment(seg, size)
        print(f"built {seg} ({seg.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f}s",
              file=sys.stderr)
    total = seg.stat().st_size
    report = Report("bench_dumplog", "dump-log: kproto vs a script over aiokafka's C reader and Kafka's "
                    "DumpLogSegments", args.quick)
    runs = alternate({name: (lambda c=cmd, e=env: run(c, e)) for name, (cmd, env) in tools(seg).items()},
                     args.runs)
    anchor = [total / 1e6 / s for s, _ in runs["aiokafka C script (anchor)"]]
    # the second file of a two-file JVM run: that run minus the same round's one-file run
    runs[f"{kafka}, warm (second file in one JVM, C1 only)"] = [
        (two - one, rss) for (two, rss), (one, _) in zip(runs.pop(TWICE), runs[f"{kafka}, run_tool's JVM (C1 only)"])]
    rows = []
    for name, samples in runs.items():
        mbs = [total / 1e6 / s for s, _ in samples]
        rows.append([name, cell(mbs, "{:.1f}"), cell([s for s, _ in samples], "{:.2f}"),
                     cell([rss / 2**20 for _, rss in samples], "{:.0f}"), ratio(mbs, anchor)])
    report.add(f"Segment of {total / 2**20:.0f} MiB (batches of 100 records, a third each none/lz4/zstd), "
               f"`--deep-iteration --print-data-log`, stdout to /dev/null; each tool a fresh process, median "
               f"(min-max) of {args.runs} runs rotating the tools. All print identical record lines "
               "(checked on a 2 MiB segment first). Kafka's tool: a whole JVM per run (start-up, class loading "
               "and JIT included, as a user runs it); its warm row is the second file of a run given the segment "
               "twice, minus the one-file run (the peak RSS there is the two-file run's). kproto's speed comes from "
               "its C record codec (kproto._crecords, csrc/, generated from the schema by generators/c.py).")
    report.add(table(["tool", "MB/s", "seconds", "peak RSS MiB", "vs aiokafka C script"], rows))
    report.write()
    if not args.keep:
        seg.unlink()


if __name__ == "__main__":
    main()
