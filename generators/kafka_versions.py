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
* 4.0 .. 4.4: the newest patch release's jars on Maven Central (``JAR_RELEASES``: checked
  in maven-metadata.xml), fetched into ``.kafka/<version>/lib`` (git-ignored) by
  ``python3 tests/kafka_ref.py fetch <version>`` (Maven, tests/kafka/pom.xml; skipped once
  there) and asked with a tiny Java program: ``ApiKeys.apisForListener(BROKER)``,
  ``oldestVersion()`` .. ``latestVersion(false)``, less the exceptions below; and the
  features (server-common's ``MetadataVersion`` and ``Feature.PRODUCTION_FEATURES``):
  ``SupportedFeatures`` and what a freshly formatted cluster finalizes.

Measured against each 4.x release's broker (tests/parity/test_kafka_parity_versions.py
diffs 4.0's; 4.0.2 .. 4.4.0 were all measured when these tables were made): the jar-derived
ranges are what the broker advertised but for Produce (from v0, KAFKA-18659) and the
telemetry APIs (not advertised by default); ``SupportedFeatures`` is metadata.version and
every production feature whose newest production level is above 0, from level 0
(BrokerFeatures.defaultSupportedFeatures).

Re-run (JDK and Maven needed; the 2.x/3.x tables from a git mirror of apache/kafka):

    python -m generators.kafka_versions /path/to/apache/kafka/.git
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
# Newest patch of each 4.x release on Maven Central (maven-metadata.xml, 2026-11-26).
JAR_RELEASES = {"4.0": "4.0.2", "4.1": "4.1.2", "4.2": "4.2.2", "4.3": "4.3.1", "4.4": "4.4.0"}
# GetTelemetrySubscriptions and PushTelemetry (KIP-714, 3.7 on): a broker advertises them only
# with a metrics reporter that implements ClientTelemetry (ApiVersionManager's enabled APIs);
# measured: none of 3.7.2 .. 4.4.0's KRaft brokers advertises them by default.
TELEMETRY = (71, 72)
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
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;
public class BrokerApis {
    public static void main(String[] a) {
        for (ApiKeys k : ApiKeys.apisForListener(ApiMessageType.ListenerType.BROKER))
            System.out.println("api " + k.id + " " + k.oldestVersion() + " " + k.latestVersion(false));
        MetadataVersion mv = MetadataVersion.LATEST_PRODUCTION;
        System.out.println("feature metadata.version " + MetadataVersion.MINIMUM_VERSION.featureLevel() + " "
                           + mv.featureLevel() + " " + mv.featureLevel());
        for (Feature f : Feature.PRODUCTION_FEATURES)
            System.out.println("feature " + f.featureName() + " " + f.minimumProduction() + " "
                               + f.latestProduction() + " " + f.defaultLevel(mv));
    }
}
"""


def fetch(version: str) -> Path:
    """``.kafka/<version>/lib``: Kafka's jars, fetched by Maven unless already there."""
    subprocess.run([sys.executable, str(ROOT / "tests" / "kafka_ref.py"), "fetch", version], check=True,
                   stdout=subprocess.DEVNULL)
    return ROOT / ".kafka" / version / "lib"


def from_jar(version: str) -> tuple[dict[int, tuple[int, int]], dict[str, tuple[int, int]], dict[str, int]]:
    """API ranges, SupportedFeatures and a fresh cluster's finalized levels of Kafka ``version``."""
    lib = fetch(version)
    cp = ":".join(str(p) for p in sorted(lib.glob("*.jar")))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "BrokerApis.java").write_text(JAVA)
        subprocess.run(["javac", "-cp", cp, "-d", tmp, f"{tmp}/BrokerApis.java"], check=True)
        text = subprocess.run(["java", "-cp", f"{tmp}:{cp}", "BrokerApis"], check=True, capture_output=True,
                              text=True).stdout
    apis, supported, fresh = {}, {}, {}
    for line in text.split("\n"):
        kind, *rest = line.split() or [""]
        if kind == "api":
            k, lo, hi = map(int, rest)
            if hi >= lo and k not in TELEMETRY:
                apis[k] = (lo, hi)
        elif kind == "feature":
            name, lo, hi, default = rest[0], *map(int, rest[1:])
            if hi > 0:
                supported[name] = (lo, hi)
            # kraft.version stays 0 with static controller.quorum.voters (as kproto/features.py's FRESH_CLUSTER)
            if default > 0 and name != "kraft.version":
                fresh[name] = default
    # Kafka 4's broker still advertises Produce from v0 though it rejects v0-2, since
    # librdkafka <= 2.11.0 drops compression otherwise (KAFKA-18659: ApiVersionsResponse);
    # apache/kafka#18727, merged before 4.0.0, so from 4.0 on; measured on 4.0.2 .. 4.4.0's brokers.
    if 0 in apis:
        apis[0] = (0, apis[0][1])
    return apis, supported, fresh


def main(argv: list[str]) -> None:
    repo = argv[0] if argv else "/work/.mirror/apache+kafka/repo"
    releases, sources = {}, {}
    for release, ref in GIT_RELEASES.items():
        sha = git(repo, "rev-parse", f"{ref}^{{commit}}").strip()
        if release == "2.1":
            releases[release] = from_schema_versions(repo, ref)
            sources[release] = f"apache/kafka {ref} ({sha[:12]}): ApiKeys.java, requests/*Request.schemaVersions()"
        else:
            releases[release] = {k: v for k, v in from_json(repo, ref).items() if k not in KIP_848 + TELEMETRY}
            sources[release] = f"apache/kafka {ref} ({sha[:12]}): {MESSAGES}/*Request.json"
    supported, fresh = {}, {}
    for release, version in JAR_RELEASES.items():
        releases[release], supported[release], fresh[release] = from_jar(version)
        sources[release] = (f"kafka-clients-{version}.jar: ApiKeys.apisForListener(BROKER), "
                            "oldestVersion()..latestVersion(false); Produce from 0 (KAFKA-18659); no telemetry "
                            f"APIs; features: kafka-server-common-{version}.jar")
    lines = ["# Generated by python -m generators.kafka_versions: do not edit.",
             '"""The API versions each Apache Kafka release\'s broker advertised (ApiVersions), by release:',
             "api key -> (oldest, newest). ``SOURCES`` says where each release's table was read.\"\"\"", "",
             "SOURCES: dict[str, str] = {"]
    lines += [f"    {r!r}: {s!r}," for r, s in sources.items()]
    lines += ["}", "", "RELEASES: dict[str, dict[int, tuple[int, int]]] = {"]
    for r, table in releases.items():
        body = ", ".join(f"{k}: {v}" for k, v in sorted(table.items()))
        lines.append(f"    {r!r}: {{{body}}},")
    lines += ["}", "",
              "# SupportedFeatures (ApiVersions v4) of the releases read from jars; 3.3 .. 3.9's, measured, are",
              "# kproto.features.KRAFT_3X_FEATURES; 2.1 .. 3.2's brokers listed none.",
              "SUPPORTED_FEATURES: dict[str, dict[str, tuple[int, int]]] = {"]
    lines += [f"    {r!r}: {dict(sorted(t.items()))!r}," for r, t in supported.items()]
    lines += ["}", "", "# What a freshly formatted cluster of the release finalizes (kraft.version 0: static voters).",
              "FRESH_FEATURES: dict[str, dict[str, int]] = {"]
    lines += [f"    {r!r}: {dict(sorted(t.items()))!r}," for r, t in fresh.items()]
    lines += ["}", ""]
    text = "\n".join(lines)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {len(releases)} releases")


if __name__ == "__main__":
    main(sys.argv[1:])
