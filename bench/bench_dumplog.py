"""dump-log benchmark: `kproto dump-log --deep-iteration --print-data-log` vs a
kafka-python script doing the same iteration and printing, one run.

    .venv/bin/python bench/bench_dumplog.py [--size-mib 1024] [--keep]

Builds a segment of realistic batches (100 records of ~100 B JSON-ish values,
16 B keys, one header; a third of the batches lz4, a third zstd) under
bench/out/, then runs each tool in its own process with stdout to /dev/null,
measuring wall time (MB/s of segment) and peak RSS (wait4's ru_maxrss).
Before timing, both tools' outputs on a small prefix segment are checked to
print the same record lines.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from kproto.compression import CompressionType
from kproto.records import NewRecord, build_record_batch

OUT = Path(__file__).parent / "out" / "dumplog"
SEGMENT = "00000000000000000000.log"

# The peer: kafka-python's record reader, printing Kafka's lines.
PEER = r'''
import mmap, sys
from kafka.record.memory_records import MemoryRecords
path = sys.argv[1]
out = sys.stdout
with open(path, "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    out.write(f"Dumping {path}\nLog starting offset: 0\n")
    records = MemoryRecords(memoryview(mm))
    position = 0
    codecs = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    while records.has_next():
        b = records.next_batch()
        size = b.size_in_bytes
        last = b.base_offset + b.last_offset_delta
        seq = b.base_sequence
        lseq = -1 if seq < 0 else seq + b.last_offset_delta
        valid = b.validate_crc()
        out.write(f"baseOffset: {b.base_offset} lastOffset: {last} count: {b.records_count} "
                  f"baseSequence: {seq} lastSequence: {lseq} producerId: {b.producer_id} "
                  f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.leader_epoch} "
                  f"isTransactional: {str(b.is_transactional).lower()} isControl: {str(b.is_control_batch).lower()} "
                  f"deleteHorizonMs: OptionalLong.empty position: {position} CreateTime: {b.max_timestamp} "
                  f"size: {size} magic: 2 compresscodec: {codecs[b.compression_type]} crc: {b.crc} "
                  f"isvalid: {str(valid).lower()}\n")
        for r in b:
            k, v = r.key, r.value
            hk = ",".join(h[0] for h in r.headers)
            line = (f"| offset: {r.offset} CreateTime: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                    f"valueSize: {-1 if v is None else len(v)} sequence: {-1 if seq < 0 else seq + r.offset - b.base_offset} "
                    f"headerKeys: [{hk}]")
            if k is not None:
                line += " key: " + k.decode("utf-8", "replace")
            if v is not None:
                line += " payload: " + v.decode("utf-8", "replace")
            out.write(line + "\n")
        position += size
'''


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


def run(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed: {proc.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024


def record_lines(cmd: list[str]) -> list[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("| offset:")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--keep", action="store_true", help="keep the segment for another run")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    kproto_bin = str(Path(sys.executable).parent / "kproto")
    peer = OUT / "peer_kafka_python.py"
    peer.write_text(PEER)

    small = OUT / "small" / SEGMENT
    small.parent.mkdir(exist_ok=True)
    build_segment(small, 2 << 20)
    ours = record_lines([kproto_bin, "dump-log", "--deep-iteration", "--print-data-log", "--files", str(small)])
    theirs = record_lines([sys.executable, str(peer), str(small)])
    assert ours == theirs and ours, "kproto and the kafka-python script print different record lines"

    seg = OUT / SEGMENT
    size = args.size_mib << 20
    if not seg.exists() or seg.stat().st_size < size:
        t = time.perf_counter()
        build_segment(seg, size)
        print(f"built {seg} ({seg.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    total = seg.stat().st_size
    rows = []
    for name, cmd in [
        ("kproto dump-log", [kproto_bin, "dump-log", "--deep-iteration", "--print-data-log", "--files", str(seg)]),
        ("kafka-python script", [sys.executable, str(peer), str(seg)]),
    ]:
        elapsed, rss = run(cmd)
        rows.append((name, total / elapsed / 1e6, elapsed, rss / 2**20))
    print(f"segment: {total / 2**20:.0f} MiB, {total // 14_000:,} batches approx; stdout to /dev/null\n")
    print("| tool | MB/s | seconds | peak RSS MiB | vs kafka-python |")
    print("|---|---:|---:|---:|---:|")
    base = rows[1][1]
    for name, mbs, secs, rss in rows:
        print(f"| {name} | {mbs:.1f} | {secs:.1f} | {rss:.0f} | {mbs / base:.2f}x |")
    if not args.keep:
        seg.unlink()


if __name__ == "__main__":
    main()
