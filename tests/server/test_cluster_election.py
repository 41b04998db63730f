"""The controller's placement and election rules (kproto.server.cluster.election)."""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode, KafkaError
from kproto.server.cluster.election import (
    NO_LEADER, PartitionRegistration, assign_replicas, elect_leader, fence_broker, preferred_leader,
    unfence_broker,
)


def test_rack_unaware_assignment_is_kafkas():
    # AdminUtils.assignReplicasToBrokersRackUnaware with fixedStartIndex 0 over brokers 0..4
    # (the expected map of Kafka's own assignment test).
    assert assign_replicas(10, 3, [0, 1, 2, 3, 4]) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_assignment_spreads_leaders_and_never_repeats_a_broker():
    got = assign_replicas(6, 3, [1, 2, 3])
    assert [r[0] for r in got.values()] == [1, 2, 3, 1, 2, 3]
    assert all(len(set(r)) == 3 for r in got.values())


@pytest.mark.parametrize("rf,text", [
    (0, "Replication factor must be larger than 0."),
    (4, "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be "
        "reached because only 3 broker(s) are registered or some brokers have all their log directories "
        "cordoned."),   # Kafka 4.4's StripedReplicaPlacer, measured
])
def test_impossible_replication_factor(rf, text):
    with pytest.raises(KafkaError) as e:
        assign_replicas(1, rf, [1, 2, 3])
    assert e.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR and str(e.value) == text


def test_election_prefers_assignment_order_within_the_isr():
    assert elect_leader((1, 2, 3), (2, 3), {1, 2, 3}, unclean=False) == 2
    assert elect_leader((1, 2, 3), (3,), {1, 2}, unclean=False) == NO_LEADER
    assert elect_leader((1, 2, 3), (3,), {1, 2}, unclean=True) == 1


def test_fencing_the_leader_moves_leadership_and_bumps_epochs():
    reg = PartitionRegistration.new([1, 2, 3], {1, 2, 3})
    assert (reg.leader, reg.isr, reg.leader_epoch) == (1, (1, 2, 3), 0)
    after = fence_broker(reg, 1, {2, 3}, unclean=False)
    assert (after.leader, after.isr, after.leader_epoch, after.partition_epoch) == (2, (2, 3), 1, 1)
    follower_gone = fence_broker(after, 3, {2}, unclean=False)
    assert (follower_gone.leader, follower_gone.isr, follower_gone.leader_epoch) == (2, (2,), 1)


def test_the_isr_is_never_emptied_and_the_partition_goes_offline():
    reg = PartitionRegistration((1, 2, 3), (2,), 2, 4, 7)
    offline = fence_broker(reg, 2, {1, 3}, unclean=False)
    assert (offline.leader, offline.isr, offline.leader_epoch) == (NO_LEADER, (2,), 5)
    # the last ISR member returns: it leads again
    back = unfence_broker(offline, 2, {1, 2, 3}, unclean=False)
    assert (back.leader, back.isr, back.leader_epoch) == (2, (2,), 6)
    # or unclean election takes an out-of-sync replica, which becomes the ISR
    unclean = fence_broker(reg, 2, {1, 3}, unclean=True)
    assert (unclean.leader, unclean.isr) == (1, (1,))


def test_preferred_election():
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 2, 3, 3)
    moved, error = preferred_leader(reg, {1, 2, 3})
    assert error is ErrorCode.NONE and (moved.leader, moved.leader_epoch) == (1, 4)
    assert preferred_leader(moved, {1, 2, 3})[1] is ErrorCode.ELECTION_NOT_NEEDED
    assert preferred_leader(reg, {2, 3})[1] is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert preferred_leader(PartitionRegistration((1, 2), (2,), 2), {1, 2})[1] is \
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
