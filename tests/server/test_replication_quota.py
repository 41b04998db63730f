"""Replication throttling's rules without a broker (issue 27): Kafka's ReplicationQuotaManager
over a SimpleRate (its own unit test's numbers, ReplicationQuotaManagerTest), the throttled
replica lists as ConfigHandler parses them and ThrottledReplicaListValidator refuses them, the
throttled rates' checks, and which replicas and brokers kafka-reassign-partitions.sh throttles
(ReassignPartitionsCommand.calculateProposedMoveMap / calculateLeaderThrottles /
calculateFollowerThrottles). The time is passed in: nothing here waits."""

from __future__ import annotations

import pytest

from kproto.errors import InvalidConfigError, InvalidRequestError
from kproto.server.config import BrokerConfig
from kproto.server.dynamic_config import validate
from kproto.server.quotas import ALL_REPLICAS, UNBOUNDED_RATE, ReplicationQuotaManager, throttled_partitions
from kproto.tools.reassign_partitions import proposed_moves, throttled_replicas
from kproto.topic_config import LogConfig

LIST_FORMAT = ("must be the literal '*' or a list of replicas in the following format: "
               "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def test_quota_exceeded_then_back_below_its_bound_as_time_passes():
    """ReplicationQuotaManagerTest.shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses: 10
    windows of 1 s, a bound of 100 B/s; the first measure opens the first window."""
    q = ReplicationQuotaManager(samples=10, window_s=1)
    q.update_quota(100)
    assert not q.is_quota_exceeded(0)
    q.record(1, 1500)
    assert not q.is_quota_exceeded(1500)
    q.record(149, 1500)
    assert not q.is_quota_exceeded(1500)          # 150 B over 1.5 s
    q.record(1, 1500)
    assert q.rate.measure(1500) == 151 / 1.5
    assert q.is_quota_exceeded(1500)
    assert not q.is_quota_exceeded(2000)
    assert q.rate.measure(2000) == pytest.approx(151 / 2)
    q.record(99, 2500)
    assert q.rate.measure(2500) == 250 / 2.5
    assert not q.is_quota_exceeded(2500)
    q.record(1, 2500)
    assert q.is_quota_exceeded(2500)
    assert q.rate.measure(4500) == 251 / 4.5
    assert not q.is_quota_exceeded(4500)


def test_a_first_burst_counts_over_one_whole_window():
    """SimpleRate: never over less than one window, so a burst right after the first measure
    is its bytes per window, not per millisecond."""
    q = ReplicationQuotaManager(samples=11, window_s=1)
    q.update_quota(1000)
    q.record(1000, 0)
    assert (q.rate.measure(0), q.is_quota_exceeded(0)) == (1000, False)
    q.record(1, 10)
    assert q.is_quota_exceeded(10)


def test_unbounded_until_a_rate_is_set():
    q = ReplicationQuotaManager(samples=11, window_s=1)
    assert q.bound == UNBOUNDED_RATE == 2**63 - 1
    q.record(2**40, 0)
    assert not q.is_quota_exceeded(0)


def test_only_the_listed_replicas_are_throttled():
    """shouldThrottleOnlyDefinedReplicas, shouldSupportWildcardThrottledReplicas."""
    q = ReplicationQuotaManager(samples=11, window_s=1)
    q.mark_throttled("topic1", frozenset({1, 2, 3}))
    assert [q.is_throttled("topic1", p) for p in (1, 2, 3, 4)] == [True, True, True, False]
    q.mark_throttled("MyTopic", ALL_REPLICAS)
    assert (q.is_throttled("MyTopic", 0), q.is_throttled("MyOtherTopic", 0)) == (True, False)
    q.remove_throttle("topic1")
    assert not q.is_throttled("topic1", 1)


def test_throttled_partitions_are_those_listed_on_this_broker():
    """ConfigHandler.parseThrottledPartitions: broker 2 of "0:1,1:2,2:2" throttles 1 and 2."""
    assert throttled_partitions("0:1,1:2,2:2", 2) == frozenset({1, 2})
    assert throttled_partitions(" 0:1 , 3:2 ", 2) == frozenset({3})
    assert throttled_partitions("0:1", 2) == frozenset()
    assert throttled_partitions("*", 7) is ALL_REPLICAS


@pytest.mark.parametrize("value, shown", [("0:a", "[0:a]"), ("0:1,1", "[0:1, 1]"), ("*,0:1", "[*, 0:1]"),
                                          ("0-1", "[0-1]")])
def test_a_malformed_throttled_replica_list_is_refused_in_kafkas_words(value, shown):
    for name in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
        with pytest.raises(InvalidConfigError) as e:
            LogConfig.from_props({name: value})
        assert str(e.value) == f"Invalid value {shown} for configuration {name}: {name} {LIST_FORMAT}"


@pytest.mark.parametrize("value", ["*", "0:1,1:2", " 0:1 , 10:3 ", "", "0:1,"])
def test_well_formed_throttled_replica_lists(value):
    LogConfig.from_props({"leader.replication.throttled.replicas": value})


@pytest.mark.parametrize("value, message", [
    ("-1", "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"),
    ("x", "Invalid value x for configuration leader.replication.throttled.rate: Not a number of type LONG"),
    ("1.5", "Invalid value 1.5 for configuration leader.replication.throttled.rate: Not a number of type LONG")])
def test_a_bad_throttled_rate_is_refused_in_kafkas_words(value, message):
    with pytest.raises(InvalidRequestError) as e:
        validate({"leader.replication.throttled.rate": value}, per_broker=True)
    assert str(e.value) == message


def test_throttled_rates_are_dynamic_at_either_level():
    for per_broker in (True, False):
        validate({"leader.replication.throttled.rate": "0", "follower.replication.throttled.rate": "1048576",
                  "replica.alter.log.dirs.io.max.bytes.per.second": "10"}, per_broker=per_broker)
    # described once set, not before (they are not KafkaConfig definitions)
    assert "leader.replication.throttled.rate" not in BrokerConfig.from_props({}).values
    assert BrokerConfig.from_props({"leader.replication.throttled.rate": "5"})[
        "leader.replication.throttled.rate"] == 5


def test_the_tool_throttles_sources_as_leaders_and_new_replicas_as_followers():
    """A move of t-0 from 1,2 to 2,3 and of t-10 from 1 to 4, while u-0 is already moving from
    5 to 6: u's move is throttled again as it is in flight; the lists in string order."""
    ongoing = {("u", 0): ([6, 5], [6], [5])}
    moves = proposed_moves(ongoing, {("t", 0): [2, 3], ("t", 10): [4]}, {("t", 0): [1, 2], ("t", 10): [1]})
    assert moves == {("u", 0): ({5}, {6}), ("t", 0): ({1, 2}, {3}), ("t", 10): ({1}, {4})}
    assert throttled_replicas(moves) == {"u": ("0:5", "0:6"), "t": ("0:1,0:2,10:1", "0:3,10:4")}
    # a partition already moving keeps its sources when moved again
    assert proposed_moves(ongoing, {("u", 0): [7]}, {("u", 0): [6, 5]}) == {("u", 0): ({5}, {7})}
