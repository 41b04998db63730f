"""Topic admin on the reference broker through real admin clients (librdkafka's and
kafka-python's): errors as Kafka words them, configs with sources, persistence."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions, NewTopic,
)

from kproto.errors import ErrorCode
from tests.components import KAFKA, KPROTO, Peer, kproto_broker
from tests.helpers import until, until_served


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def result(futures: dict, key):
    return futures[key].result(timeout=10)


def kafka_error(futures: dict, key):
    with pytest.raises(KafkaException) as e:
        futures[key].result(timeout=10)
    return e.value.args[0]


def create(bootstrap: str, topic: NewTopic) -> None:
    assert result(admin(bootstrap).create_topics([topic]), topic.topic) is None
    until_served(bootstrap, topic.topic)


def describe(a: AdminClient, topic: str) -> dict:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return result(a.describe_configs([res]), res)


# Against kproto's broker and Apache Kafka's (the conftest `broker` fixture). Kafka's
# runs with its defaults, so a broker-level override is set through IncrementalAlterConfigs
# (log.retention.ms is dynamic in both) rather than at start.
pytestmark = pytest.mark.brokers(KPROTO, KAFKA)
RETENTION_MS = "3600000"
S = Peer.unique("")          # topic names no other module on the session's Kafka uses


@pytest.fixture(scope="module")
def bootstrap(broker):
    a = admin(broker.bootstrap)
    res = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.retention.ms", RETENTION_MS, incremental_operation=AlterConfigOpType.SET)])
    result(a.incremental_alter_configs([res]), res)
    node = ConfigResource(ConfigResource.Type.BROKER, "1")
    until(lambda: result(a.describe_configs([node]), node)["log.retention.ms"].value == RETENTION_MS)
    yield broker.bootstrap
    res = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
        ConfigEntry("log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    result(a.incremental_alter_configs([res]), res)


def settled(a: AdminClient, topic: str, want: dict[str, str]) -> None:
    """Describe ``topic`` until its configs have the values ``want`` (Kafka's broker applies a
    config change once its metadata log got there; kproto's before answering)."""
    until(lambda: {k: describe(a, topic)[k].value for k in want} == want, what=f"{topic}'s {want}")


def test_create_validates_like_kafka(bootstrap):
    a = admin(bootstrap)
    create(bootstrap, NewTopic(f"t-ok{S}", 3, 1, config={"cleanup.policy": "compact"}))
    err = kafka_error(a.create_topics([NewTopic(f"t-ok{S}", 1, 1)]), f"t-ok{S}")
    assert err.code() == ErrorCode.TOPIC_ALREADY_EXISTS and err.str() == f"Topic 't-ok{S}' already exists."
    err = kafka_error(a.create_topics([NewTopic(f"t-rf{S}", 1, 3)]), f"t-rf{S}")
    assert err.code() == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 1 broker(s) are registered" in err.str()
    err = kafka_error(a.create_topics([NewTopic(f"t-cfg{S}", 1, 1, config={"segment.bytes": "abc"})]), f"t-cfg{S}")
    assert err.code() == ErrorCode.INVALID_CONFIG
    assert err.str() == "Invalid value abc for configuration segment.bytes: Not a number of type INT"
    err = kafka_error(a.create_topics([NewTopic(f"t-cfg{S}", 1, 1, config={"no.such": "1"})]), f"t-cfg{S}")
    assert err.code() == ErrorCode.INVALID_CONFIG
    err = kafka_error(a.create_topics([NewTopic(f"bad/name{S}", 1, 1)]), f"bad/name{S}")
    assert err.code() == ErrorCode.INVALID_TOPIC_EXCEPTION
    md = a.list_topics(timeout=10)
    assert len(md.topics[f"t-ok{S}"].partitions) == 3 and f"t-rf{S}" not in md.topics and f"t-cfg{S}" not in md.topics


def test_describe_configs_sources(bootstrap):
    a = admin(bootstrap)
    create(bootstrap, NewTopic(f"t-desc{S}", 1, 1, config={"max.message.bytes": "2000"}))
    configs = describe(a, f"t-desc{S}")
    assert configs["max.message.bytes"].value == "2000"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == RETENTION_MS          # from the broker's log.retention.ms
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_partitions_only_increase(bootstrap):
    a = admin(bootstrap)
    create(bootstrap, NewTopic(f"t-grow{S}", 2, 1))
    assert result(a.create_partitions([NewPartitions(f"t-grow{S}", 5)]), f"t-grow{S}") is None
    assert len(a.list_topics(timeout=10).topics[f"t-grow{S}"].partitions) == 5
    err = kafka_error(a.create_partitions([NewPartitions(f"t-grow{S}", 3)]), f"t-grow{S}")
    assert err.code() == ErrorCode.INVALID_PARTITIONS
    assert err.str() == f"The topic t-grow{S} currently has 5 partition(s); 3 would not be an increase."
    err = kafka_error(a.create_partitions([NewPartitions(f"t-grow{S}", 5)]), f"t-grow{S}")
    assert (err.code(), err.str()) == (ErrorCode.INVALID_PARTITIONS, "Topic already has 5 partition(s).")
    err = kafka_error(a.create_partitions([NewPartitions("nope", 3)]), "nope")
    assert err.code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_incremental_and_full_alter(bootstrap):
    a = admin(bootstrap)
    create(bootstrap, NewTopic(f"t-alter{S}", 1, 1, config={"retention.ms": "1000"}))
    for value, op in (("compact", AlterConfigOpType.SET), ("delete", AlterConfigOpType.APPEND)):
        res = ConfigResource(ConfigResource.Type.TOPIC, f"t-alter{S}", incremental_configs=[
            ConfigEntry("cleanup.policy", value, incremental_operation=op)])
        result(a.incremental_alter_configs([res]), res)
    settled(a, f"t-alter{S}", {"cleanup.policy": "compact,delete", "retention.ms": "1000"})
    res = ConfigResource(ConfigResource.Type.TOPIC, f"t-alter{S}", incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    result(a.incremental_alter_configs([res]), res)
    settled(a, f"t-alter{S}", {"retention.ms": RETENTION_MS})
    # AlterConfigs replaces the whole set of overrides
    res = ConfigResource(ConfigResource.Type.TOPIC, f"t-alter{S}", set_config={"segment.ms": "60000"})
    result(a.alter_configs([res]), res)
    settled(a, f"t-alter{S}", {"segment.ms": "60000", "cleanup.policy": "delete"})
    bad = ConfigResource(ConfigResource.Type.TOPIC, f"t-alter{S}", set_config={"segment.ms": "-5"})
    with pytest.raises(KafkaException) as e:
        result(a.alter_configs([bad]), bad)
    assert e.value.args[0].code() == ErrorCode.INVALID_CONFIG


def test_kafka_python_admin_delete_and_describe(bootstrap):
    from kafka.admin import KafkaAdminClient, NewTopic as KNewTopic
    k = KafkaAdminClient(bootstrap_servers=bootstrap)
    k.create_topics([KNewTopic(f"t-kp{S}", 4, 1)])
    until_served(bootstrap, f"t-kp{S}")
    assert f"t-kp{S}" in k.list_topics()
    k.delete_topics([f"t-kp{S}"])
    until_served(bootstrap, f"t-kp{S}", present=False)
    assert f"t-kp{S}" not in k.list_topics()
    k.close()


def test_topics_and_configs_persist_across_restart(tmp_path):
    data = tmp_path / "data"
    with kproto_broker(tmp_path, data_dir=data) as b:
        a = admin(b)
        result(a.create_topics([NewTopic("keep", 3, 1, config={"retention.bytes": "12345"})]), "keep")
        topic_id = a.list_topics(timeout=10).topics["keep"]
    with kproto_broker(tmp_path, data_dir=data) as b:
        a = admin(b)
        md = a.list_topics(timeout=10)
        assert len(md.topics["keep"].partitions) == 3
        assert describe(a, "keep")["retention.bytes"].value == "12345"
    text = (data / "keep-0" / "partition.metadata").read_text()
    assert text.startswith("version: 0\ntopic_id: ") and len(text.split(": ")[-1]) == 22
    assert (data / "keep-1" / "partition.metadata").read_text() == text
    assert topic_id is not None


THROTTLED_LIST = ("must be the literal '*' or a list of replicas in the following format: "
                  "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def test_replication_throttle_configs_validated_like_kafka(bootstrap):
    """The topics' throttled replica lists (ThrottledReplicaListValidator) and the brokers'
    throttled rates (QuotaConfig.brokerQuotaConfigs: LONG, at least 0, dynamic, described once
    set)."""
    a = admin(bootstrap)
    name, key = f"throttled{S}", "leader.replication.throttled.replicas"
    bad = kafka_error(a.create_topics([NewTopic(name, 1, 1, config={key: "0:a, 1"})]), name)
    assert (bad.code(), bad.str()) == (ErrorCode.INVALID_CONFIG,
                                       f"Invalid value [0:a, 1] for configuration {key}: {key} {THROTTLED_LIST}")
    create(bootstrap, NewTopic(name, 1, 1, config={"follower.replication.throttled.replicas": "*"}))
    res = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
        ConfigEntry(key, "0:1,1:1", incremental_operation=AlterConfigOpType.SET)])
    assert result(a.incremental_alter_configs([res]), res) is None
    until(lambda: describe(a, name)[key].value == "0:1,1:1")
    assert describe(a, name)["follower.replication.throttled.replicas"].value == "*"

    def alter_broker(value: str | None):
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        res = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
            ConfigEntry("leader.replication.throttled.rate", value, incremental_operation=op)])
        return a.incremental_alter_configs([res]), res

    for value, why in (("-1", "Value must be at least 0"), ("x", "Not a number of type LONG")):
        err = kafka_error(*alter_broker(value))
        assert (err.code(), err.str()) == (
            ErrorCode.INVALID_REQUEST, f"Invalid value {value} for configuration leader.replication.throttled.rate: "
                                       f"{why}")
    node = ConfigResource(ConfigResource.Type.BROKER, "1")
    assert "leader.replication.throttled.rate" not in result(a.describe_configs([node]), node)
    assert result(*alter_broker("1048576")) is None
    entry = until(lambda: result(a.describe_configs([node]), node).get("leader.replication.throttled.rate"))
    assert (entry.value, entry.source, entry.is_read_only) == (
        "1048576", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    assert result(*alter_broker(None)) is None
    until(lambda: "leader.replication.throttled.rate" not in result(a.describe_configs([node]), node))
