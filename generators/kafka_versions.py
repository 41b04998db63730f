"""Write kproto/server/kafka_versions.py: the API versions each Apache Kafka release's broker
advertised in ApiVersions, for ``kproto serve --kafka-version``.

    python -m generators.kafka_versions [KAFKA_GIT_DIR]

Sources, per release (recorded in the module's ``SOURCES``):

* 2.1: ``ApiKeys.java`` at the tag (the enum lists every API a broker answers) and, for
  each, the length of ``<Name>Request.schemaVersions()`` (versions 0..n-1): 2.1 had no
  JSON message definitions yet.
* 2.2 .. 3.9: ``clients/src/main/resources/common/message/*Request.json`` at the tag (3.9:
  the ``3.9`` branch, whose final tag the mirror lacks): ``validVersions``, less the
  newest when ``latestVersionUnstable`` (not advertised unless
  ``unstable.api.versions.enable``), for the APIs whose ``listeners`` name a broker, in
  ZooKeeper (``zkBroker``) or KRaft mode (``broker``): what a broker of that release
  answered in either mode (all APIs before listeners existed, 2.2 .. 2.7).
* 4.x: the release's own kafka-clients jar (``.kafka/<version>/lib``), asked with a tiny
  Java program: ``ApiKeys.apisForListener(BROKER)``, ``oldestVersion()`` ..
  ``latestVersion(false)``. Only the releases whose jar is present here (4.4.0).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from generators.definitions import MESSAGES, versions_of

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "kproto" / "server" / "kafka_versions.py"
GIT_RELEASES = {"2.1": "2.1.0", **{f"2.{m}": f"2.{m}.0" for m in range(2, 9)},
                **{f"3.{m}": f"3.{m}.0" for m in range(0, 9)}, "3.9": "3.9"}
JAR_RELEASES = {"4.4": "4.4.0"}
# KIP-848's consumer groups: before 4.0 a broker advertised ConsumerGroupHeartbeat and
# ConsumerGroupDescribe only with group.coordinator.rebalance.protocols naming "consumer"
# (default "classic"; ApiVersionManager's enabled APIs), so a default broker did not.
KIP_848 = (68, 69)


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def from_schema_versions(repo: str, ref: str) -> dict[int, tuple[int, int]]:
    """2.1: the ApiKeys enum and each request's ``schemaVersions()`` array."""
    keys = git(repo, "show", f"{ref}:clients/src/main/java/org/apache/kafka/common/protocol/ApiKeys.java")
    out = {}
    for m in re.finditer(r"^\s+[A-Z_]+\((\d+),\s*\"\w+\",[^\n]*?(\w+Request)\.schemaVersions\(\)", keys, re.M):
        key, cls = int(m.group(1)), m.group(2)
        src = git(repo, "show", f"{ref}:clients/src/main/java/org/apache/kafka/common/requests/{cls}.java")
        arr = re.search(r"schemaVersions\(\)\s*\{\s*return new Schema\[\]\s*\{([^}]*)\}", src)
        if arr is None:
            raise SystemExit(f"{ref}: {cls}.schemaVersions() is not a literal array")
        n = len([s for s in arr.group(1).split(",") if s.strip()])
        out[key] = (0, n - 1)
    return out


def from_json(repo: str, ref: str) -> dict[int, tuple[int, int]]:
    names = git(repo, "ls-tree", "--name-only", f"{ref}:{MESSAGES}").split()
    docs = [_load(git(repo, "show", f"{ref}:{MESSAGES}/{n}")) for n in names if n.endswith("Request.json")]
    out = {}
    for d in docs:
        if "listeners" in d and not {"zkBroker", "broker"} & set(d["listeners"]):
            continue
        v = versions_of(d["validVersions"])
        if not v:
            continue
        hi = v[-1] - 1 if d.get("latestVersionUnstable") else v[-1]
        if hi >= v[0]:
            out[d["apiKey"]] = (v[0], hi)
    return out


def _load(text: str) -> dict:
    """The JSON object, comments stripped; 2.8.0's DescribeProducersRequest.json has a stray
    brace after it, which Kafka's generator (Jackson, one value read) never looks at."""
    return json.JSONDecoder().raw_decode(re.sub(r"^\s*//.*$", "", text, flags=re.M).strip())[0]


JAVA = """
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
public class BrokerApis {
    public static void main(String[] a) {
        for (ApiKeys k : ApiKeys.apisForListener(ApiMessageType.ListenerType.BROKER))
            System.out.println(k.id + " " + k.oldestVersion() + " " + k.latestVersion(false));
    }
}
"""


def from_jar(version: str) -> dict[int, tuple[int, int]]:
    lib = ROOT / ".kafka" / version / "lib"
    cp = ":".join(str(p) for p in sorted(lib.glob("*.jar")))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "BrokerApis.java").write_text(JAVA)
        subprocess.run(["javac", "-cp", cp, "-d", tmp, f"{tmp}/BrokerApis.java"], check=True)
        text = subprocess.run(["java", "-cp", f"{tmp}:{cp}", "BrokerApis"], check=True, capture_output=True,
                              text=True).stdout
    out = {}
    for line in text.split("\n"):
        if line.strip():
            k, lo, hi = map(int, line.split())
            if hi >= lo:
                out[k] = (lo, hi)
    # Kafka 4's broker still advertises Produce from v0 though it rejects v0-2, since
    # librdkafka <= 2.11.0 drops compression otherwise (KAFKA-18659: ApiVersionsResponse);
    # measured on 4.4.0's broker: Produce 0-13.
    if 0 in out:
        out[0] = (0, out[0][1])
    return out


def main(argv: list[str]) -> None:
    repo = argv[0] if argv else "/work/.mirror/apache+kafka/repo"
    releases, sources = {}, {}
    for release, ref in GIT_RELEASES.items():
        sha = git(repo, "rev-parse", f"{ref}^{{commit}}").strip()
        if release == "2.1":
            releases[release] = from_schema_versions(repo, ref)
            sources[release] = f"apache/kafka {ref} ({sha[:12]}): ApiKeys.java, requests/*Request.schemaVersions()"
        else:
            releases[release] = {k: v for k, v in from_json(repo, ref).items() if k not in KIP_848}
            sources[release] = f"apache/kafka {ref} ({sha[:12]}): {MESSAGES}/*Request.json"
    for release, version in JAR_RELEASES.items():
        releases[release] = from_jar(version)
        sources[release] = (f"kafka-clients-{version}.jar: ApiKeys.apisForListener(BROKER), "
                            "oldestVersion()..latestVersion(false); Produce from 0 (KAFKA-18659)")
    lines = ["# Generated by python -m generators.kafka_versions: do not edit.",
             '"""The API versions each Apache Kafka release\'s broker advertised (ApiVersions), by release:',
             "api key -> (oldest, newest). ``SOURCES`` says where each release's table was read.\"\"\"", "",
             "SOURCES: dict[str, str] = {"]
    lines += [f"    {r!r}: {s!r}," for r, s in sources.items()]
    lines += ["}", "", "RELEASES: dict[str, dict[int, tuple[int, int]]] = {"]
    for r, table in releases.items():
        body = ", ".join(f"{k}: {v}" for k, v in sorted(table.items()))
        lines.append(f"    {r!r}: {{{body}}},")
    lines += ["}", ""]
    text = "\n".join(lines)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(releases)} releases")


if __name__ == "__main__":
    main(sys.argv[1:])
