"""LogManager: meta.properties, topics and their persisted configs, checkpoints,
deletion, background passes."""

from __future__ import annotations

import json
import re

import pytest

from kproto.errors import ErrorCode, InvalidConfigError, KafkaError, TopicAlreadyExistsError
from kproto.log import LogManager
from kproto.log.checkpoint import read_meta_properties
from tests.helpers import Clock
from tests.log.helpers import one_batch

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def test_meta_properties(tmp_path):
    data = tmp_path / "data"
    LogManager(data, node_id=3, cluster_id=CLUSTER).close()
    text = (data / "meta.properties").read_text()
    lines = text.splitlines()
    assert lines[0] == "#" and re.fullmatch(r"#\w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}", lines[1])
    assert lines[2] == "node.id=3" and re.fullmatch(r"directory\.id=[A-Za-z0-9_-]{22}", lines[3])
    assert lines[4:] == ["version=1", f"cluster.id={CLUSTER}"]
    assert read_meta_properties(data)["cluster.id"] == CLUSTER
    with pytest.raises(KafkaError, match="Expected other, but read " + CLUSTER) as e:
        LogManager(data, node_id=3, cluster_id="other")
    assert e.value.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert LogManager(data, node_id=3).cluster_id == CLUSTER


def test_topics_configs_persist_and_apply(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock())
    logs = mgr.create_topic("orders", 2, {"segment.bytes": "180", "cleanup.policy": "compact"})
    assert [l.dir.name for l in logs] == ["orders-0", "orders-1"]
    assert logs[0].config.segment_bytes == 180 and logs[0].config.compact
    assert json.loads((data / "topic-configs.json").read_text()) == {
        "version": 0, "topics": {"orders": {"cleanup.policy": "compact", "segment.bytes": "180"}}}
    with pytest.raises(TopicAlreadyExistsError, match="Topic 'orders' already exists."):
        mgr.create_topic("orders", 1)
    with pytest.raises(InvalidConfigError, match="Unknown topic config name: nope"):
        mgr.create_topic("other", 1, {"nope": "1"})
    with pytest.raises(KafkaError) as e:
        mgr.create_topic("bad/name", 1)
    assert e.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    # Topic.validate's text (clients/.../common/internals/Topic.java, detectInvalidTopic)
    assert str(e.value) == ("Topic name is invalid: 'bad/name' contains one or more characters other than "
                            "ASCII alphanumerics, '.', '_' and '-'")
    assert mgr.topics() == {"orders"}
    mgr.set_topic_config("orders", {"segment.bytes": "270"})
    assert mgr.get_log("orders", 1).config.segment_bytes == 270
    mgr.close()
    mgr = LogManager(data, clock=Clock())
    assert sorted(mgr.logs()) == [("orders", 0), ("orders", 1)]
    assert mgr.get_log("orders", 0).config.segment_bytes == 270
    assert not mgr.get_log("orders", 0).config.compact
    mgr.delete_topic("orders")
    assert sorted(p.name for p in data.iterdir()) == [
        "cleaner-offset-checkpoint", "log-start-offset-checkpoint", "meta.properties",
        "recovery-point-offset-checkpoint", "topic-configs.json"]
    assert json.loads((data / "topic-configs.json").read_text())["topics"] == {}


