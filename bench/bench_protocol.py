"""Produce/Fetch frame decoding: kproto trees side by side, and kafka-python.

Decodes the captured third-party frames that carry records (librdkafka's
Produce v10 request, tansu's Fetch v16 response, kafka-python's Produce v9,
aiokafka's Produce v7, tansu's Fetch v11/v12) with ``kproto.schemas.protocol``,
and the same frames with kafka-python 3.0.12's classes (the strongest Python
peer for request/response bodies; records stay bytes in both).

``--tree DIR`` (repeatable) runs the measurement with PYTHONPATH=DIR in a
fresh interpreter, alternating the trees run after run, so two checkouts
(e.g. main and a branch) are compared on the same inputs::

    python bench/bench_protocol.py --tree /work/main --tree . --runs 5

Prints frames/s per tree: median and min-max over the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "kproto" / "conformance" / "corpus" / "protocol"
STEMS = ["produce_request_v10_librdkafka-2.16.0_000", "produce_request_v9_kafka-python-3.0.12_000",
         "produce_request_v7_aiokafka-0.14.0_000", "fetch_response_v16_tansu-0.6.0_000",
         "fetch_response_v12_tansu-0.6.0_000", "fetch_response_v11_tansu-0.6.0_000"]


def _frames() -> list[tuple[dict, bytes]]:
    return [(json.loads((FIXTURES / f"{s}.json").read_text()), (FIXTURES / f"{s}.bin").read_bytes())
            for s in STEMS]


def measure_kproto(seconds: float) -> float:
    from kproto import protocol as P
    frames = _frames()
    calls = []
    for side, frame in frames:
        if side["direction"] == "request":
            calls.append(lambda f=frame: P.decode_request(f))
        else:
            calls.append(lambda f=frame, k=side["api_key"], v=side["api_version"]: P.decode_response(k, v, f))
    return _rate(calls, seconds)


def measure_kafka_python(seconds: float) -> float:
    import io

    import kafka.protocol.consumer  # noqa: F401  (registers Fetch)
    import kafka.protocol.producer  # noqa: F401  (registers Produce)
    from kafka.protocol.api_message import ApiMessage
    classes = {}
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            classes[(cls.API_KEY, cls.type)] = cls
    calls = []
    for side, frame in _frames():
        cls = classes[(side["api_key"], side["direction"])]
        header = 8 + 2 + int.from_bytes(frame[8:10], "big", signed=True) if side["direction"] == "request" else 4
        if side["direction"] == "request" and side["api_version"] >= 9:
            header += 1     # request header v2: tag buffer
        if side["direction"] == "response" and side["api_version"] >= 12:
            header += 1
        body = frame[header:]
        calls.append(lambda b=body, c=cls, v=side["api_version"]: c.decode(io.BytesIO(b), version=v))
    return _rate(calls, seconds)


def _rate(calls, seconds: float) -> float:
    n, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for call in calls:
            call()
        n += len(calls)
    return n / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", help="a kproto checkout to measure (repeatable)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true", help="runs of 0.2 s: check the script works")
    ap.add_argument("--one", choices=["kproto", "kafka-python"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.seconds = 0.2
    if args.one:
        fn = measure_kproto if args.one == "kproto" else measure_kafka_python
        print(fn(args.seconds))
        return 0
    sides = [(f"kproto {t}", "kproto", t) for t in (args.tree or ["."])] + \
        [("kafka-python 3.0.12", "kafka-python", args.tree[0] if args.tree else ".")]
    results: dict[str, list[float]] = {label: [] for label, _, _ in sides}
    for _ in range(args.runs):
        for label, which, tree in sides:    # alternate the sides run after run
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
            out = subprocess.run([sys.executable, __file__, "--one", which, "--seconds", str(args.seconds)],
                                 env=env, capture_output=True, text=True, check=True, timeout=120)
            results[label].append(float(out.stdout))
    print(f"Produce/Fetch frames decoded per second ({len(STEMS)} captured frames, "
          f"{args.runs} runs of {args.seconds:g} s, alternating)")
    for label, rates in results.items():
        print(f"  {label:<40} median {statistics.median(rates):>9,.0f}/s   "
              f"min {min(rates):>9,.0f}   max {max(rates):>9,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
