"""Apache Kafka's Java client (tests/java/KprotoClient.java) as a test client and a frame decoder.

The driver is compiled with javac against ``.kafka/<version>/lib`` once per source
content: classes go to ``tests/java/.build/<sha256 of the source>/`` (ignored by git),
so an edit recompiles and an unchanged source is reused across runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.kafka_ref import KafkaReference, KafkaUnavailable, java

SOURCE = Path(__file__).resolve().parent / "java" / "KprotoClient.java"
BUILD = SOURCE.parent / ".build"


def classes(ref: KafkaReference, source: Path = SOURCE) -> Path:
    """The compiled ``source`` (the driver by default) for ``ref``'s jars, compiled now unless
    already there."""
    digest = hashlib.sha256(source.read_bytes() + ref.version.encode()).hexdigest()[:16]
    out = BUILD / digest
    if (out / f"{source.stem}.class").exists():
        return out
    javac = Path(java()).with_name("javac")
    if not javac.exists():
        raise KafkaUnavailable(f"no javac next to {java()} (apt-get install openjdk-17-jdk-headless)")
    BUILD.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=BUILD, prefix="tmp-"))
    proc = subprocess.run([str(javac), "-Xlint:all", "-Werror", "-cp", f"{ref.lib}/*", "-d", str(tmp), str(source)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"javac {source.name} failed:\n{proc.stdout}{proc.stderr}")
    try:
        os.rename(tmp, out)          # atomic: a concurrent compile of the same source loses, harmlessly
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _command(ref: KafkaReference, *args: str) -> list[str]:
    return ref.tool_command("KprotoClient", *args, classpath=(classes(ref),))


@dataclass
class Outcome:
    """What one scenario did: its exit code, its JSON lines, its stderr."""
    returncode: int
    events: list[dict]
    stderr: str

    def of(self, event: str) -> list[dict]:
        return [e for e in self.events if e["event"] == event]

    @property
    def error(self) -> dict | None:
        errors = self.of("error")
        return errors[0] if errors else None


def run(ref: KafkaReference, scenario: str, *, timeout: float = 300.0, **args: object) -> Outcome:
    """Run one scenario (``produce``, ``consume``, ``txn``, ``admin``, ``share``, ``shareadmin``) with
    ``key=value`` arguments."""
    proc = subprocess.run(_command(ref, scenario, *(f"{k}={v}" for k, v in args.items())),
                          capture_output=True, text=True, timeout=timeout, check=False)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return Outcome(proc.returncode, events, proc.stderr)


def start(ref: KafkaReference, scenario: str, **args: object) -> subprocess.Popen:
    """Start a scenario that talks back (``failover`` waits for a line on stdin): its stdin and
    stdout are pipes (text); ``outcome`` reads the rest once it exited."""
    return subprocess.Popen(_command(ref, scenario, *(f"{k}={v}" for k, v in args.items())), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def outcome(proc: subprocess.Popen, events: list[dict], timeout: float = 300.0) -> Outcome:
    """The Outcome of a ``start``-ed scenario, ``events`` being the lines already read."""
    out, err = proc.communicate(timeout=timeout)
    events = events + [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return Outcome(proc.returncode, events, err)


def decode(ref: KafkaReference, frames: list[tuple[str, int, int, Path]], *, timeout: float = 300.0) -> list[dict]:
    """Kafka's generated classes' reading of each (kind, api_key, api_version, file), in one JVM:
    ``{"file", "header", "body"}`` or ``{"file", "error"}`` each."""
    lines = "".join(f"{kind} {key} {version} {path}\n" for kind, key, version, path in frames)
    proc = subprocess.run(_command(ref, "decode"), input=lines, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"KprotoClient decode exited {proc.returncode}: {proc.stderr[-2000:]}")
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [o["file"] for o in out] == [str(f[3]) for f in frames], "one answer per frame, in order"
    return out
