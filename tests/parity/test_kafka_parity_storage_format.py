"""``kproto storage format`` against Kafka 4.4's StorageTool format for KRaft controllers
(KIP-853's --standalone / --initial-controllers / --no-initial-controllers): the lines,
the refusals, meta.properties and the bootstrap checkpoint's control records."""

from __future__ import annotations

from pathlib import Path

from kproto.log import checkpoint as ckpt
from kproto.log.manager import parse_topic_id
from kproto.server.cluster import quorum as Q
from kproto.server.cluster import snapshot as SN
from tests.tools.helpers import run_command

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DIRECTORY = "I2UKD6SvQaqrUeK4Lp8uEA"


def _props(root: Path, name: str, port: int = 19093) -> Path:
    path = root / f"{name}.properties"
    path.write_text(f"process.roles=controller\nnode.id=3000\ncontroller.listener.names=CONTROLLER\n"
                    f"listeners=CONTROLLER://127.0.0.1:{port}\ncontroller.quorum.bootstrap.servers=127.0.0.1:{port}\n"
                    f"log.dirs={root / name}\n")
    return path


def _both(kafka_ref, tmp_path: Path, *args: str) -> tuple[tuple, tuple, Path, Path]:
    """Kafka's and kproto's (status, stdout, stderr) formatting their own copy of the node."""
    (tmp_path / "k").mkdir(exist_ok=True)
    (tmp_path / "p").mkdir(exist_ok=True)
    theirs = kafka_ref.run_tool("kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c",
                                str(_props(tmp_path / "k", "node")), *args)
    ours = run_command("storage", None, "format", "-t", CLUSTER_ID, "-c", str(_props(tmp_path / "p", "node")), *args)
    k, p = tmp_path / "k" / "node", tmp_path / "p" / "node"
    return ((theirs.returncode, theirs.stdout.replace(str(k), "DIR"), theirs.stderr.replace(str(k), "DIR")),
            (ours[0], ours[1].replace(str(p), "DIR"), ours[2].replace(str(p), "DIR")), k, p)


def _control(d: Path) -> list:
    data = (d / "__cluster_metadata-0" / SN.snapshot_file_name(SN.SnapshotId(0, 0))).read_bytes()
    return [(o, k, dict(f)) for o, k, f in SN.control_records(data)]


def test_initial_controllers_and_standalone_format_as_kafka(kafka_ref, tmp_path):
    theirs, ours, k, p = _both(kafka_ref, tmp_path, "--initial-controllers", f"3000@127.0.0.1:19093:{DIRECTORY}")
    assert ours == theirs and theirs[0] == 0
    assert ckpt.read_meta_properties(p) == ckpt.read_meta_properties(k)      # the listed directory id
    assert _control(p) == _control(k) and len(_control(p)) == 2
    # formatted already: refused, or skipped with --ignore-formatted
    for args in ([], ["--ignore-formatted"]):
        theirs, ours, _, _ = _both(kafka_ref, tmp_path, "--standalone", *args)
        assert ours == theirs, args


def test_standalone_writes_the_node_itself_as_the_voter(kafka_ref, tmp_path):
    theirs, ours, k, p = _both(kafka_ref, tmp_path, "--standalone")
    assert ours == theirs and theirs[0] == 0
    for d in (k, p):        # the voter's directory id is the new meta.properties'
        log = Q.MetadataLog(d / "__cluster_metadata-0")
        assert log.kraft_version == 1
        [(offset, voters)] = log.voter_sets
        assert offset == -1 and [(v.id, v.endpoints) for v in voters.values()] == [
            (3000, (("CONTROLLER", "127.0.0.1", 19093),))]
        assert [v.directory_id for v in voters.values()] == [parse_topic_id(ckpt.read_meta_properties(d)["directory.id"])]
        log.log.close()


def test_format_refusals_are_kafkas(kafka_ref, tmp_path):
    theirs, ours, _, _ = _both(kafka_ref, tmp_path)
    assert ours == theirs and theirs[0] == 1
    theirs, ours, _, _ = _both(kafka_ref, tmp_path, "--no-initial-controllers")
    assert ours == theirs and theirs[0] == 0
