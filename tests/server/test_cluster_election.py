"""The controller's placement and election rules (kproto.server.cluster.election)."""

from __future__ import annotations

from collections import Counter

import pytest

from kproto.errors import ErrorCode, KafkaError
from kproto.server.cluster.election import (
    NO_LEADER, PartitionRegistration, assign_replicas, assign_replicas_rack_aware, elect_leader, fence_broker, preferred_leader, rebuild,
    unclean_shutdown, unfence_broker,
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


#: TopicCommandTest.generate()'s racks, broker ids 1-6 for 0-5
RACKS = {1: "rack1", 2: "rack2", 3: "rack2", 4: "rack1", 5: "rack3", 6: "rack3"}


def test_rack_aware_assignment_stripes_racks():
    # StripedReplicaPlacer with every offset at 0: racks in name order, the first replica from
    # the next rack each partition, the others one per following rack
    got = assign_replicas_rack_aware(6, 3, RACKS)
    assert got == {0: [1, 2, 5], 1: [3, 6, 4], 2: [5, 1, 2], 3: [4, 3, 6], 4: [2, 5, 1], 5: [6, 4, 3]}
    assert assign_replicas_rack_aware(2, 2, RACKS, first_partition=18) == {18: [1, 2], 19: [3, 6]}


def test_rack_aware_assignment_spreads_racks_leaders_and_replicas():
    # TopicCommandTest.checkReplicaDistribution's three checks, 18 partitions of RF 3 over 6 brokers
    got = assign_replicas_rack_aware(18, 3, RACKS)
    assert all(len({RACKS[b] for b in r}) == 3 for r in got.values())
    assert sorted(Counter(r[0] for r in got.values()).values()) == [3] * 6
    assert sorted(Counter(b for r in got.values() for b in r).values()) == [9] * 6


def test_fewer_racks_than_replicas_reuse_racks_without_repeating_a_broker():
    got = assign_replicas_rack_aware(4, 3, {1: "a", 2: "a", 3: "b", 4: None})
    # each rack list starts one further per partition: rack a gives 1, then 2, then 1
    assert got == {0: [4, 1, 3], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 2, 3]}
    with pytest.raises(KafkaError):
        assign_replicas_rack_aware(1, 5, {1: "a", 2: "a", 3: "b", 4: None})


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


def elr_state(reg: PartitionRegistration) -> tuple:
    return reg.leader, reg.isr, reg.elr, reg.last_known_elr


def test_a_shrink_to_the_minimum_keeps_no_elr():
    # RF 3, min.insync.replicas 2, a follower fenced: the ISR stays at the minimum
    reg = PartitionRegistration.new([2, 3, 1], {1, 2, 3})
    assert elr_state(fence_broker(reg, 3, {1, 2}, unclean=False, min_isr=2)) == (2, (2, 1), (), ())


def test_a_shrink_below_the_minimum_moves_the_dropped_replica_to_the_elr():
    # RF 2, min.insync.replicas 2, the leader fenced (PartitionChangeBuilder.maybePopulateTargetElr)
    reg = PartitionRegistration.new([3, 2], {1, 2, 3})
    after = fence_broker(reg, 3, {1, 2}, unclean=False, min_isr=2)
    assert elr_state(after) == (2, (2,), (3,), ())
    assert (after.leader_epoch, after.partition_epoch) == (1, 1)


def test_the_last_isr_member_goes_to_the_elr_and_is_the_last_known_leader():
    # RF 1 (effective min ISR 1): the ISR empties, the leader is kept as LastKnownElr
    reg = PartitionRegistration.new([3], {1, 2, 3})
    offline = fence_broker(reg, 3, {1, 2}, unclean=False, min_isr=1)
    assert elr_state(offline) == (NO_LEADER, (), (3,), (3,))
    # it comes back: elected from the ELR, it alone is the ISR; LastKnownElr cleared
    back = unfence_broker(offline, 3, {1, 2, 3}, unclean=False, min_isr=1)
    assert elr_state(back) == (3, (3,), (), ())
    assert (back.leader_epoch, back.partition_epoch) == (2, 2)


def test_an_empty_isr_elects_from_the_elr_in_assignment_order():
    reg = PartitionRegistration((1, 2, 3), (1,), 1, 4, 9, elr=(2, 3))
    after = fence_broker(reg, 1, {2, 3}, unclean=False, min_isr=2)
    # the old ISR member joins the ELR (fenced or not), 2 leads and alone is the ISR
    assert elr_state(after) == (2, (2,), (1, 3), ())


def test_an_isr_back_at_the_minimum_clears_the_elr():
    reg = PartitionRegistration.new([1, 2, 3], {1, 2, 3})
    shrunk = rebuild(reg, (1,), {1, 2, 3}, min_isr=2, unclean=False)       # the leader's AlterPartition
    assert elr_state(shrunk) == (1, (1,), (2, 3), ())
    assert elr_state(rebuild(shrunk, (1, 2), {1, 2, 3}, min_isr=2, unclean=False)) == (1, (1, 2), (), ())


def test_a_new_incarnation_leaves_the_elr_and_the_last_known_leader_is_elected():
    # handleBrokerUncleanShutdown: out of the ELR; ISR and ELR empty, LastKnownElr [3]: balanced
    # recovery elects it (PartitionChangeBuilder.canElectLastKnownLeader) and it becomes the ISR
    offline = PartitionRegistration((3,), (), NO_LEADER, 1, 1, elr=(3,), last_known_elr=(3,))
    assert elr_state(unclean_shutdown(offline, 3, {1, 2}, min_isr=1, unclean=False)) == (3, (3,), (), ())
    # a replica in neither list is left alone
    assert unclean_shutdown(offline, 2, {1}, min_isr=1, unclean=False) is offline


def test_an_unclean_election_clears_the_elr():
    reg = PartitionRegistration((1, 2, 3), (1,), 1, 0, 0, elr=(2,))
    after = rebuild(reg, (), {3}, min_isr=2, unclean=True)
    assert elr_state(after) == (3, (3,), (), ())


def test_preferred_election():
    reg = PartitionRegistration((1, 2, 3), (1, 2, 3), 2, 3, 3)
    moved, error = preferred_leader(reg, {1, 2, 3})
    assert error is ErrorCode.NONE and (moved.leader, moved.leader_epoch) == (1, 4)
    assert preferred_leader(moved, {1, 2, 3})[1] is ErrorCode.ELECTION_NOT_NEEDED
    assert preferred_leader(reg, {2, 3})[1] is ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert preferred_leader(PartitionRegistration((1, 2), (2,), 2), {1, 2})[1] is \
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
