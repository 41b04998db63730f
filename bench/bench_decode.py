"""decode benchmark: `kproto decode --json` vs `tshark -Y kafka -T json -J kafka` on the same capture.

    .venv/bin/python bench/bench_decode.py [--records 500000] [--runs 5] [--keep] [--quick]

tshark prints the Kafka layer only (``-Y kafka`` keeps the packets with a
Kafka PDU, ``-J kafka`` leaves out the frame, Ethernet, IP and TCP layers):
what kproto writes, so both tools do the same work.

Builds (once, cached under bench/out/decode/) a capture of produce/fetch
traffic: tcpdump on loopback while kafka-python pinned to the Kafka 2.5
protocol (``api_version=(2, 5, 0)``: every request and response is in
tshark's table, so tshark decodes all of it and the comparison is fair)
produces RECORDS records of ~100 B JSON values (16 B keys, one header) in
1 KiB batches, uncompressed, to ``kproto serve``, then a consumer fetches them all
(the default, 500,000, makes a capture of over 200 MB: issue 29's size).

Then byte-compiles kproto (as an install does) and runs each tool in its
own process under GNU time, stdout to /dev/null for both,
alternating kproto, kproto without its C extension (``KPROTO_NO_EXTENSIONS=1``,
the pure-Python path) and tshark, RUNS times each: wall and CPU time (median,
min-max; CPU = user + sys, the fairer number on a shared machine), records/s
(records in Produce requests + Fetch responses), the ratios, and peak RSS. Peak RSS is also measured on prefixes of the capture
(25 %, 50 %, 100 %) to show it does not grow with the file. The table goes
to bench/results/bench_decode.md (bench/common.py).

Before timing, both tools' outputs are checked: the number of Produce
requests and Fetch responses, and their record counts, agree.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kproto                                              # noqa: E402
from kproto.capture import exchanges                       # noqa: E402
from kproto.capture.body import record_count               # noqa: E402
from kproto.capture.pcap import PacketReader               # noqa: E402
from tests.capture.capture_session import pcap_bytes, tcpdump      # noqa: E402
from tests.components import VENV_BIN, kproto_broker       # noqa: E402

from bench import common                                   # noqa: E402

OUT = Path(__file__).parent / "out" / "decode"
RECORDS = 500_000
GNU_TIME = "/usr/bin/time"


def make_capture(records: int, path: Path) -> int:
    """Record the traffic; returns the broker port."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    with tempfile.TemporaryDirectory() as tmp, kproto_broker(Path(tmp)) as bs:
        port = int(bs.rsplit(":", 1)[1])
        with tcpdump(path, "lo", f"tcp port {port}"):
            # small batches, as a producer under light load sends them: many PDUs
            p = KafkaProducer(bootstrap_servers=bs, api_version=(2, 5, 0), linger_ms=2, batch_size=1024)
            failed = []
            for i in range(records):
                value = b'{"n":%08d,"user":"u%05d","event":"click","payload":"' % (i, i % 977) + b"x" * 40 + b'"}'
                p.send("bench", key=b"key-%012d" % i, value=value, headers=[("h", b"v")]).add_errback(failed.append)
                if i % 50_000 == 49_999:
                    # a bounded backlog: on a loaded machine batches queued behind
                    # 32 MB of others outlive kafka-python's delivery timeout and
                    # are dropped (a first 500,000-record run lost 41,927 so)
                    p.flush(300)
            p.flush(300)
            p.close()
            if failed:
                raise SystemExit(f"{len(failed)} of {records} records not acknowledged: {failed[0]!r}")
            # read until every record came back: the timeout only stops a consumer
            # that gets nothing at all for a minute (a loaded machine pauses for seconds)
            c = KafkaConsumer(bootstrap_servers=bs, api_version=(2, 5, 0), consumer_timeout_ms=60000,
                              auto_offset_reset="earliest")
            c.assign([TopicPartition("bench", 0)])
            got = 0
            for _ in c:
                got += 1
                if got == records:
                    break
            c.close()
            if got != records:
                raise SystemExit(f"consumer read {got} of {records} records")
    return port


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s = user + sys, peak RSS MiB) of one process, stdout to /dev/null.
    Run under GNU time: a forked child's ru_maxrss also counts the parent's
    pages it shared before exec, which would charge this script's memory to
    the tool measured."""
    with open(os.devnull, "wb") as null:
        proc = subprocess.run([GNU_TIME, "-f", "%e %U %S %M", *cmd], stdout=null, stderr=subprocess.PIPE,
                              env=None if env is None else {**os.environ, **env})
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    wall, user, system, rss_kb = proc.stderr.decode().strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss_kb) // 1024


def kproto_cmd(path: Path, port: int) -> list[str]:
    return [str(VENV_BIN / "kproto"), "decode", "--json", "-p", str(port), str(path)]


def tshark_cmd(path: Path, port: int) -> list[str]:
    return ["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-Y", "kafka", "-T", "json", "-J", "kafka"]


def check_agreement(path: Path, port: int) -> tuple[int, int]:
    """Produce/Fetch PDU and record counts agree between the two tools; returns
    (records in Produce requests, records in Fetch responses)."""
    ours = {"Produce": [0, 0], "Fetch": [0, 0]}
    for ex in exchanges(path, ports=[port]):
        if ex.api_name == "Produce" and ex.request is not None:
            ours["Produce"][0] += 1
            ours["Produce"][1] += record_count(ex.request)
        if ex.api_name == "Fetch" and ex.response is not None:
            ours["Fetch"][0] += 1
            ours["Fetch"][1] += record_count(ex.response)
    fields = subprocess.run(["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-Y", "kafka",
                             "-T", "fields", "-E", "occurrence=a", "-e", "kafka.request_key",
                             "-e", "kafka.response_key", "-e", "kafka.batch_size"],
                            capture_output=True, check=True, text=True).stdout
    theirs = {"Produce": [0, 0], "Fetch": [0, 0]}
    for line in fields.splitlines():
        req, resp, sizes = (line.split("\t") + ["", "", ""])[:3]
        n = sum(int(s) for s in sizes.split(",") if s)
        if req:
            keys = req.split(",")
            theirs["Produce"][0] += keys.count("0")
            theirs["Produce"][1] += n if "0" in keys else 0
        elif resp:
            keys = resp.split(",")
            theirs["Fetch"][0] += keys.count("1")
            theirs["Fetch"][1] += n if "1" in keys else 0
    if ours != theirs:
        raise SystemExit(f"the tools disagree: kproto {ours}, tshark {theirs}")
    return ours["Produce"][1], ours["Fetch"][1]


def prefix(path: Path, fraction: float, out: Path) -> Path:
    r = PacketReader()
    r.feed(path.read_bytes())
    pkts = []
    while hasattr(p := r.next_packet(), "data"):
        pkts.append((p.ts_ns, p.data))
    out.write_bytes(pcap_bytes(pkts[:int(len(pkts) * fraction)]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=RECORDS)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the capture for the next run")
    ap.add_argument("--quick", action="store_true", help="5,000 records, 2 runs: check the script works")
    args = ap.parse_args()
    if args.quick:
        args.records, args.runs = 5000, 2
    else:
        common.check_runs(args.runs)
    if not shutil.which("tshark") or not shutil.which("tcpdump") or not os.path.exists(GNU_TIME):
        raise SystemExit("needs tshark, tcpdump and GNU time: make deps installs them")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"produce-fetch-{args.records}.pcap"
    meta = path.with_suffix(".port")
    if not path.exists() or not meta.exists():
        meta.write_text(str(make_capture(args.records, path)))
    port = int(meta.read_text())
    report = common.Report("bench_decode", "kproto decode --json vs tshark -Y kafka -T json -J kafka",
                           quick=args.quick or args.records < RECORDS)
    produced, fetched = check_agreement(path, port)
    records = produced + fetched
    report.add(f"Capture: {path.stat().st_size / 1e6:.1f} MB, kafka-python at the Kafka 2.5 protocol "
               f"against kproto serve; records decoded: {produced:,} in Produce requests + {fetched:,} in "
               f"Fetch responses = {records:,} (a Fetch answers with whole batches, and a consumer may "
               f"fetch a batch again). Both tools agree on the Produce/Fetch PDU and record counts.")

    # as installed (pip and Debian byte-compile): with PYTHONDONTWRITEBYTECODE set
    # and no __pycache__, every run would also compile kproto's sources (~0.07 s)
    compileall.compile_dir(str(Path(kproto.__file__).parent), quiet=1)
    started = time.monotonic()
    runs = common.alternate({"kproto": lambda: timed(kproto_cmd(path, port)),
                             "pure": lambda: timed(kproto_cmd(path, port), {"KPROTO_NO_EXTENSIONS": "1"}),
                             "tshark": lambda: timed(tshark_cmd(path, port))}, args.runs)
    took = time.monotonic() - started
    rows = []
    for name, label in (("kproto", "`kproto decode --json`"),
                        ("pure", "`kproto decode --json`, pure Python (`KPROTO_NO_EXTENSIONS=1`)"),
                        ("tshark", "`tshark -Y kafka -T json -J kafka`")):
        walls, cpus = [r[0] for r in runs[name]], [r[1] for r in runs[name]]
        rows.append([label, common.cell(walls) + " s", common.cell(cpus) + " s",
                     f"{records / statistics.median(walls):,.0f}", f"{records / statistics.median(cpus):,.0f}",
                     f"{max(r[2] for r in runs[name])} MiB"])
    report.add(common.table(["tool", "wall, median (min-max)", "CPU user+sys, median (min-max)",
                             "records/s (wall)", "records/s (CPU)", "peak RSS"], rows))
    wall = [[r[0] for r in runs[n]] for n in ("tshark", "kproto")]
    cpu = [[r[1] for r in runs[n]] for n in ("tshark", "kproto")]
    report.add(f"kproto vs tshark: {common.ratio(*wall)} by median wall time, {common.ratio(*cpu)} by median "
               f"CPU time ({args.runs} runs each, alternating; the timed runs took {took / 60:.1f} minutes). "
               f"Pure Python vs tshark: {common.ratio(wall[0], [r[0] for r in runs['pure']])} by median wall "
               f"time, {common.ratio(cpu[0], [r[1] for r in runs['pure']])} by median CPU time.")

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for fraction in (0.25, 0.5, 1.0):
            part = path if fraction == 1.0 else prefix(path, fraction, Path(tmp) / f"p{fraction}.pcap")
            _, _, peak = timed(kproto_cmd(part, port))
            lines.append(f"{fraction:.0%} ({part.stat().st_size / 1e6:.1f} MB): {peak} MiB")
    report.add("Peak RSS of `kproto decode --json` by capture prefix: " + ", ".join(lines) + ".")
    report.write()
    if not args.keep:
        path.unlink()
        meta.unlink()


if __name__ == "__main__":
    main()
