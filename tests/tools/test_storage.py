"""``kproto storage`` (kafka-storage.sh) against Apache Kafka 4.4's StorageTool.

Each case runs Kafka's tool, keeps what it printed and wrote, wipes the directories and runs
kproto's on the same paths: exit status, stdout and the first stderr line (Kafka's exception
message without its stack) must be equal, and so must the files written. meta.properties'
directory ids are random and the bootstrap snapshot's timestamps are the clock's: those are
masked, everything else compared. Then each side's broker starts on the other's directory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kproto.log.checkpoint import read_meta_properties
from kproto.jvm import java_hashmap_order, java_string_hash
from kproto.server.storage import BOOTSTRAP_SNAPSHOT
from tests.components import kproto_broker
from tests.helpers import request_raw
from tests.tools.helpers import run_command

STORAGE_TOOL = "kafka.tools.StorageTool"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"
COMBINED = {"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9999",
            "listeners": "PLAINTEXT://127.0.0.1:9998,CONTROLLER://127.0.0.1:9999",
            "controller.listener.names": "CONTROLLER"}
CONTROLLER = {"process.roles": "controller", "node.id": "3000", "controller.listener.names": "CONTROLLER",
              "listeners": "CONTROLLER://127.0.0.1:19093", "controller.quorum.bootstrap.servers": "127.0.0.1:19093"}
INITIAL = "3000@127.0.0.1:19093:I2UKD6SvQaqrUeK4Lp8uEA,3001@127.0.0.1:19094:MvDxzVmcRsaTz33bUuRU6A"
SALTED = 'SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]'
# timestamps and CRCs of the bootstrap snapshot: the clock's
CLOCK = re.compile(r"(CreateTime: |\"lastContainedLogTimestamp\":|crc: )\d+")
# a --standalone voter's directory id: a new one
NEW_DIRECTORY = re.compile(r'("voterDirectoryId":)"[\w-]+"')


def write_props(path: Path, **configs: str) -> str:
    path.write_text("".join(f"{k}={v}\n" for k, v in configs.items()))
    return str(path)


def files(dirs: list[Path]) -> dict[str, object]:
    """What a format left: each file's name and meta.properties' keys (directory ids masked)."""
    out: dict[str, object] = {}
    for d in dirs:
        for f in sorted(d.rglob("*")) if d.exists() else ():
            if f.is_file():
                props = read_meta_properties(f.parent) if f.name == "meta.properties" else None
                out[str(f)] = props and {**props, "directory.id": len(props["directory.id"])}
    return out


def run_kafka(kafka_ref, args: list[str]) -> tuple[int, str, str]:
    r = kafka_ref.run_tool(STORAGE_TOOL, *args)
    first = r.stderr.strip().splitlines()[:1]
    # an uncaught exception: Kafka prints 'Exception in thread "main" <class>: <message>' and the stack
    err = re.sub(r'^Exception in thread "main" [\w.$]+: ', "", first[0]) if first else ""
    return r.returncode, r.stdout, err


def run_kproto(args: list[str]) -> tuple[int, str, str]:
    code, out, err = run_command("storage", None, *args)
    return int(code), out, err.strip()


def dump(kafka_ref, path: Path) -> str:
    r = kafka_ref.run_tool(DUMP_LOG, "--cluster-metadata-decoder", "--files", str(path))
    assert r.returncode == 0, r.stderr
    return NEW_DIRECTORY.sub(r"\1<id>", CLOCK.sub(r"\1<t>", r.stdout))


CASES = {
    "one directory": (dict(COMBINED, **{"log.dirs": "{d}/o"}), []),
    "several directories in Java's HashMap order": (
        dict(COMBINED, **{"log.dirs": "{d}/alpha,{d}/beta,{d}/gamma,{d}/data-1,{d}/data-2,{d}/zz"}), []),
    "a metadata.log.dir of its own": (dict(COMBINED, **{"log.dirs": "{d}/d1,{d}/d2", "metadata.log.dir": "{d}/m"}), []),
    "a broker-only node: no bootstrap snapshot": (
        dict(COMBINED, **{"process.roles": "broker", "controller.quorum.voters": "2@127.0.0.1:9999",
                          "listeners": "PLAINTEXT://127.0.0.1:9998", "log.dirs": "{d}/b"}), []),
    "release 3.9": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--release-version", "3.9"]),
    "metadata.version by --feature": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "metadata.version=21"]),
    "a feature set": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "transaction.version=0",
                                                                "--feature", "group.version=0"]),
    "a salted SCRAM credential": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--add-scram", SALTED]),
    "both metadata.version flags": (dict(COMBINED, **{"log.dirs": "{d}/o"}),
                                    ["--feature", "metadata.version=21", "--release-version", "3.9"]),
    "an unknown release": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--release-version", "9.9"]),
    "an unstable release": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--release-version", "4.5-IV0"]),
    "an unknown feature": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "nope.version=1"]),
    "a level not supported": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "transaction.version=5"]),
    "a dependency not met": (dict(COMBINED, **{"log.dirs": "{d}/o"}),
                             ["--feature", "eligible.leader.replicas.version=1", "--release-version", "3.9"]),
    "kraft.version 1 with static voters": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "kraft.version=1"]),
    "no equals sign": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "transaction.version"]),
    "not a short": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--feature", "transaction.version=x"]),
    "SCRAM before 3.5-IV2": (dict(COMBINED, **{"log.dirs": "{d}/o"}),
                             ["--release-version", "3.4", "--add-scram", "SCRAM-SHA-256=[name=a,password=x]"]),
    "SCRAM without a name": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--add-scram", "SCRAM-SHA-256=[password=x]"]),
    "SCRAM-SHA-1": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--add-scram", "SCRAM-SHA-1=[name=a,password=x]"]),
    "SCRAM without equals": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--add-scram", "garbage"]),
    "SCRAM iterations too low": (dict(COMBINED, **{"log.dirs": "{d}/o"}),
                                 ["--add-scram", "SCRAM-SHA-256=[name=b,password=pw,iterations=100]"]),
    "--standalone: a dynamic quorum of this controller": (dict(CONTROLLER, **{"log.dirs": "{d}/n,{d}/m2"}),
                                                         ["--standalone"]),
    "--initial-controllers": (dict(CONTROLLER, **{"log.dirs": "{d}/n"}), ["--initial-controllers", INITIAL]),
    "--initial-controllers without this node": (dict(CONTROLLER, **{"log.dirs": "{d}/n", "node.id": "3002"}),
                                                ["--initial-controllers", INITIAL]),
    "--no-initial-controllers": (dict(CONTROLLER, **{"log.dirs": "{d}/n"}), ["--no-initial-controllers"]),
    "a controller without voters or a flag": (dict(CONTROLLER, **{"log.dirs": "{d}/n"}), []),
    "--standalone with static voters": (dict(COMBINED, **{"log.dirs": "{d}/o"}), ["--standalone"]),
    "--no-initial-controllers with static voters": (dict(COMBINED, **{"log.dirs": "{d}/o"}),
                                                    ["--no-initial-controllers"]),
    "kraft.version 0 in a dynamic quorum": (dict(CONTROLLER, **{"log.dirs": "{d}/n"}),
                                            ["--standalone", "--feature", "kraft.version=0"]),
    "no node.id": ({k: v for k, v in COMBINED.items() if k != "node.id"} | {"log.dirs": "{d}/o"}, []),
    "no process.roles": ({k: v for k, v in COMBINED.items() if k != "process.roles"} | {"log.dirs": "{d}/o"}, []),
    "a broker among the voters": (dict(COMBINED, **{"process.roles": "broker", "log.dirs": "{d}/o",
                                                    "listeners": "PLAINTEXT://127.0.0.1:9998"}), []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_format_as_kafka(kafka_ref, tmp_path, case):
    configs, flags = CASES[case]
    configs = {k: v.format(d=tmp_path) for k, v in configs.items()}
    props = write_props(tmp_path / "server.properties", **configs)
    dirs = [Path(p) for key in ("log.dirs", "metadata.log.dir") for p in configs.get(key, "").split(",") if p]
    args = ["format", "-t", CLUSTER_ID, "-c", props, *flags]
    kafka = run_kafka(kafka_ref, args)
    kafka_files = files(dirs)
    snapshots = [d / BOOTSTRAP_SNAPSHOT for d in dirs if (d / BOOTSTRAP_SNAPSHOT).exists()]
    kafka_dumps = [dump(kafka_ref, s) for s in snapshots]
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    assert run_kproto(args) == kafka
    assert files(dirs) == kafka_files
    assert [dump(kafka_ref, s) for s in snapshots] == kafka_dumps


def test_format_twice_and_info_as_kafka(kafka_ref, tmp_path):
    """A second format refuses (the first directory in Kafka's order), --ignore-formatted formats
    only the new directory; info lists what it finds and its problems."""
    dirs = [tmp_path / n for n in ("alpha", "beta", "gamma", "zz")]
    props = write_props(tmp_path / "server.properties", **COMBINED, **{"log.dirs": ",".join(map(str, dirs))})
    fmt = ["format", "-t", CLUSTER_ID, "-c", props]
    steps = [("info", "-c", props), fmt, ("info", "-c", props), fmt, ("format", "-t", "other", "-c", props),
             "rm beta", ("info", "-c", props), fmt + ["--ignore-formatted"], fmt + ["--ignore-formatted"]]

    def run(side):
        out = []
        for step in steps:
            if step == "rm beta":
                shutil.rmtree(tmp_path / "beta")
                continue
            out.append(side(list(step)))
        # info's directory id: the first directory's own
        return [re.sub(r"directory\.id=[\w-]+", "directory.id=<id>", str(o)) for o in out]

    kafka = run(lambda a: run_kafka(kafka_ref, a))
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
    assert run(run_kproto) == kafka


@pytest.mark.parametrize("args", [
    ["version-mapping"], ["version-mapping", "--release-version", "3.9"], ["version-mapping", "-r", "4.0"],
    ["version-mapping", "--release-version", "9.9"],
    ["feature-dependencies", "--feature", "eligible.leader.replicas.version=1"],
    ["feature-dependencies", "--feature", "share.version=2", "--feature", "group.version=1"],
    ["feature-dependencies", "--feature", "metadata.version=33"],
    ["feature-dependencies", "--feature", "metadata.version=99"],
    ["feature-dependencies", "--feature", "transaction.version=5"],
    ["feature-dependencies", "--feature", "nope=1"],
])
def test_mappings_as_kafka(kafka_ref, args):
    assert run_kproto(args) == run_kafka(kafka_ref, args)


def test_random_uuid():
    """Uuid.randomUuid().toString(): 22 URL-safe base64 characters, a new one each time."""
    (c1, a, _), (c2, b, _) = run_kproto(["random-uuid"]), run_kproto(["random-uuid"])
    assert (c1, c2) == (0, 0) and a != b
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", a) and re.fullmatch(r"[A-Za-z0-9_-]{22}\n", b)


def test_two_quorum_flags_refused_in_one_line(tmp_path):
    """argparse's mutually exclusive group, in one line (Kafka prints its usage first)."""
    props = write_props(tmp_path / "server.properties", **CONTROLLER, **{"log.dirs": str(tmp_path / "n")})
    assert run_kproto(["format", "-t", CLUSTER_ID, "-c", props, "--standalone", "--no-initial-controllers"]) == (
        1, "", "argument --no-initial-controllers/-N: not allowed with argument --standalone/-s")
    assert not (tmp_path / "n").exists()


def test_a_missing_config_file_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kproto.tools.main", "storage", "info", "-c",
                           str(tmp_path / "nope.properties")], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == f"{tmp_path / 'nope.properties'} (No such file or directory)\n"


