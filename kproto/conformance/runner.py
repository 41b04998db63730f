"""Run a user's decoder command over the corpus and judge its answers.

The decoder is a command template: split like a POSIX shell line (no shell
runs it), then ``{file}``, ``{kind}``, ``{name}``, ``{api_key}`` and
``{api_version}`` are replaced inside each word (``none`` for records).
It must print one JSON answer on stdout and exit 0 (see ``kproto.conformance``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Iterator

from kproto.conformance import Fixture, differences
from kproto.errors import UsageError

PLACEHOLDERS = ("file", "kind", "name", "api_key", "api_version")


@dataclass(frozen=True)
class Outcome:
    """``status`` is pass, fail (wrong answer) or error (no answer)."""

    fixture: Fixture
    status: str
    problems: tuple[str, ...] = ()
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"fixture": self.fixture.id, "kind": self.fixture.kind, "status": self.status,
                "problems": list(self.problems), "seconds": round(self.seconds, 3)}


def parse_template(template: str) -> list[str]:
    """The decoder's argv template; a usage error if it cannot name the fixture."""
    try:
        words = shlex.split(template)
    except ValueError as e:
        raise UsageError(f"--decoder: {e}") from None
    if not words:
        raise UsageError("--decoder: empty command")
    if not any("{file}" in w for w in words):
        raise UsageError("--decoder: the command must contain {file}")
    for w in words:
        try:
            w.format(**{p: "" for p in PLACEHOLDERS})
        except (KeyError, IndexError, ValueError) as e:
            raise UsageError(f"--decoder: bad placeholder in {w!r} ({e}); "
                             f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}") from None
    return words


def command_for(words: list[str], fixture: Fixture) -> list[str]:
    values = fixture.placeholders()
    return [w.format(**values) for w in words]


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip()[:200] if lines else "(nothing on stderr)"


def judge(fixture: Fixture, returncode: int, stdout: str, stderr: str, seconds: float = 0.0) -> Outcome:
    """One decoder answer against the fixture's expected values."""
    if returncode != 0:
        return Outcome(fixture, "error", (f"decoder exited {returncode}: {_last_line(stderr)}",), seconds)
    try:
        answer = json.loads(stdout)
    except ValueError as e:
        return Outcome(fixture, "error", (f"decoder output is not JSON ({e})",), seconds)
    diffs = differences(fixture.expected(), answer)
    return Outcome(fixture, "fail" if diffs else "pass", tuple(diffs), seconds)


def run_one(words: list[str], fixture: Fixture, timeout: float) -> Outcome:
    cmd = command_for(words, fixture)
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        return Outcome(fixture, "error", (f"cannot run {cmd[0]}: {e.strerror or e}",))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):   # the decoder and whatever it started
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(fixture, "error", (f"decoder did not answer within {timeout:g}s",), timeout)
    return judge(fixture, proc.returncode, out, err, time.perf_counter() - start)


def run(words: list[str], fixtures: Iterable[Fixture], *, jobs: int | None = None,
        timeout: float = 30.0) -> Iterator[Outcome]:
    """Outcomes in corpus order, decoders (``parse_template``'s words) running ``jobs`` at a time."""
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        yield from pool.map(lambda f: run_one(words, f, timeout), fixtures)
