"""``kproto metadata-quorum add-controller`` / ``remove-controller`` against Kafka's
MetadataQuorumCommand (4.4): the dry runs (read the controller's properties and
meta.properties, send nothing) and the refusals, line for line. The real changes
run in tests/e2e/test_cluster_voters.py."""

from __future__ import annotations

import pytest

from kproto.log import checkpoint as ckpt
from tests.tools.helpers import run_command

TOOL = "org.apache.kafka.tools.MetadataQuorumCommand"
NOWHERE = ["--bootstrap-controller", "127.0.0.1:1"]     # a dry run connects nowhere


@pytest.fixture
def controller_properties(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ckpt.write_meta_properties(data, cluster_id="MkU3OEVBNTcwNTJENDM2Qg", node_id=3001,
                               directory_id="I2UKD6SvQaqrUeK4Lp8uEA")
    path = tmp_path / "new.properties"
    path.write_text(f"process.roles=controller\nnode.id=3001\ncontroller.listener.names=CONTROLLER\n"
                    f"listeners=CONTROLLER://127.0.0.1:19094\nlog.dirs={data}\n")
    return path


def _cases(props) -> list[list[str]]:
    return [
        [*NOWHERE, "--command-config", str(props), "add-controller", "--dry-run"],
        [*NOWHERE, "remove-controller", "-i", "3001", "-d", "I2UKD6SvQaqrUeK4Lp8uEA", "--dry-run"],
        [*NOWHERE, "remove-controller", "--controller-id", "-1", "--controller-directory-id", "I2UKD6SvQaqrUeK4Lp8uEA"],
        [*NOWHERE, "remove-controller", "-i", "3", "-d", "xx"],
        [*NOWHERE, "add-controller"],
    ]


def test_add_and_remove_controller_dry_runs_and_refusals_match_kafkas(kafka_ref, controller_properties):
    for args in _cases(controller_properties):
        theirs = kafka_ref.run_tool(TOOL, *args)
        code, out, err = run_command("metadata-quorum", None, *args)
        # Kafka's Admin logs a WARN for the unreachable bootstrap controller on stderr first
        their_err = [line for line in theirs.stderr.splitlines() if "WARN" not in line]
        assert (code, out) == (theirs.returncode, theirs.stdout), args
        assert err.splitlines() == their_err, args
