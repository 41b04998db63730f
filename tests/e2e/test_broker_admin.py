"""Topic admin on the reference broker through real admin clients (librdkafka's and
kafka-python's): errors as Kafka words them, configs with sources, persistence."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions, NewTopic,
)

from kproto.errors import ErrorCode
from tests.components import kproto_broker


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def result(futures: dict, key):
    return futures[key].result(timeout=10)


def kafka_error(futures: dict, key):
    with pytest.raises(KafkaException) as e:
        futures[key].result(timeout=10)
    return e.value.args[0]


def describe(a: AdminClient, topic: str) -> dict:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return result(a.describe_configs([res]), res)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    with kproto_broker(tmp_path_factory.mktemp("admin"), "log.retention.ms=3600000") as b:
        yield b


def test_create_validates_like_kafka(bootstrap):
    a = admin(bootstrap)
    assert result(a.create_topics([NewTopic("t-ok", 3, 1, config={"cleanup.policy": "compact"})]), "t-ok") is None
    err = kafka_error(a.create_topics([NewTopic("t-ok", 1, 1)]), "t-ok")
    assert err.code() == ErrorCode.TOPIC_ALREADY_EXISTS and err.str() == "Topic 't-ok' already exists."
    err = kafka_error(a.create_topics([NewTopic("t-rf", 1, 3)]), "t-rf")
    assert err.code() == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 1 broker(s) are registered" in err.str()
    err = kafka_error(a.create_topics([NewTopic("t-cfg", 1, 1, config={"segment.bytes": "abc"})]), "t-cfg")
    assert err.code() == ErrorCode.INVALID_CONFIG
    assert err.str() == "Invalid value abc for configuration segment.bytes: Not a number of type INT"
    err = kafka_error(a.create_topics([NewTopic("t-cfg", 1, 1, config={"no.such": "1"})]), "t-cfg")
    assert err.code() == ErrorCode.INVALID_CONFIG
    err = kafka_error(a.create_topics([NewTopic("bad/name", 1, 1)]), "bad/name")
    assert err.code() == ErrorCode.INVALID_TOPIC_EXCEPTION
    md = a.list_topics(timeout=10)
    assert len(md.topics["t-ok"].partitions) == 3 and "t-rf" not in md.topics and "t-cfg" not in md.topics


def test_describe_configs_sources(bootstrap):
    a = admin(bootstrap)
    result(a.create_topics([NewTopic("t-desc", 1, 1, config={"max.message.bytes": "2000"})]), "t-desc")
    configs = describe(a, "t-desc")
    assert configs["max.message.bytes"].value == "2000"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "3600000"          # from the broker's log.retention.ms
    assert configs["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_partitions_only_increase(bootstrap):
    a = admin(bootstrap)
    result(a.create_topics([NewTopic("t-grow", 2, 1)]), "t-grow")
    assert result(a.create_partitions([NewPartitions("t-grow", 5)]), "t-grow") is None
    assert len(a.list_topics(timeout=10).topics["t-grow"].partitions) == 5
    err = kafka_error(a.create_partitions([NewPartitions("t-grow", 3)]), "t-grow")
    assert err.code() == ErrorCode.INVALID_PARTITIONS
    assert err.str() == "Topic currently has 5 partitions, which is higher than the requested 3."
    err = kafka_error(a.create_partitions([NewPartitions("nope", 3)]), "nope")
    assert err.code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_incremental_and_full_alter(bootstrap):
    a = admin(bootstrap)
    result(a.create_topics([NewTopic("t-alter", 1, 1, config={"retention.ms": "1000"})]), "t-alter")
    for value, op in (("compact", AlterConfigOpType.SET), ("delete", AlterConfigOpType.APPEND)):
        res = ConfigResource(ConfigResource.Type.TOPIC, "t-alter", incremental_configs=[
            ConfigEntry("cleanup.policy", value, incremental_operation=op)])
        result(a.incremental_alter_configs([res]), res)
    configs = describe(a, "t-alter")
    assert configs["cleanup.policy"].value == "compact,delete" and configs["retention.ms"].value == "1000"
    res = ConfigResource(ConfigResource.Type.TOPIC, "t-alter", incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    result(a.incremental_alter_configs([res]), res)
    assert describe(a, "t-alter")["retention.ms"].value == "3600000"
    # AlterConfigs replaces the whole set of overrides
    res = ConfigResource(ConfigResource.Type.TOPIC, "t-alter", set_config={"segment.ms": "60000"})
    result(a.alter_configs([res]), res)
    configs = describe(a, "t-alter")
    assert configs["segment.ms"].value == "60000" and configs["cleanup.policy"].value == "delete"
    bad = ConfigResource(ConfigResource.Type.TOPIC, "t-alter", set_config={"segment.ms": "-5"})
    with pytest.raises(KafkaException) as e:
        result(a.alter_configs([bad]), bad)
    assert e.value.args[0].code() == ErrorCode.INVALID_CONFIG


def test_kafka_python_admin_delete_and_describe(bootstrap):
    from kafka.admin import KafkaAdminClient, NewTopic as KNewTopic
    k = KafkaAdminClient(bootstrap_servers=bootstrap)
    k.create_topics([KNewTopic("t-kp", 4, 1)])
    assert "t-kp" in k.list_topics()
    k.delete_topics(["t-kp"])
    assert "t-kp" not in k.list_topics()
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