def test_java_hash_order():
    """HashMap<String, _> iteration order, as Kafka 4.4 printed these directories."""
    names = [f"/tmp/st2/x/{n}" for n in ("alpha", "beta", "data-1", "data-2", "gamma", "zz")]
    assert java_hashmap_order(names, java_string_hash) == [f"/tmp/st2/x/{n}" for n in ("zz", "alpha", "beta", "data-2", "data-1", "gamma")]
    assert java_hashmap_order(["/tmp/st2/d1", "/tmp/st2/d2"], java_string_hash) == ["/tmp/st2/d2", "/tmp/st2/d1"]


def finalized(bootstrap: str) -> dict[str, int]:
    r = request_raw(bootstrap, 18, 4, {"client_software_name": "t", "client_software_version": "1"})
    return {f.name: f.max_version_level for f in r.finalized_features}


def scram_users(bootstrap: str) -> list:
    r = request_raw(bootstrap, 50, 0, {"users": None})
    return sorted((u.user, [(c.mechanism, c.iterations) for c in u.credential_infos]) for u in r.results)


FORMAT_FLAGS = ["--feature", "transaction.version=0", "--add-scram", SALTED,
                "--add-scram", "SCRAM-SHA-256=[name=bob,password=bob-secret]"]


def test_each_broker_starts_on_the_other_tools_directory(kafka_ref, tmp_path):
    """Kafka's broker on a directory ``kproto storage format`` made, kproto's on one Kafka's tool
    made: both take the chosen features and SCRAM credentials, and agree."""
    def kproto_format(server_props: Path, cluster_id: str) -> None:
        code, out, err = run_kproto(["format", "-t", cluster_id, "-c", str(server_props), *FORMAT_FLAGS])
        assert code == 0, err

    with kafka_ref.broker(tmp_path / "kafka", format=kproto_format) as kafka:
        on_kafka = finalized(kafka.bootstrap), scram_users(kafka.bootstrap)
    assert on_kafka == ({"metadata.version": 33, "eligible.leader.replicas.version": 1, "group.version": 1,
                         "share.version": 2, "streams.version": 1},
                        [("alice", [(2, 8192)]), ("bob", [(1, 4096)])])

    data = tmp_path / "kproto-data"
    props = write_props(tmp_path / "kproto.properties", **COMBINED, **{"log.dirs": str(data)})
    code, _, err = run_kafka(kafka_ref, ["format", "-t", CLUSTER_ID, "-c", props, *FORMAT_FLAGS])
    assert code == 0, err
    with kproto_broker(tmp_path, data_dir=data) as bootstrap:
        assert (finalized(bootstrap), scram_users(bootstrap)) == on_kafka
        assert read_meta_properties(data)["cluster.id"] == CLUSTER_ID


