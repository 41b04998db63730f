"""Dynamic broker configs (KIP-226) through confluent-kafka's AdminClient: AlterConfigs
and IncrementalAlterConfigs on the BROKER resource change the running broker, persist
across a restart, are described with their dynamic sources, and are refused with
Kafka's words (DynamicBrokerConfig.validateConfigs, ConfigAdminManager) when Kafka
refuses them."""

from __future__ import annotations

import json
import socket

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto import protocol as P
from kproto.testing import Broker

BROKER, TOPIC = ConfigResource.Type.BROKER, ConfigResource.Type.TOPIC
SET, DELETE, APPEND, SUBTRACT = (AlterConfigOpType.SET, AlterConfigOpType.DELETE, AlterConfigOpType.APPEND,
                                 AlterConfigOpType.SUBTRACT)


def incremental(a: AdminClient, kind, name: str, *ops: tuple[str, str | None, AlterConfigOpType],
                validate_only: bool = False) -> None:
    res = ConfigResource(kind, name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=op) for k, v, op in ops])
    a.incremental_alter_configs([res], validate_only=validate_only)[res].result(timeout=20)


def raw_incremental(b: Broker | BrokerClient, name: str, *ops: tuple[str, str | None, AlterConfigOpType],
                    validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs as raw frames (on a new connection to a Broker, or on
    a BrokerClient's): librdkafka refuses a BROKER resource named "" (the
    cluster-wide default) or not a number before sending it."""
    if isinstance(b, Broker):
        with BrokerClient(b.bootstrap_servers) as client:
            return raw_incremental(client, name, *ops, validate_only=validate_only)
    body = b.request(P.incremental_alter_configs.API.key, {"validate_only": validate_only, "resources": [
        {"resource_type": 4, "resource_name": name, "configs": [
            {"name": k, "config_operation": op.value, "value": v} for k, v, op in ops]}]})
    [r] = body.responses
    return r.error_code, r.error_message


def raw_describe(b: Broker, name: str, keys: list[str] | None = None) -> dict[str, tuple]:
    """DescribeConfigs of a BROKER resource as raw frames: name -> (value, source,
    read_only, synonyms as (name, value, source)); confluent-kafka keys synonyms
    by name, so it cannot show two layers of one config."""
    with BrokerClient(b.bootstrap_servers) as client:
        body = client.request(P.describe_configs.API.key, {"resources": [
            {"resource_type": 4, "resource_name": name, "configuration_keys": keys}], "include_synonyms": True})
    [r] = body.results
    assert r.error_code == 0
    return {c.name: (c.value, c.config_source, c.read_only, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in r.configs}


def refused(call) -> KafkaError:
    with pytest.raises(KafkaException) as e:
        call()
    return e.value.args[0]


def describe(a: AdminClient, kind, name: str) -> dict:
    res = ConfigResource(kind, name)
    return a.describe_configs([res])[res].result(timeout=20)


@pytest.fixture
def broker(tmp_path):
    with Broker(tmp_path / "data", {"log.retention.ms": "3600000", "log.retention.check.interval.ms": "3600000"}) as b:
        yield b


def test_alter_describe_and_persist_across_restart(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic("t", 1, 1)])["t"].result(timeout=20)
    incremental(a, BROKER, "1", ("log.retention.ms", "7200000", SET))
    assert raw_incremental(broker, "", ("log.segment.bytes", "2097152", SET)) == (0, None)

    def check():
        mine = describe(a, BROKER, "1")
        assert mine["log.retention.ms"].value == "7200000"
        assert mine["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert raw_describe(broker, "1", ["log.retention.ms"]) == {"log.retention.ms": (
            "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False,
            [("log.retention.ms", "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG.value),
             ("log.retention.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG.value)])}
        assert not mine["log.retention.ms"].is_read_only and mine["num.partitions"].is_read_only
        assert mine["log.segment.bytes"].value == "2097152"
        assert mine["log.segment.bytes"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        assert mine["log.flush.interval.ms"].source == ConfigSource.DEFAULT_CONFIG.value
        # the cluster default shows only its own dynamic configs
        dynamic_default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        assert raw_describe(broker, "") == {"log.segment.bytes": (
            "2097152", dynamic_default, False, [("log.segment.bytes", "2097152", dynamic_default)])}
        # an existing topic takes the new defaults, with the broker layer as its source
        topic = describe(a, TOPIC, "t")
        assert (topic["retention.ms"].value, topic["retention.ms"].source) == (
            "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert (topic["segment.bytes"].value, topic["segment.bytes"].source) == (
            "2097152", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)

    check()
    stored = json.loads((broker.data_dir / "dynamic-broker-configs.json").read_text())
    assert stored == {"version": 0, "default": {"log.segment.bytes": "2097152"},
                      "broker": {"log.retention.ms": "7200000"}}
    broker.restart()
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    check()
    # DELETE falls back to the static value
    incremental(a, BROKER, "1", ("log.retention.ms", None, DELETE))
    entry = describe(a, BROKER, "1")["log.retention.ms"]
    assert (entry.value, entry.source) == ("3600000", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert describe(a, TOPIC, "t")["retention.ms"].value == "3600000"


def test_message_max_bytes_takes_effect_on_existing_topics(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic("big", 1, 1)])["big"].result(timeout=20)
    assert raw_incremental(broker, "", ("message.max.bytes", "2000", SET)) == (0, None)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    errors = []
    for size in (3000, 100):      # one batch each
        p.produce("big", b"x" * size, on_delivery=lambda err, msg: errors.append(err))
        assert p.flush(20) == 0
    assert [e.code() if e else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE, None]


def test_refusals_in_kafkas_words_and_nothing_stored(broker):
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    cases = [
        ("1", "log.retention.hours", "1", "Cannot update these configs dynamically: Set(log.retention.hours)"),
        ("1", "num.partitions", "3", "Cannot update these configs dynamically: Set(num.partitions)"),
        ("1", "ssl.keystore.location", "/k", ("These security configs can be dynamically updated only "
                                              "per-listener using the listener prefix: Set(ssl.keystore.location)")),
        ("", "sasl.kerberos.min.time.before.relogin", "58000",
         ("Cannot update these configs at default cluster level, broker id must be specified: "
          "Set(sasl.kerberos.min.time.before.relogin)")),
        ("1", "log.segment.bytes", "abc",
         "Invalid value abc for configuration log.segment.bytes: Not a number of type INT"),
        ("1", "log.segment.bytes", "13",
         "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"),
        ("7", "log.retention.ms", "1", "Unexpected broker id, expected 1, but received 7"),
        ("x", "log.retention.ms", "1", "Node id must be an integer, but it is: x"),
    ]
    for name, key, value, message in cases:
        assert raw_incremental(broker, name, (key, value, SET)) == (ErrorCode.INVALID_REQUEST, message)
    # the same through librdkafka
    err = refused(lambda: incremental(a, BROKER, "1", ("log.retention.hours", "1", SET)))
    assert (err.code(), err.str()) == (ErrorCode.INVALID_REQUEST, cases[0][3])
    err = refused(lambda: incremental(a, BROKER, "1", ("log.retention.ms", "5", APPEND)))
    assert (err.code(), err.str()) == (ErrorCode.INVALID_CONFIG,
                                       "Config value append is not allowed for config key: log.retention.ms")
    # validate_only checks and stores nothing
    incremental(a, BROKER, "1", ("log.retention.ms", "60000", SET), validate_only=True)
    assert describe(a, BROKER, "1")["log.retention.ms"].value == "3600000"
    assert raw_incremental(broker, "", ("log.retention.ms", "60000", SET), validate_only=True) == (0, None)
    assert raw_describe(broker, "") == {}
    assert not (broker.data_dir / "dynamic-broker-configs.json").exists()


def test_legacy_alter_configs_on_the_broker(broker):
    """librdkafka's 0081-admin sets a per-broker SASL config with AlterConfigs and
    expects success; kproto has no use for it, but stores and describes it as Kafka does."""
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    res = ConfigResource(BROKER, "1", set_config={"sasl.kerberos.min.time.before.relogin": "58000",
                                                  "log.cleaner.threads": "2"})
    a.alter_configs([res])[res].result(timeout=20)
    mine = describe(a, BROKER, "1")
    for key, value in (("sasl.kerberos.min.time.before.relogin", "58000"), ("log.cleaner.threads", "2")):
        assert (mine[key].value, mine[key].source) == (value, ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # AlterConfigs replaces the whole layer
    res = ConfigResource(BROKER, "1", set_config={"log.cleaner.threads": "3"})
    a.alter_configs([res])[res].result(timeout=20)
    mine = describe(a, BROKER, "1")
    assert mine["sasl.kerberos.min.time.before.relogin"].source == ConfigSource.DEFAULT_CONFIG.value
    assert mine["sasl.kerberos.min.time.before.relogin"].value == "60000"
    assert mine["log.cleaner.threads"].value == "3"


def test_append_and_subtract_start_from_the_default(broker):
    """confluent-kafka-python's test_incremental_alter_configs: APPEND to a list
    config nobody set starts from its default (ConfigAdminManager.prepareIncrementalConfigs)."""
    a = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    a.create_topics([NewTopic("lists", 1, 1)])["lists"].result(timeout=20)
    incremental(a, TOPIC, "lists", ("cleanup.policy", "compact", APPEND))
    assert describe(a, TOPIC, "lists")["cleanup.policy"].value == "delete,compact"
    incremental(a, TOPIC, "lists", ("cleanup.policy", "delete", SUBTRACT))
    assert describe(a, TOPIC, "lists")["cleanup.policy"].value == "compact"

    assert raw_incremental(broker, "", ("log.cleanup.policy", "compact", APPEND)) == (0, None)
    entry = describe(a, BROKER, "1")["log.cleanup.policy"]
    assert (entry.value, entry.source) == ("delete,compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    a.create_topics([NewTopic("later", 1, 1)])["later"].result(timeout=20)
    entry = describe(a, TOPIC, "later")["cleanup.policy"]
    assert (entry.value, entry.source) == ("delete,compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert raw_incremental(broker, "", ("log.cleanup.policy", "delete", SUBTRACT)) == (0, None)
    assert describe(a, TOPIC, "later")["cleanup.policy"].value == "compact"


def _api_versions_answered(port: int) -> bool:
    """One ApiVersions v0 on a new connection: answered, or closed by the broker."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        frame = P.encode_request(P.api_versions.API.key, 0, 1, "probe", {})
        s.sendall(len(frame).to_bytes(4, "big") + frame)
        try:
            return len(s.recv(4)) == 4
        except ConnectionResetError:
            return False


def test_max_connections_per_ip_takes_effect(broker):
    """The new limit applies to the next connection (the one that set it stays);
    raising it lets the next one in."""
    assert _api_versions_answered(broker.port)
    with BrokerClient(broker.bootstrap_servers) as client:
        assert raw_incremental(client, "", ("max.connections.per.ip", "1", SET)) == (0, None)
        assert not _api_versions_answered(broker.port)
        assert raw_incremental(client, "", ("max.connections.per.ip.overrides", "127.0.0.1:2", SET)) == (0, None)
        assert _api_versions_answered(broker.port)


def test_stored_configs_kafka_would_refuse_are_dropped_at_start(tmp_path, caplog):
    """DynamicBrokerConfig.fromPersistentProps: a stored entry that no longer
    validates is logged and ignored, so the file never stops a start."""
    from kproto.server.config import BrokerConfig
    from kproto.server.dynamic_config import DynamicBrokerConfig
    (tmp_path / "dynamic-broker-configs.json").write_text(json.dumps({"version": 0, "default": {
        "log.retention.hours": "1", "log.segment.bytes": "abc", "log.retention.ms": "5",
        "sasl.kerberos.min.time.before.relogin": "1"}, "broker": {"log.cleaner.threads": "2"}}))
    dynamic = DynamicBrokerConfig(tmp_path, BrokerConfig.from_props())
    assert (dynamic.default, dynamic.broker) == ({"log.retention.ms": "5"}, {"log.cleaner.threads": "2"})
    config = dynamic.merged()
    assert (config.log_defaults.retention_ms, config["log.cleaner.threads"]) == (5, 2)
    assert "log.segment.bytes" in caplog.text and "log.retention.hours" in caplog.text


def test_duplicate_keys_and_null_values_refused_for_every_resource(broker):
    """ConfigAdminManager.preprocess, before any resource-specific check."""
    with BrokerClient(broker.bootstrap_servers) as client:
        client.request(P.create_topics.API.key, {"topics": [
            {"name": "n", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        for kind, name in ((2, "n"), (4, "1")):
            body = client.request(P.incremental_alter_configs.API.key, {"validate_only": False, "resources": [
                {"resource_type": kind, "resource_name": name, "configs": [
                    {"name": "x", "config_operation": 0, "value": "1"},
                    {"name": "x", "config_operation": 0, "value": "2"}]}]})
            assert [(r.error_code, r.error_message) for r in body.responses] == [
                (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")]
            body = client.request(P.alter_configs.API.key, {"validate_only": False, "resources": [
                {"resource_type": kind, "resource_name": name, "configs": [
                    {"name": "retention.ms" if kind == 2 else "log.retention.ms", "value": None}]}]})
            assert [(r.error_code, r.error_message) for r in body.responses] == [
                (ErrorCode.INVALID_REQUEST,
                 f"Null value not supported for : {'retention.ms' if kind == 2 else 'log.retention.ms'}")]
