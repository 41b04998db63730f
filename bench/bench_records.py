"""Record codec bench: kproto against aiokafka's C record code (the anchor), with
kproto's pure-Python path and kafka-python beside them.

    python bench/bench_records.py [--batches 200] [--records 500] [--runs 5] [--quick] [--callgrind]

Same inputs for every side: --batches RecordBatches of --records records (16-byte
key, 100-byte JSON-ish value, one header), codecs none, lz4, zstd, built once from
a fixed seed. Decode = walk every batch, verify its CRC, touch offset, timestamp,
key, value and headers of every record. Encode = build the same batches from
Python values. What makes kproto fast is kproto._crecords, csrc/, the C record codec
that generators/c.py generates from the construct schema; "kproto pure
Python" is the same code with KPROTO_NO_EXTENSIONS=1 (run in a worker process,
since the switch is read at import). Compression: kproto writes lz4 at lz4's fast
level and zstd at level 3 (Java's default); aiokafka's own default for lz4 is
level 9 (HC), so lz4 encode is shown twice: with aiokafka at the same fast level,
and at its default, each with output sizes. Before timing, each decoder's records
are checked equal to the inputs and each encoder's output decoded by kafka-python.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import Report, alternate, cell, check_runs, ratio, table  # noqa: E402
from kproto.compression import CompressionType  # noqa: E402
from kproto.records import NewRecord, build_record_batch, iter_batches  # noqa: E402

CODECS = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4, "zstd": CompressionType.ZSTD}


def make_inputs(n_batches: int, n_records: int, seed: int = 42) -> list[list[NewRecord]]:
    rnd = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"offset", b"record", b"batch"]
    out = []
    for b in range(n_batches):
        batch = []
        for i in range(n_records):
            value = b'{"id":%d,"w":"' % (b * n_records + i)
            while len(value) < 98:
                value += rnd.choice(words) + b" "
            batch.append(NewRecord(b"%016x" % rnd.getrandbits(64), value[:98] + b'"}',
                                   [("trace-id", b"%016x" % rnd.getrandbits(64))], 1_700_000_000_000 + i))
        out.append(batch)
    return out


# --- decoders: each returns the number of records it touched ------------------------------

def decode_kproto(buf: bytes) -> int:
    n = 0
    for b in iter_batches(buf):          # verify_crc=True by default
        for r in b.records():
            r.offset; r.timestamp; r.key; r.value; r.headers
            n += 1
    return n


def _decode_memory_records(mr_cls, buf: bytes) -> int:
    n = 0
    mr = mr_cls(buf)
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc()
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


# --- encoders -------------------------------------------------------------------------------

def encode_kproto(inputs, codec) -> bytes:
    return b"".join(build_record_batch(batch, base_offset=i * len(batch), compression=codec)
                    for i, batch in enumerate(inputs))


def _encode_builder(cls, inputs, codec) -> bytes:
    out = []
    for i, batch in enumerate(inputs):
        bb = cls(magic=2, compression_type=int(codec), is_transactional=False, producer_id=-1,
                 producer_epoch=-1, base_sequence=-1, batch_size=2**30)
        for j, r in enumerate(batch):
            bb.append(j, timestamp=r.timestamp, key=r.key, value=r.value, headers=list(r.headers))
        buf = bytearray(bb.build())
        buf[0:8] = (i * len(batch)).to_bytes(8, "big")
        out.append(bytes(buf))
    return b"".join(out)


def encode_kafka_python(inputs, codec) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    return _encode_builder(DefaultRecordBatchBuilder, inputs, codec)


def encode_aiokafka(inputs, codec, lz4_level: int | None = None) -> bytes:
    """aiokafka's C builder; ``lz4_level`` replaces its lz4 level (default 9)."""
    import aiokafka.codec
    import aiokafka.record._crecords.default_records as crecords
    from aiokafka.record.default_records import DefaultRecordBatchBuilder
    saved = crecords.lz4_encode, crecords.zstd_encode
    # Same settings as kproto: zstd level 3 (aiokafka passes None: cramjam's default).
    crecords.zstd_encode = functools.partial(aiokafka.codec.zstd_encode, level=3)
    if lz4_level is not None:
        crecords.lz4_encode = functools.partial(aiokafka.codec.lz4_encode, level=lz4_level)
    try:
        return _encode_builder(DefaultRecordBatchBuilder, inputs, codec)
    finally:
        crecords.lz4_encode, crecords.zstd_encode = saved


# --- the pure-Python worker ---------------------------------------------------------------

