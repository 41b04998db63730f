"""KIP-853 dynamic controller quorums on real processes: a controller formatted as the
only voter (``kproto storage format --standalone``: kraft.version 1), two more formatted
``--no-initial-controllers`` and started with ``controller.quorum.bootstrap.servers``,
fetching as observers; ``kproto metadata-quorum add-controller`` grows the quorum to three one
voter at a time, ``remove-controller`` shrinks it back, the log committing all along
and DescribeQuorum naming the voters. Every wait is on the event (a DescribeQuorum
answer), timeouts only as safety nets."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kproto.common import CLUSTER_METADATA_TOPIC_NAME
from kproto.log import checkpoint as ckpt
from kproto.log.manager import format_topic_id, parse_topic_id
from kproto.schemas import protocol as P
from kproto.testing import Broker
from kproto.testing.cluster import _free_port
from kproto.tools.metadata_quorum import controller_request
from tests.tools.helpers import run_command

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


class Controller:
    def __init__(self, root: Path, node_id: int, bootstrap_port: int | None = None, *, standalone: bool = False):
        self.node_id, self.port = node_id, _free_port()
        self.data = root / f"node-{node_id}"
        self.config = {"process.roles": "controller", "node.id": str(node_id), "controller.listener.names": "CONTROLLER",
                       "listeners": f"CONTROLLER://127.0.0.1:{self.port}",
                       "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                       "controller.quorum.bootstrap.servers": f"127.0.0.1:{bootstrap_port or self.port}"}
        self.properties = root / f"controller-{node_id}.properties"
        self.properties.write_text("".join(f"{k}={v}\n" for k, v in {**self.config, "log.dirs": self.data}.items()))
        # kafka-storage.sh format: the first controller the only voter, the others none
        code, out, err = run_command("storage", None, "format", "-t", CLUSTER_ID, "-c", str(self.properties),
                                     "--standalone" if standalone else "--no-initial-controllers")
        assert code == 0 and out.endswith(f"Formatting {'dynamic metadata voter' if standalone else 'metadata'} "
                                          f"directory {self.data} with metadata.version 4.4-IV2.\n"), err
        self.directory_id = parse_topic_id(ckpt.read_meta_properties(self.data)["directory.id"])
        self.process = Broker(self.data, self.config, control=False, port=self.port)


def describe(bootstrap: str):
    body = controller_request(bootstrap, P.describe_quorum.API.key, 2, {
        "topics": [{"topic_name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{"partition_index": 0}]}]})
    # None while no controller is active (NOT_CONTROLLER: a leader elected, not caught up yet)
    return body.topics[0].partitions[0] if body.topics else None


def wait_for(bootstrap: str, check, what: str, timeout: float = 120):
    """Until ``check(DescribeQuorum's partition)`` holds (asked again on every answer)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            p = describe(bootstrap)
            if p is not None and not p.error_code and check(p):
                return p
        except ConnectionError:
            pass
        assert time.monotonic() < deadline, f"{what}: not reached in {timeout}s"
        time.sleep(0.05)


def caught_up(node: int):
    def check(p) -> bool:
        leader = next(v for v in p.current_voters if v.replica_id == p.leader_id)
        return any(o.replica_id == node and o.log_end_offset == leader.log_end_offset for o in p.observers)
    return check


@pytest.fixture
def controllers(tmp_path):
    first = Controller(tmp_path, 3000, standalone=True)
    nodes = [first] + [Controller(tmp_path, i, first.port) for i in (3001, 3002)]
    try:
        for c in nodes:
            c.process.start()
        yield nodes
    finally:
        for c in nodes:
            c.process.stop()


def test_a_one_voter_quorum_grows_to_three_with_add_controller_and_shrinks_with_remove_controller(controllers):
    first, second, third = controllers
    bootstrap = ",".join(f"127.0.0.1:{c.port}" for c in controllers)
    p = wait_for(bootstrap, lambda p: p.leader_id == 3000 and p.high_watermark > 0, "node 3000 leading")
    assert [(v.replica_id, v.replica_directory_id) for v in p.current_voters] == [(3000, first.directory_id)]

    for new in (second, third):
        wait_for(bootstrap, caught_up(new.node_id), f"node {new.node_id} caught up as an observer")
        code, out, err = run_command("metadata-quorum", None, "--bootstrap-controller", bootstrap,
                                     "--command-config", str(new.properties), "add-controller")
        assert (code, err) == (0, "")
        assert out == (f"Added controller {new.node_id} with directory id {format_topic_id(new.directory_id)} and "
                       f"endpoints: CONTROLLER://127.0.0.1:{new.port}\n")
    ids = {c.node_id: c.directory_id for c in controllers}
    p = wait_for(bootstrap, lambda p: len(p.current_voters) == 3, "three voters")
    assert sorted((v.replica_id, v.replica_directory_id) for v in p.current_voters) == sorted(ids.items())
    # the metadata still commits, on a majority of three: every voter reaches the high watermark
    hw = p.high_watermark
    wait_for(bootstrap, lambda p: p.high_watermark >= hw and all(v.log_end_offset >= hw for v in p.current_voters),
             "every voter at the high watermark")
    code, out, _ = run_command("metadata-quorum", None, "--bootstrap-controller", bootstrap, "describe",
                               "--replication")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[1:]]
    assert sorted((int(r[0]), r[1], r[-1]) for r in rows) == sorted(
        [(3000, format_topic_id(first.directory_id), "Leader")] +
        [(c.node_id, format_topic_id(c.directory_id), "Follower") for c in (second, third)])

    # a duplicate is Kafka's DUPLICATE_VOTER, one line
    code, out, err = run_command("metadata-quorum", None, "--bootstrap-controller", bootstrap,
                                 "--command-config", str(third.properties), "add-controller")
    assert code == 1 and out == "" and err.startswith(
        "org.apache.kafka.common.errors.DuplicateVoterException: The voter id for ReplicaKey(id=3002")

    # shrink: remove the leader itself; one of the other two leads the remaining pair
    epoch = describe(bootstrap).leader_epoch
    code, out, err = run_command("metadata-quorum", None, "--bootstrap-controller", bootstrap, "remove-controller",
                                 "--controller-id", "3000", "--controller-directory-id",
                                 format_topic_id(first.directory_id))
    assert (code, out, err) == (0, f"Removed KRaft controller 3000 with directory id "
                                   f"{format_topic_id(first.directory_id)}\n", "")
    # the new leader's epoch commits on the pair's majority: both hold its whole log; the
    # removed controller fetches on as an observer
    def pair_committed(p) -> bool:
        leader = next((v for v in p.current_voters if v.replica_id == p.leader_id), None)
        return (p.leader_epoch > epoch and p.leader_id in (3001, 3002) and leader is not None
                and sorted(v.replica_id for v in p.current_voters) == [3001, 3002]
                and p.high_watermark == leader.log_end_offset
                and all(v.log_end_offset == p.high_watermark for v in p.current_voters)
                and [o.replica_id for o in p.observers] == [3000])
    wait_for(bootstrap, pair_committed, "3001 and 3002 the voters, one leading a committed epoch, 3000 observing")