def test_checkpoints_on_close(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock())
    a, b = mgr.create_topic("t", 2)
    for i in range(4):
        a.append(one_batch(i))
    a.maybe_increment_log_start_offset(2)
    mgr.close(broker_epoch=12)
    assert (data / "recovery-point-offset-checkpoint").read_text() == "0\n2\nt 0 4\nt 1 0\n"
    assert (data / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"
    assert (data / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":12}'
    mgr = LogManager(data, clock=Clock())
    assert mgr.get_log("t", 0).log_start_offset == 2
    with pytest.raises(KafkaError, match="range 2 to 4"):
        mgr.get_log("t", 0).read(1, 100)


def six_batch_topic(mgr: LogManager, topic: str = "t", **overrides: str):
    [log] = mgr.create_topic(topic, 1, {"segment.bytes": "180", "file.delete.delay.ms": "0", **overrides})
    for i in range(6):
        log.append(one_batch(i))                 # 90 bytes each: segments 0, 2, 4 (active)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    return log


def test_delete_records_moves_the_start_drops_segments_and_persists(tmp_path):
    """ReplicaManager.deleteRecords -> UnifiedLog.maybeIncrementLogStartOffset; the
    segments wholly below go (deleteLogStartOffsetBreachedSegments) and the start is
    in log-start-offset-checkpoint before the answer, so even a crash keeps it."""
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock())
    log = six_batch_topic(mgr)
    assert mgr.delete_records("t", 0, 3) == 3
    assert [s.base_offset for s in log.segments] == [2, 4]          # 0..1 gone, 2..3 holds 3
    assert not list(log.dir.glob(f"{0:020d}.*"))                   # file.delete.delay.ms 0
    assert (data / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 3\n"
    with pytest.raises(KafkaError, match="range 3 to 6"):
        log.read(2, 1000)
    assert log.read(3, 1000).position == 90                        # the batch of 3, not 2
    assert mgr.delete_records("t", 0, 1) == 3                      # never backwards, no error
    # no close: as after a crash, the next open recovers and keeps the start
    again = LogManager(data, clock=Clock()).get_log("t", 0)
    assert (again.log_start_offset, again.log_end_offset) == (3, 6)
    with pytest.raises(KafkaError, match="range 3 to 6"):
        again.read(2, 1000)


def test_delete_records_to_the_high_watermark_keeps_the_active_segment(tmp_path):
    mgr = LogManager(tmp_path / "data", clock=Clock())
    log = six_batch_topic(mgr)
    assert mgr.delete_records("t", 0, -1) == 6                     # DeleteRecordsRequest.HIGH_WATERMARK
    assert [s.base_offset for s in log.segments] == [4]
    assert log.read(6, 1000).length == 0
    assert log.append(one_batch(9)).first_offset == 6


@pytest.mark.parametrize("topic, partition, offset, code, message", [
    ("t", 0, 7, ErrorCode.OFFSET_OUT_OF_RANGE,
     "Cannot increment the log start offset to 7 of partition t-0 since it is larger than the high watermark 6"),
    ("t", 0, -2, ErrorCode.OFFSET_OUT_OF_RANGE, "The offset -2 for partition t-0 is not valid"),
    ("t", 1, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host t-1."),
    ("nope", 0, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host nope-0."),
    ("__consumer_offsets", 0, 0, ErrorCode.INVALID_TOPIC_EXCEPTION,
     "Cannot delete records of internal topic __consumer_offsets"),
    ("c", 0, 1, ErrorCode.POLICY_VIOLATION,
     "Records of partition c-0 can not be deleted due to the configured policy"),
])
def test_delete_records_refusals_change_nothing(tmp_path, topic, partition, offset, code, message):
    """Kafka's texts: UnifiedLog.maybeIncrementLogStartOffset, Partition.deleteRecordsOnLeader,
    ReplicaManager.deleteRecordsOnLocalLog."""
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock())
    log = six_batch_topic(mgr)
    six_batch_topic(mgr, "c", **{"cleanup.policy": "compact"})
    mgr.create_topic("__consumer_offsets", 1, internal=True)
    with pytest.raises(KafkaError) as e:
        mgr.delete_records(topic, partition, offset)
    assert (e.value.error_code, str(e.value)) == (code, message)
    assert (log.log_start_offset, [s.base_offset for s in log.segments]) == (0, [0, 2, 4])
    assert not (data / "log-start-offset-checkpoint").exists()


def test_interrupted_deletion_finishes_at_open(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock())
    mgr.create_topic("t", 1)
    mgr.close()
    (data / "t-0").rename(data / "t-0.0123456789abcdef0123456789abcdef-delete")
    mgr = LogManager(data, clock=Clock())
    assert mgr.logs() == {} and not list(data.glob("*-delete"))


def test_background_passes(tmp_path):
    clock = Clock(0)
    mgr = LogManager(tmp_path / "data", clock=clock)
    [log] = mgr.create_topic("t", 1, {"segment.bytes": "180", "retention.ms": "100", "flush.ms": "50",
                                      "file.delete.delay.ms": "0"})
    for i in range(3):
        log.append(one_batch(i))                 # timestamps 1000..1020, segments 0 and 2
    assert log.recovery_point == 2               # the roll flushed segment 0
    assert mgr.flush_dirty_logs(now=49) == 0
    assert mgr.flush_dirty_logs(now=50) == 1 and log.recovery_point == 3
    assert mgr.cleanup_logs(now=1111) == 1 and log.log_start_offset == 2


@pytest.mark.parametrize("existing, new", [("a.b", "a_b"), ("a_b", "a.b"), ("foo_bar", "foo.bar"),
                                           ("woo.bar.foo", "woo.bar_foo")])
def test_topic_names_colliding_on_dot_and_underscore_are_refused(tmp_path, existing, new):
    # ReplicationControlManager.validateNewTopicNames; texts from ReplicationControlManagerTest
    mgr = LogManager(tmp_path / "data", clock=Clock())
    mgr.create_topic(existing, 1)
    with pytest.raises(KafkaError) as e:
        mgr.create_topic(new, 1)
    assert e.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert str(e.value) == f"Topic '{new}' collides with existing topic: {existing}"
    with pytest.raises(TopicAlreadyExistsError):     # the same name: already exists, not a collision
        mgr.create_topic(existing, 1)
    assert mgr.topics() == {existing}


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state"])
def test_internal_topics_are_created_only_by_the_broker(tmp_path, topic):
    mgr = LogManager(tmp_path / "data", clock=Clock())
    with pytest.raises(KafkaError, match=f"^Creation of internal topic {topic} is prohibited.$") as e:
        mgr.create_topic(topic, 1)
    assert e.value.error_code == ErrorCode.INVALID_REQUEST and not mgr.has_topic(topic)
    assert len(mgr.create_topic(topic, 3, internal=True)) == 3
    with pytest.raises(KafkaError, match="is a kafka internal topic and is not allowed to be marked for deletion"):
        mgr.check_not_internal(topic, "delete")


def test_validate_only_creates_nothing(tmp_path):
    mgr = LogManager(tmp_path / "data", clock=Clock())
    assert mgr.create_topic("t", 2, {"segment.bytes": "1000"}, validate_only=True) == []
    assert not mgr.has_topic("t") and not (tmp_path / "data" / "t-0").exists()
    with pytest.raises(KafkaError, match="Number of partitions was set to an invalid non-positive value."):
        mgr.create_topic("t", 0, validate_only=True)


def test_a_topic_past_the_controllers_batch_limit_is_a_policy_violation(tmp_path):
    # QuorumController.MAX_RECORDS_PER_USER_OP = 10000 records: the topic, its partitions, its configs
    mgr = LogManager(tmp_path / "data", clock=Clock())
    with pytest.raises(KafkaError, match="^Unable to perform excessively large batch operation.$") as e:
        mgr.create_topic("huge", 10_000)
    assert e.value.error_code == ErrorCode.POLICY_VIOLATION and not mgr.has_topic("huge")
    assert mgr.create_topic("big", 9_999, validate_only=True) == []