def worker(args) -> None:
    """KPROTO_NO_EXTENSIONS=1 child: answers "decode <codec>" / "encode <codec>"
    with the seconds one run took."""
    import kproto.records as R
    assert R._decode_records_c is None and R._encode_records_c is None, "extension still loaded"
    inputs = make_inputs(args.batches, args.records)
    wires = {c: encode_kafka_python(inputs, codec) for c, codec in CODECS.items()}
    for line in sys.stdin:
        op, cname = line.split()
        t = time.perf_counter()
        if op == "decode":
            n = decode_kproto(wires[cname])
        else:
            n = len(encode_kproto(inputs, CODECS[cname]))
        print(json.dumps([time.perf_counter() - t, n]), flush=True)


class PurePython:
    def __init__(self, args) -> None:
        env = dict(os.environ, KPROTO_NO_EXTENSIONS="1", PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--batches", str(args.batches), "--records", str(args.records)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)

    def run(self, op: str, cname: str) -> tuple[float, int]:
        self.proc.stdin.write(f"{op} {cname}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("pure-Python worker died")
        seconds, n = json.loads(line)
        return seconds, n

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


# --- instruction counts ---------------------------------------------------------------------

CALLGRIND_BATCHES = 40      # x --records: small enough for valgrind, the same records


def count_worker(args) -> None:
    """Under callgrind: load the inputs, then run ``op side codec`` --cg-runs times."""
    op, side, cname = args.count
    inputs = make_inputs(CALLGRIND_BATCHES, args.records)
    wire = encode_kproto(inputs, CODECS[cname])     # cheaper under valgrind than kafka-python's
    fn = {("decode", "kproto"): lambda: decode_kproto(wire), ("decode", "aiokafka"): lambda: decode_aiokafka(wire),
          ("encode", "kproto"): lambda: encode_kproto(inputs, CODECS[cname]),
          ("encode", "aiokafka"): lambda: encode_aiokafka(inputs, CODECS[cname], 0 if cname == "lz4" else None)}[op, side]
    fn()        # first use: imports and caches, in the baseline too
    for _ in range(args.cg_runs):
        fn()


def instructions(op: str, side: str, cname: str, records: int, runs: int = 5) -> float:
    """Instructions (callgrind's Ir) of one pass over CALLGRIND_BATCHES x ``records``
    records: (a process doing ``runs`` passes - one doing none) / ``runs``, so start-up
    and making the inputs cancel out. PYTHONHASHSEED=0: the same run twice is the same count."""
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                               __file__, "--count", op, side, cname, "--cg-runs", str(n), "--records", str(records)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for n in (runs, 0)]        # the two at once: each takes a core for half a minute
    ir = []
    for p in procs:
        err = p.communicate()[1]
        if p.returncode:
            raise SystemExit(f"callgrind run failed: {err[-500:]}")
        ir.append(int(err.rsplit("refs:", 1)[1].split()[0].replace(",", "")))
    return (ir[0] - ir[1]) / runs


def callgrind_table(records: int) -> str:
    rows = []
    for op in ("decode", "encode"):
        for cname in CODECS:
            k, a = instructions(op, "kproto", cname, records), instructions(op, "aiokafka", cname, records)
            rows.append([op, cname, f"{k / 1e6:.1f}M", f"{a / 1e6:.1f}M", f"{a / k:.2f}x"])
    return (f"## Instructions (callgrind, {CALLGRIND_BATCHES} x {records} of the same records, one pass)\n\n"
            "Repeatable where wall time on a shared machine is not: `valgrind --tool=callgrind`, "
            "PYTHONHASHSEED=0, 5 passes minus a run that only loads the inputs, divided by 5 "
            "(lz4 encode: aiokafka at the same fast level).\n\n"
            + table(["op", "codec", "kproto", "aiokafka C", "aiokafka / kproto"], [r for r in rows], right=2))


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="50 batches x 200 records: check the script works")
    ap.add_argument("--callgrind", action="store_true",
                    help="add callgrind's instruction counts for each codec (needs valgrind; minutes)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--count", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--cg-runs", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.count:
        return count_worker(args)
    if args.quick:
        args.batches, args.records = 50, 200
    if args.worker:
        return worker(args)
    check_runs(args.runs)
    from aiokafka.record import _crecords  # noqa: F401  (fail loudly without aiokafka's C extension)
    import kproto.records as R
    assert R._decode_records_c is not None, "kproto's C extension is not built (python setup.py build_ext --inplace)"

    inputs = make_inputs(args.batches, args.records)
    total = args.batches * args.records
    want = [(r.key, r.value, tuple((k, v) for k, v in r.headers)) for batch in inputs for r in batch]
    pure = PurePython(args)
    report = Report("bench_records", "Record codec: kproto vs aiokafka's C reader/builder", args.quick)
    dec_rows, enc_rows = [], []
    rate = lambda secs: [total / s for s in secs]      # noqa: E731
    try:
        for cname, codec in CODECS.items():
            wire = encode_kafka_python(inputs, codec)
            got = [(r.key, r.value, tuple(r.headers)) for b in iter_batches(wire) for r in b.records()]
            assert got == want, "kproto misread kafka-python's batches"
            for fn in (decode_kafka_python, decode_aiokafka, decode_kproto):
                assert fn(wire) == total
            assert pure.run("decode", cname)[1] == total
            runs = alternate({
                "aiokafka": lambda: timed(lambda: decode_aiokafka(wire)),
                "kproto": lambda: timed(lambda: decode_kproto(wire)),
                "kproto-py": lambda: pure.run("decode", cname)[0],
                "kafka-python": lambda: timed(lambda: decode_kafka_python(wire)),
            }, args.runs)
            r = {k: rate(v) for k, v in runs.items()}
            dec_rows.append([cname, f"{len(wire) / 2**20:.1f}", cell(r["aiokafka"], "{:,.0f}"),
                             cell(r["kproto"], "{:,.0f}"), cell(r["kproto-py"], "{:,.0f}"),
                             cell(r["kafka-python"], "{:,.0f}"), ratio(r["kproto"], r["aiokafka"]),
                             ratio(r["kproto-py"], r["aiokafka"]), ratio(r["kproto-py"], r["kafka-python"])])

            settings = [("same", None)] if cname != "lz4" else [("same: lz4 fast (level 0) both", 0),
                                                                 ("aiokafka default lz4 level 9", None)]
            for label, lz4_level in settings:
                if cname == "none":
                    label = "-"
                elif cname == "zstd":
                    label = "zstd level 3 both"
                aio = functools.partial(encode_aiokafka, inputs, codec, lz4_level if cname == "lz4" else None)
                sizes = {"kproto": len(encode_kproto(inputs, codec)), "aiokafka": len(aio()),
                         "kafka-python": len(encode_kafka_python(inputs, codec))}
                for produced in (encode_kproto(inputs, codec), aio()):
                    assert decode_kafka_python(produced) == total
                runs = alternate({
                    "aiokafka": lambda: timed(aio),
                    "kproto": lambda: timed(lambda: encode_kproto(inputs, codec)),
                    "kproto-py": lambda: pure.run("encode", cname)[0],
                    "kafka-python": lambda: timed(lambda: encode_kafka_python(inputs, codec)),
                }, args.runs)
                r = {k: rate(v) for k, v in runs.items()}
                enc_rows.append([cname, label, f"{sizes['aiokafka']:,}", f"{sizes['kproto']:,}",
                                 f"{sizes['kafka-python']:,}",
                                 cell(r["aiokafka"], "{:,.0f}"), cell(r["kproto"], "{:,.0f}"),
                                 cell(r["kproto-py"], "{:,.0f}"), cell(r["kafka-python"], "{:,.0f}"),
                                 ratio(r["kproto"], r["aiokafka"]), ratio(r["kproto-py"], r["aiokafka"])])
    finally:
        pure.close()

    report.add(f"{args.batches} batches x {args.records} records (16 B key, 100 B value, one header); "
               f"records/s, median (min-max) of {args.runs} runs alternating the sides. "
               "**kproto** = kproto with its C record codec (kproto._crecords, csrc/, generated from the "
               "construct schema by generators/c.py); **kproto pure Python** = KPROTO_NO_EXTENSIONS=1 "
               "(CRC-32C still from the `crc32c` C package on every side that has it). "
               "**aiokafka C** = aiokafka 0.14's Cython `_crecords`, the anchor.")
    report.add("## Decode (CRC verified, every field touched)\n\n" + table(
        ["codec", "MiB", "aiokafka C (anchor)", "kproto", "kproto pure Python", "kafka-python",
         "kproto / aiokafka", "kproto-py / aiokafka", "kproto-py / kafka-python"], dec_rows, right=1))
    report.add("## Encode (output bytes shown: compression levels differ where the setting says so)\n\n" + table(
        ["codec", "setting", "aiokafka bytes", "kproto bytes", "kafka-python bytes", "aiokafka C (anchor)",
         "kproto", "kproto pure Python", "kafka-python", "kproto / aiokafka", "kproto-py / aiokafka"],
        enc_rows, right=2))
    if args.callgrind:
        report.add(callgrind_table(args.records))
    report.write()


if __name__ == "__main__":
    main()
