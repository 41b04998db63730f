"""The partition replication rules (kproto.server.cluster.replica): the acks=all
table against an independent grid, the follower fetch / ISR / high-watermark
rules of Partition.scala by example, the leader-epoch cache and truncation of
KIP-101/279, and a Hypothesis machine over arbitrary fetch/append/shrink orders."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kproto.errors import ErrorCode
from kproto.server.cluster.replica import (
    ACKS_OUTCOMES, UNDEFINED_EPOCH, UNDEFINED_OFFSET, EpochEndOffset, LeaderEpochCache, PartitionLeader,
    acks_all_outcome, truncation_offset,
)

LAG = 10_000


def leader(isr=(1, 2, 3), leo=0, hw=0, now=0, min_isr=2) -> PartitionLeader:
    return PartitionLeader.become_leader(1, (1, 2, 3), frozenset(isr), 5, leo, hw, now,
                                         min_insync_replicas=min_isr, replica_lag_time_max_ms=LAG)


# Written from Partition.checkEnoughReplicasReachOffset's text, not from the table.
def test_acks_table_is_kafkas_grid():
    for reached, enough in itertools.product((True, False), repeat=2):
        done, error = ACKS_OUTCOMES[(reached, enough)]
        assert done is reached
        assert error == (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND if reached and not enough else ErrorCode.NONE)
    assert len(ACKS_OUTCOMES) == 4


@pytest.mark.parametrize("hw,required,isr,min_isr,expected", [
    (10, 10, 2, 2, (True, ErrorCode.NONE)),
    (9, 10, 3, 2, (False, ErrorCode.NONE)),
    (10, 10, 1, 2, (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)),
    (11, 10, 1, 1, (True, ErrorCode.NONE)),
])
def test_acks_all_outcome(hw, required, isr, min_isr, expected):
    assert acks_all_outcome(hw, required, isr, min_isr) == expected


def test_append_refused_below_min_insync_only_for_acks_all():
    p = leader(isr=(1, 2), min_isr=3)
    assert p.append_error(-1) is ErrorCode.NOT_ENOUGH_REPLICAS
    assert p.append_error(1) is ErrorCode.NONE and p.append_error(0) is ErrorCode.NONE
    assert leader(isr=(1, 2, 3), min_isr=3).append_error(-1) is ErrorCode.NONE


def test_high_watermark_is_the_isr_minimum_and_acks_all_waits_for_it():
    p = leader()
    assert not p.on_append(10)
    assert p.acks_all(10) == (False, ErrorCode.NONE)
    assert not p.on_follower_fetch(2, 10, now=1).high_watermark_advanced   # 3 still at -1
    r = p.on_follower_fetch(3, 7, now=1)
    assert r.high_watermark_advanced and p.high_watermark == 7
    assert p.acks_all(10) == (False, ErrorCode.NONE)
    assert p.on_follower_fetch(3, 10, now=2).high_watermark_advanced and p.high_watermark == 10
    assert p.acks_all(10) == (True, ErrorCode.NONE)


def test_high_watermark_never_moves_back():
    p = leader(leo=20, hw=20)
    p.on_follower_fetch(2, 5, now=1)
    p.on_follower_fetch(3, 5, now=1)
    assert p.high_watermark == 20


def test_lagging_follower_leaves_the_isr_after_the_lag_time_and_frees_the_hw():
    p = leader()
    p.on_append(10)
    p.on_follower_fetch(2, 10, now=100)
    p.on_follower_fetch(3, 0, now=100)          # 3 fetches but never catches up
    assert p.high_watermark == 0
    assert p.out_of_sync(now=LAG) == frozenset()             # became leader at 0: a full lag time
    assert p.out_of_sync(now=LAG + 1) == {3}
    assert p.set_isr(p.isr - {3}) and p.high_watermark == 10
    assert p.acks_all(10) == (True, ErrorCode.NONE)          # ISR {1,2} >= min 2


def test_isr_shrink_below_min_holds_the_hw_or_is_not_enough_replicas_after_append():
    p = leader(min_isr=3)
    p.on_append(4)
    p.on_follower_fetch(2, 4, now=1)
    p.on_follower_fetch(3, 0, now=1)
    # KIP-966 (Partition.maybeIncrementLeaderHW): under min ISR the HW stays, the write waits
    assert not p.set_isr(frozenset({1, 2}))
    assert (p.high_watermark, p.acks_all(4)) == (0, (False, ErrorCode.NONE))
    # the HW reached the write before the ISR shrank: appended, but under min ISR after
    q = leader(min_isr=3)
    q.on_append(4)
    q.on_follower_fetch(2, 4, now=1)
    q.on_follower_fetch(3, 4, now=1)
    assert q.high_watermark == 4
    q.set_isr(frozenset({1, 2}))
    assert q.acks_all(4) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)


def test_caught_up_as_of_the_previous_fetch():
    """Replica.updateFetchStateOrThrow: reaching the leader's LEO of the previous
    fetch counts as caught up at that fetch's time, not now."""
    p = leader(isr=(1, 2))
    p.on_append(10)
    p.on_follower_fetch(2, 10, now=5_000)       # at the end: caught up at 5000
    p.on_append(20)
    p.on_follower_fetch(2, 10, now=14_000)      # behind 20, but >= the previous fetch's LEO 10
    assert p.followers[2].last_caught_up_ms == 5_000
    p.on_follower_fetch(2, 12, now=16_000)      # >= 20? no; >= previous fetch's LEO 20? no
    assert p.followers[2].last_caught_up_ms == 5_000
    assert p.out_of_sync(now=15_001) == {2}


