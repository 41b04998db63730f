"""What every bench shares: the machine line, alternating runs, median (min-max)
cells, and the markdown table written to bench/results/<bench>.md.

Rules they follow (README "Benchmarks"): the strongest peer available here is the
anchor, both sides get the same inputs and settings, at least 5 runs alternate the
sides (A B, B A, A B, ...) so drift in a shared machine's load hits both, and the
table says median (min-max) with the machine and its load at the start.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
QUICK_RESULTS = ROOT / "bench" / "out" / "results"
MIN_RUNS = 5
T = TypeVar("T")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    """One line: when, what CPU, how many, how loaded, which Python and commit."""
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit = "?"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"{now}; {os.cpu_count()} CPUs (nproc), {cpu_model()}; load average at start "
            f"{load} (1/5/15 min); Python {platform.python_version()}; kproto {commit}")


def alternate(sides: dict[str, Callable[[], T]], runs: int) -> dict[str, list[T]]:
    """Call each side ``runs`` times, rotating which goes first each round."""
    names = list(sides)
    out: dict[str, list[T]] = {n: [] for n in names}
    for i in range(runs):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            out[name].append(sides[name]())
    return out


def cell(values: Iterable[float], fmt: str = "{:,.2f}") -> str:
    """``median (min-max)``."""
    v = list(values)
    return f"{fmt.format(statistics.median(v))} ({fmt.format(min(v))}-{fmt.format(max(v))})"


def ratio(a: Iterable[float], b: Iterable[float]) -> str:
    """Ratio of medians, a / b; "-" when b's median is 0 (e.g. CPU time below
    the clock tick in a quick run: no ratio to give)."""
    below = statistics.median(list(b))
    return f"{statistics.median(list(a)) / below:.2f}x" if below else "-"


def table(header: list[str], rows: list[list[str]], right: int = 1) -> str:
    """A markdown table; columns from ``right`` on are right-aligned."""
    align = ["---"] * right + ["---:"] * (len(header) - right)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def check_runs(runs: int) -> None:
    if runs < MIN_RUNS:
        raise SystemExit(f"--runs must be at least {MIN_RUNS} (alternating runs, median and range)")


def broker_pid(bootstrap: str) -> int:
    """The process listening on ``bootstrap`` (a broker tests.components started)."""
    import psutil
    port = int(bootstrap.rsplit(":", 1)[1])
    for c in psutil.net_connections("tcp"):
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.pid:
            return c.pid
    raise SystemExit(f"no process listens on {bootstrap}")


def kafka_version() -> str:
    from tests.kafka_ref import KAFKA_VERSION
    return KAFKA_VERSION


@contextlib.contextmanager
def kafka_reference_broker(workdir: Path, **options):
    """Apache Kafka as a bench peer: tests/kafka_ref.py's KRaft broker (combined mode, its
    BROKER_JVM options) with its log dir under ``workdir``; yields its ``KafkaBroker``.
    ``options`` as :meth:`KafkaReference.broker` takes them (configs with dots as underscores)."""
    from tests.kafka_ref import KafkaUnavailable, reference
    try:
        ref = reference(workdir / "kafka-ref")
        with ref.broker(workdir / "kafka", **options) as broker:
            yield broker
    except KafkaUnavailable as e:
        raise SystemExit(f"Apache Kafka unavailable (make kafka fetches it): {e}") from e


@contextlib.contextmanager
def kafka_broker(workdir: Path, **configs: str) -> Iterator[str]:
    """:func:`kafka_reference_broker`'s bootstrap, "127.0.0.1:PORT"."""
    with kafka_reference_broker(workdir, **configs) as broker:
        yield broker.bootstrap


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    import psutil
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


class Report:
    """Collects the text of one bench and writes bench/results/<name>.md."""

    def __init__(self, name: str, title: str, quick: bool = False) -> None:
        self.name, self.quick = name, quick
        self.parts = [f"# {title}", "",
                      f"- machine: {machine()}",
                      f"- command: `{' '.join(shlex.quote(a) for a in ['python', *sys.argv])}`"]
        if quick:
            self.parts.append("- **quick run (reduced sizes): checks the script, not a result to quote**")
        self.parts.append("")

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.parts.append("")

    def write(self) -> Path:
        text = "\n".join(self.parts).rstrip() + "\n"
        print(text)
        # a quick run's table checks the script: kept out of the results (bench/out is not tracked)
        path = QUICK_RESULTS / f"{self.name}.quick.md" if self.quick else RESULTS / f"{self.name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
        return path
