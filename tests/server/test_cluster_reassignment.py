"""Reassignment and election rules of the controller (kproto.server.cluster.election), the
metadata records they write (image.change_record) and the standalone node's answers to
AlterPartitionReassignments / ListPartitionReassignments, as Kafka 4.4's controller
answers for one broker (measured with tests/kafka_ref.py's broker)."""

from __future__ import annotations

import socket
import uuid

import pytest

from kproto import protocol as P
from kproto.errors import ErrorCode, KafkaError
from kproto.framing import frame
from kproto.server.cluster import image as I
from kproto.server.cluster.election import (
    NO_LEADER, PartitionRegistration, cancel_reassignment, complete_reassignment, start_reassignment,
    unclean_leader,
)
from kproto.server.cluster.operations import validate_assignment
from kproto.testing import Cluster
from tests.helpers import create_in_cluster, request_raw

ALL = {1, 2, 3, 4}


def test_a_move_adds_first_and_completes_when_the_target_is_in_sync():
    # PartitionReassignmentReplicas: replicas = target + removing; adding/removing sorted
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 5, 7)
    moving = start_reassignment(reg, [4, 3, 2], ALL)
    assert (moving.replicas, moving.isr, moving.adding, moving.removing) == ((4, 3, 2, 1), (1, 2, 3), (4,), (1,))
    # no replica left the set yet: the leader epoch stays, the partition epoch moves
    assert (moving.leader, moving.leader_epoch, moving.partition_epoch) == (1, 5, 8)
    assert complete_reassignment(moving, ALL) == moving          # 4 is not in the ISR yet
    joined = complete_reassignment(moving, ALL, isr=(1, 2, 3))
    assert joined == moving
    done = complete_reassignment(moving, ALL, isr=(1, 2, 3, 4))
    # the leader (1) left: the first target replica in the ISR leads, epochs bumped once
    assert (done.replicas, done.isr, done.adding, done.removing, done.leader) == ((4, 3, 2), (2, 3, 4), (), (), 4)
    assert (done.leader_epoch, done.partition_epoch) == (6, 9)


def test_a_reorder_or_a_shrink_within_the_isr_completes_at_once():
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 0, 0)
    reordered = start_reassignment(reg, [3, 2, 1], ALL)
    # no one leaves: the leader stays (a preferred election moves it, not the reassignment)
    assert (reordered.replicas, reordered.leader, reordered.reassigning, reordered.leader_epoch) == \
        ((3, 2, 1), 1, False, 0)
    shrunk = start_reassignment(reg, [2], ALL)
    assert (shrunk.replicas, shrunk.isr, shrunk.leader, shrunk.leader_epoch) == ((2,), (2,), 2, 1)
    assert start_reassignment(reg, [1, 2, 3], ALL) == reg


def test_cancel_reverts_to_the_original_replicas():
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 0, 0)
    moving = start_reassignment(reg, [4, 2, 3], ALL)
    assert moving.replicas == (4, 2, 3, 1)
    back = cancel_reassignment(moving, ALL, unclean=False, where="t:0")
    # originalReplicas is the replicas without the adding ones: Kafka keeps the target's order
    # (the removing replica last), not the order before the reassignment
    assert (back.replicas, back.isr, back.leader, back.adding, back.removing) == ((2, 3, 1), (1, 2, 3), 1, (), ())
    # an ISR holding only adding replicas needs an unclean election (PartitionReassignmentRevert)
    only_new = PartitionRegistration((4, 1), (4,), 4, 2, 2, adding=(4,), removing=(1,))
    with pytest.raises(KafkaError) as e:
        cancel_reassignment(only_new, ALL, unclean=False, where="t:0")
    assert e.value.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert str(e.value) == ("Unable to revert partition assignment for t:0 because it would require an "
                            "unclean leader election.")
    unclean = cancel_reassignment(only_new, ALL, unclean=True, where="t:0")
    assert (unclean.replicas, unclean.isr, unclean.leader) == ((1,), (1,), 1)


def test_unclean_election_only_without_a_leader():
    led = PartitionRegistration((1, 2), (1, 2), 1)
    assert unclean_leader(led, {1, 2})[1] is ErrorCode.ELECTION_NOT_NEEDED
    offline = PartitionRegistration((1, 2), (1,), NO_LEADER, 3, 3)
    assert unclean_leader(offline, {3})[1] is ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    elected, error = unclean_leader(offline, {2})
    assert error is ErrorCode.NONE and (elected.leader, elected.isr, elected.leader_epoch) == (2, (2,), 4)


