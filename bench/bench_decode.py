"""decode benchmark: `kproto decode --json` vs `tshark -T json` on the same capture.

    .venv/bin/python bench/bench_decode.py [--records 60000] [--runs 5] [--keep]

Builds (once, cached under bench/out/decode/) a capture of produce/fetch
traffic: tcpdump on loopback while kafka-python pinned to the Kafka 2.5
protocol (``api_version=(2, 5, 0)``: every request and response is in
tshark's table, so tshark decodes all of it and the comparison is fair)
produces RECORDS records of ~100 B JSON values (16 B keys, one header) in
1 KiB batches, uncompressed, to ``kproto serve``, then a consumer fetches them all.

Then runs each tool in its own process under GNU time, stdout to /dev/null,
alternating kproto and tshark, RUNS times each: wall and CPU time (median,
min-max; CPU = user + sys, the fairer number on a shared machine), records/s
(records in Produce requests + Fetch responses), the ratios, and peak RSS. Peak RSS is also measured on prefixes of the capture
(25 %, 50 %, 100 %) to show it does not grow with the file.

Before timing, both tools' outputs are checked: the number of Produce
requests and Fetch responses, and their record counts, agree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kproto.capture import exchanges                       # noqa: E402
from kproto.capture.body import record_count               # noqa: E402
from kproto.capture.pcap import PacketReader               # noqa: E402
from tests.capture_session import pcap_bytes, tcpdump      # noqa: E402
from tests.components import VENV_BIN, kproto_broker       # noqa: E402

OUT = Path(__file__).parent / "out" / "decode"
GNU_TIME = "/usr/bin/time"


def make_capture(records: int, path: Path) -> int:
    """Record the traffic; returns the broker port."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    with tempfile.TemporaryDirectory() as tmp, kproto_broker(Path(tmp)) as bs:
        port = int(bs.rsplit(":", 1)[1])
        with tcpdump(path, "lo", f"tcp port {port}"):
            # small batches, as a producer under light load sends them: many PDUs
            p = KafkaProducer(bootstrap_servers=bs, api_version=(2, 5, 0), linger_ms=2, batch_size=1024)
            for i in range(records):
                value = b'{"n":%08d,"user":"u%05d","event":"click","payload":"' % (i, i % 977) + b"x" * 40 + b'"}'
                p.send("bench", key=b"key-%012d" % i, value=value, headers=[("h", b"v")])
            p.flush(120)
            p.close()
            c = KafkaConsumer(bootstrap_servers=bs, api_version=(2, 5, 0), consumer_timeout_ms=3000,
                              auto_offset_reset="earliest")
            c.assign([TopicPartition("bench", 0)])
            got = sum(1 for _ in c)
            c.close()
            if got != records:
                raise SystemExit(f"consumer read {got} of {records} records")
    return port


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s = user + sys, peak RSS MiB) of one process, stdout to /dev/null.
    Run under GNU time: a forked child's ru_maxrss also counts the parent's
    pages it shared before exec, which would charge this script's memory to
    the tool measured."""
    with open(os.devnull, "wb") as null:
        proc = subprocess.run([GNU_TIME, "-f", "%e %U %S %M", *cmd], stdout=null, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
    wall, user, system, rss_kb = proc.stderr.decode().strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(rss_kb) // 1024


def kproto_cmd(path: Path, port: int) -> list[str]:
    return [str(VENV_BIN / "kproto"), "decode", "--json", "-p", str(port), str(path)]


def tshark_cmd(path: Path, port: int) -> list[str]:
    return ["tshark", "-r", str(path), "-d", f"tcp.port=={port},kafka", "-T", "json"]


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


def fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the capture for the next run")
    args = ap.parse_args()
    if not shutil.which("tshark") or not shutil.which("tcpdump") or not os.path.exists(GNU_TIME):
        raise SystemExit("needs tshark, tcpdump and GNU time: make deps installs them")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"produce-fetch-{args.records}.pcap"
    meta = path.with_suffix(".port")
    if not path.exists() or not meta.exists():
        meta.write_text(str(make_capture(args.records, path)))
    port = int(meta.read_text())
    size_mb = path.stat().st_size / 1e6
    produced, fetched = check_agreement(path, port)
    records = produced + fetched
    print(f"capture: {path.name}, {size_mb:.1f} MB; records decoded: {produced} in Produce requests + "
          f"{fetched} in Fetch responses = {records} (a Fetch answers with whole batches, and a consumer "
          f"may fetch a batch again); both tools agree on PDU and record counts")

    runs: dict[str, list[tuple[float, float, int]]] = {"kproto": [], "tshark": []}
    for _ in range(args.runs):
        for name, cmd in (("kproto", kproto_cmd(path, port)), ("tshark", tshark_cmd(path, port))):
            runs[name].append(timed(cmd))
    print(f"\n{'tool':<24}{'wall, median (min-max)':<26}{'CPU, median (min-max)':<26}"
          f"{'records/s wall':>15}{'records/s CPU':>15}{'peak RSS':>10}")
    med = {}
    for name, label in (("kproto", "kproto decode --json"), ("tshark", "tshark -T json")):
        walls, cpus = [r[0] for r in runs[name]], [r[1] for r in runs[name]]
        med[name] = statistics.median(walls), statistics.median(cpus)
        print(f"{label:<24}{fmt(walls):<26}{fmt(cpus):<26}{records / med[name][0]:>15,.0f}"
              f"{records / med[name][1]:>15,.0f}{max(r[2] for r in runs[name]):>6} MiB")
    print(f"\nkproto vs tshark -T json: {med['tshark'][0] / med['kproto'][0]:.1f}x by median wall time, "
          f"{med['tshark'][1] / med['kproto'][1]:.1f}x by median CPU time ({args.runs} alternating runs each)")
    load = os.getloadavg()
    print(f"load average during the runs: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")

    print("\npeak RSS of kproto decode --json by capture prefix:")
    with tempfile.TemporaryDirectory() as tmp:
        for fraction in (0.25, 0.5, 1.0):
            part = path if fraction == 1.0 else prefix(path, fraction, Path(tmp) / f"p{fraction}.pcap")
            wall, cpu, peak = timed(kproto_cmd(part, port))
            print(f"  {fraction:>4.0%} ({part.stat().st_size / 1e6:5.1f} MB): {peak} MiB")
    if not args.keep:
        path.unlink()
        meta.unlink()


if __name__ == "__main__":
    main()
