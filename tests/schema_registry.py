"""A Confluent-compatible Schema Registry for the tests: Apicurio Registry, built from Maven
Central by tests/schema_registry/pom.xml (why that version and those overrides: the pom says).

Standard library and a JDK only, like tests/kafka_ref.py: ``python3 tests/schema_registry.py fetch``
(``make schema-registry``) builds ``.schema-registry/<version>/schema-registry-1-runner.jar``
once; :func:`running` starts it on a free loopback port with in-memory (H2) storage and yields
the Confluent API's base URL, ``http://127.0.0.1:PORT/apis/ccompat/v7``.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

if not __package__:         # run as a script (make schema-registry): the repository on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kafka_ref import KafkaUnavailable, free_port, java  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "tests" / "schema_registry" / "pom.xml"
VERSION = re.search(r"<apicurio\.version>([^<]+)</apicurio\.version>", POM.read_text()).group(1)
BUILD = ROOT / ".schema-registry" / VERSION
RUNNER = BUILD / "schema-registry-1-runner.jar"
# Written after Maven built the app: a half-finished build is done again.
FETCHED = BUILD / ".fetched"
CCOMPAT = "/apis/ccompat/v7"


class RegistryUnavailable(RuntimeError):
    """The registry could not be built or started; the message says why."""


def fetch() -> Path:
    """The runnable registry jar, built by Maven unless already there."""
    if FETCHED.exists():
        return RUNNER
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RegistryUnavailable("no mvn on PATH: apt-get install maven (the registry is built from Maven Central)")
    proc = subprocess.run([mvn, "-q", "-B", "-f", str(POM), "package"], check=False, capture_output=True, text=True)
    if proc.returncode != 0 or not RUNNER.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise RegistryUnavailable(f"mvn could not build Apicurio Registry {VERSION}: " + " / ".join(tail))
    FETCHED.touch()
    return RUNNER


@contextlib.contextmanager
def running(log: Path, *, timeout: float = 180.0) -> Iterator[str]:
    """The registry on a free loopback port until the block ends; yields its Confluent API URL.
    Quarkus opens its HTTP port once the application has started."""
    from tests.components import running as run_process
    try:
        cmd = [java(), "-Xmx512m", "-XX:+UseSerialGC", "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.log.level=WARN"]
    except KafkaUnavailable as e:
        raise RegistryUnavailable(str(e)) from None
    runner, port = fetch(), free_port()
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(run_process([*cmd, f"-Dquarkus.http.port={port}", "-jar", str(runner)], port,
                                            timeout=timeout, log=log))
        except (RuntimeError, TimeoutError) as e:
            raise RegistryUnavailable(f"Apicurio Registry {VERSION} did not start: {e}; see {log}") from None
        yield f"http://127.0.0.1:{port}{CCOMPAT}"


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: schema_registry.py fetch")
    try:
        print(fetch())
    except RegistryUnavailable as e:
        sys.exit(f"schema_registry: {e}")