@pytest.mark.parametrize("replicas,text", [
    ([], "The manual partition assignment includes an empty replica list."),
    ([1, 1], "The manual partition assignment includes the broker 1 more than once."),
    ([1, 2], "The manual partition assignment includes broker 2, but no such broker is registered."),
    ([-1], "The manual partition assignment includes broker -1, but no such broker is registered."),
])
def test_manual_assignment_checks_are_kafkas(replicas, text):
    # texts measured on Kafka 4.4's broker (a one-broker cluster, node 1)
    with pytest.raises(KafkaError) as e:
        validate_assignment(replicas, {1})
    assert e.value.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT and str(e.value) == text


def test_change_records_carry_the_reassignment_and_replay_to_the_same_registration():
    tid = uuid.uuid4()
    image = I.MetadataImage()
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 1, 5, 7)
    image.apply(I.TOPIC, type("R", (), {"name": "t", "topic_id": tid})(), 0)
    image.topics["t"].partitions[0] = reg
    for new in (start_reassignment(reg, [4, 3, 2], ALL),):
        done = complete_reassignment(new, ALL, isr=(1, 2, 3, 4))
        for old, nxt in ((reg, new), (new, done)):
            batch = I.records_batch([I.change_record(tid, 0, old, nxt)], leader_epoch=1)
            for offset, kind, r in I.iter_records(batch):
                image.apply(kind, r, offset)
            assert image.partition("t", 0) == nxt


def test_malformed_alter_partition_reassignments_on_a_cluster(tmp_path):
    """Bad input through a broker to the controller: each bad partition entry is refused with
    Kafka's error and message and the others stay untouched; a frame cut short, or claiming
    2^31 - 1 topics or replicas it does not carry, closes that connection only (nothing is
    allocated for what was not sent) and the next request is answered."""
    with Cluster(brokers=2, data_dir=tmp_path / "c") as c:
        bs = c.bootstrap_servers.split(",")[0]
        create_in_cluster(c, "t", [[1, 2]])
        key = P.alter_partition_reassignments.API.key

        def alter(topics: list) -> tuple:
            r = request_raw(bs, key, 0, {"timeout_ms": 10000, "topics": topics})
            return r.error_code, [(t.name, [(p.partition_index, p.error_code, p.error_message) for p in t.partitions])
                                  for t in r.responses]

        def one(partition: int, replicas, name: str = "t") -> list:
            return [{"name": name, "partitions": [{"partition_index": partition, "replicas": replicas}]}]

        assert alter([]) == (0, [])
        assert alter([{"name": "t", "partitions": []}]) == (0, [("t", [])])
        assert alter(one(-1, [1])) == (0, [("t", [(-1, 3, "Unable to find partition t:-1.")])])
        assert alter(one(0, [])) == (0, [("t", [(0, 39, "The manual partition assignment includes an empty "
                                                        "replica list.")])])
        assert alter(one(0, [-1])) == (0, [("t", [(0, 39, "The manual partition assignment includes broker -1, "
                                                          "but no such broker is registered.")])])
        assert alter(one(0, [2, 2])) == (0, [("t", [(0, 39, "The manual partition assignment includes the broker 2 "
                                                            "more than once.")])])
        assert alter(one(0, [1], name="")) == (0, [("", [(0, 3, "Unable to find a topic named .")])])
        assert alter(one(0, None)) == (0, [("t", [(0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)])])
        whole = P.encode_request(key, 0, 1, "raw", {"timeout_ms": 10000, "topics": one(0, [1, 2])})
        count_at = whole.index(b"\x02t") - 1        # the topics count, then the name "t"
        replicas_at = whole.index(b"\x02t") + 2 + 4  # the name, the partitions count, the index
        for bad in (whole[:-3], whole[:count_at] + b"\xff\xff\xff\xff\x07",
                    whole[:replicas_at] + b"\xff\xff\xff\xff\x07"):
            with socket.create_connection(tuple(bs.split(":")), timeout=30) as s:
                s.sendall(frame(bad))
                assert s.recv(1) == b""             # closed, unanswered
            assert alter(one(0, [1, 2])) == (0, [("t", [(0, 0, None)])])     # served; a no-op target
        assert tuple(c.partition("t", 0).replicas) == (1, 2)
        assert not any("Traceback" in n.log_text() for n in c.nodes.values())