def test_follower_joins_the_isr_at_the_hw_and_past_the_epoch_start():
    p = leader(isr=(1, 2), leo=50, hw=50)       # epoch 5 starts at 50
    p.on_follower_fetch(2, 50, now=1)
    assert p.on_follower_fetch(3, 49, now=1).expand is None
    assert p.on_follower_fetch(3, 50, now=2).expand == 3
    assert p.on_follower_fetch(2, 50, now=2).expand is None           # already in


def test_unknown_follower_is_the_callers_error():
    with pytest.raises(KeyError):
        leader().on_follower_fetch(9, 0, now=0)


def test_epoch_cache_end_offsets():
    c = LeaderEpochCache([(0, 0), (2, 10), (5, 30)])
    assert c.end_offset_for(5, 40) == EpochEndOffset(5, 40)
    assert c.end_offset_for(7, 40) == EpochEndOffset(5, 40)
    assert c.end_offset_for(2, 40) == EpochEndOffset(2, 30)
    assert c.end_offset_for(3, 40) == EpochEndOffset(2, 30)        # greatest epoch not above 3
    assert c.end_offset_for(0, 40) == EpochEndOffset(0, 10)
    # LeaderEpochFileCache.endOffsetFor: an epoch older than every entry ends where the first
    # one starts (the epoch asked echoed); with no entry, or asked UNDEFINED_EPOCH, undefined
    assert LeaderEpochCache([(1, 0)]).end_offset_for(0, 5) == EpochEndOffset(0, 0)
    assert LeaderEpochCache([(3, 7)]).end_offset_for(1, 9) == EpochEndOffset(1, 7)
    assert LeaderEpochCache([]).end_offset_for(0, 5) == EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert c.end_offset_for(UNDEFINED_EPOCH, 40) == EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_OFFSET)


def test_a_follower_drops_a_batch_of_an_epoch_its_new_leader_never_had():
    """Found by tests/e2e/test_cluster_chaos.py: the epoch-0 leader died with a batch not yet
    committed that one follower had fetched; the other, elected in epoch 1, wrote the producer's
    retry of it at offset 0. The follower asks where epoch 0 ends: at 0, where epoch 1 starts,
    so it truncates and fetches epoch 1's batch (an UNDEFINED answer had left the old one)."""
    leader = LeaderEpochCache([(1, 0)])
    follower = LeaderEpochCache([(0, 0)])
    assert truncation_offset(follower, 162, leader.end_offset_for(follower.latest_epoch, 162)) == 0


def test_epoch_cache_assign_drops_what_a_truncated_log_wrote():
    c = LeaderEpochCache([(0, 0), (2, 10)])
    c.assign(2, 15)                       # older or equal epoch: nothing
    assert c.entries == [(0, 0), (2, 10)]
    c.assign(3, 10)                       # epoch 2 wrote nothing that stayed
    assert c.entries == [(0, 0), (3, 10)]
    c.truncate_from_end(10)
    assert c.entries == [(0, 0)]


def test_truncation_of_a_deposed_leaders_log():
    """KIP-101's example: the old leader wrote offsets 10..14 in epoch 1 that no
    follower got; the new leader's epoch 2 starts at 10."""
    mine = LeaderEpochCache([(0, 0), (1, 10)])
    assert truncation_offset(mine, 15, EpochEndOffset(1, 10)) == 10
    # the leader never had epoch 1: it answers epoch 0 ending at 10
    assert truncation_offset(mine, 15, EpochEndOffset(0, 10)) == 10
    # the leader's epoch 0 ends later than ours: our epoch 0 end bounds it
    assert truncation_offset(mine, 15, EpochEndOffset(0, 12)) == 10
    # in agreement: nothing to drop
    assert truncation_offset(mine, 15, EpochEndOffset(1, 15)) == 15
    assert truncation_offset(mine, 15, EpochEndOffset(1, 20)) == 15
    assert truncation_offset(mine, 15, EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_OFFSET)) == 15


class LeaderMachine(RuleBasedStateMachine):
    """Whatever the order of appends, fetches and ISR changes: the HW never moves
    back, never passes the LEO or any ISR member's LEO, and acks=all is done
    exactly when the HW reached the write."""

    def __init__(self):
        super().__init__()
        self.now = 0
        self.p = leader()
        self.ends = {2: -1, 3: -1}
        self.last_hw = 0

    @rule(n=st.integers(0, 5))
    def append(self, n):
        self.p.on_append(self.p.log_end_offset + n)

    @rule(r=st.sampled_from([2, 3]), back=st.integers(0, 5), dt=st.integers(0, 8000))
    def fetch(self, r, back, dt):
        self.now += dt
        offset = max(self.ends[r], min(self.p.log_end_offset, self.ends[r] + 1 + back))
        offset = max(offset, 0)
        self.ends[r] = offset
        result = self.p.on_follower_fetch(r, offset, self.now)
        if result.expand is not None:
            self.p.set_isr(self.p.isr | {result.expand})

    @rule(dt=st.integers(0, 12000))
    def shrink(self, dt):
        self.now += dt
        self.p.set_isr(self.p.isr - self.p.out_of_sync(self.now))

    @invariant()
    def hw_rules(self):
        p = self.p
        assert self.last_hw <= p.high_watermark <= p.log_end_offset
        for r in p.isr - {1}:
            assert p.high_watermark <= max(p.followers[r].log_end_offset, self.last_hw)
        self.last_hw = p.high_watermark
        assert p.acks_all(p.high_watermark)[0] and not p.acks_all(p.high_watermark + 1)[0]


TestLeaderMachine = LeaderMachine.TestCase
TestLeaderMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