def test_java_hash_order_of_a_copied_map():
    """``new HashMap<>(sorted map)``: sized for its entries (8 slots for 4 or 5), as Kafka 4.4 named
    the first formatted directory of these."""
    def names(base: str, *ns: str) -> list[str]:
        return sorted(f"{base}/{n}" for n in ns)
    assert java_hashmap_order(names("/tmp/st2/y", "alpha", "beta", "gamma", "zz"), java_string_hash, copy=True)[0] == "/tmp/st2/y/alpha"
    assert java_hashmap_order(names("/tmp/st2/x", "alpha", "data-1", "data-2", "gamma", "zz"),
                              java_string_hash, copy=True)[0] == "/tmp/st2/x/zz"


@pytest.mark.parametrize("args", [
    ["feature-dependencies", "--feature", "eligible.leader.replicas.version=1"],
    ["feature-dependencies", "--feature", "metadata.version=33", "--feature", "transaction.version=2"],
    ["feature-dependencies", "--feature", "nope=1"],
])
def test_features_feature_dependencies_as_kafka(kafka_ref, args):
    """kafka-features.sh has the same sub-command (FeatureCommand.handleFeatureDependencies)."""
    r = kafka_ref.run_tool("org.apache.kafka.tools.FeatureCommand", *args)
    code, out, err = run_command("features", None, *args)
    assert (int(code), out, err.strip()) == (r.returncode, r.stdout, r.stderr.strip())
