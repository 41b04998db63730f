"""KIP-714 client telemetry: GetTelemetrySubscriptions, PushTelemetry and ListConfigResources
with client-metrics config resources, asked of kproto's broker and Apache Kafka's with the
same frames; then real clients (confluent-kafka, kafka-clients) pushing to kproto.

Kafka advertises the telemetry APIs only with a receiver plugin configured, so its clients
push only to kproto; its broker answers the frames all the same (measured here)."""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kproto import protocol as P
from kproto.errors import ErrorCode
from kproto.framing import frame
from kproto.server.telemetry import PUSHED_FILE, subscription_id
from tests.components import KAFKA, KPROTO, Peer, kproto_broker
from tests.helpers import until

CLIENT_METRICS = 16
SET, DELETE = 0, 1
GET, PUSH, LIST = P.get_telemetry_subscriptions.API.key, P.push_telemetry.API.key, P.list_config_resources.API.key
ACCEPTED = [4, 3, 1, 2]       # zstd, lz4, gzip, snappy: ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES


class Connection:
    """One connection, its own client id, requests in turn (a client instance is per connection in Kafka's
    bookkeeping only for its match attributes: the source port)."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        host, port = bootstrap.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id, self.correlation = client_id, 0

    def ask(self, api_key: int, version: int, body: dict):
        self.correlation += 1
        self.sock.sendall(frame(P.encode_request(api_key, version, self.correlation, self.client_id, body)))
        size = int.from_bytes(self._recv(4), "big")
        return P.decode_response(api_key, version, self._recv(size))[1]

    def _recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()


def alter(bootstrap: str, name: str, *ops: tuple[str, str | None, int]):
    """IncrementalAlterConfigs on one client-metrics resource: (error code, message)."""
    c = Connection(bootstrap, "admin")
    try:
        r = c.ask(P.incremental_alter_configs.API.key, 1, {"validate_only": False, "resources": [
            {"resource_type": CLIENT_METRICS, "resource_name": name,
             "configs": [{"name": k, "config_operation": op, "value": v} for k, v, op in ops]}]})
    finally:
        c.close()
    return r.responses[0].error_code, r.responses[0].error_message


def subscribe(bootstrap: str, name: str, metrics: str, interval_ms: int, match: str) -> None:
    assert alter(bootstrap, name, ("metrics", metrics, SET), ("interval.ms", str(interval_ms), SET),
                 ("match", match, SET)) == (0, None)


def get(c: Connection, instance: uuid.UUID) -> dict:
    r = c.ask(GET, 0, {"client_instance_id": instance})
    return {k: getattr(r, k) for k in ("error_code", "client_instance_id", "subscription_id",
                                       "accepted_compression_types", "push_interval_ms", "telemetry_max_bytes",
                                       "delta_temporality", "requested_metrics")}


def push(c: Connection, instance: uuid.UUID, sub: int, *, terminating: bool = False, compression: int = 0,
         metrics: bytes = b"") -> int:
    return c.ask(PUSH, 0, {"client_instance_id": instance, "subscription_id": sub, "terminating": terminating,
                           "compression_type": compression, "metrics": metrics}).error_code


@pytest.mark.brokers(KPROTO, KAFKA)
def test_without_a_subscription_the_answer_is_empty(broker):
    """ClientMetricsManager.createClientInstance: no matching subscription, no metrics, the 5 min default."""
    c = Connection(broker.bootstrap, Peer.unique("telemetry-none"))
    instance = uuid.uuid4()
    try:
        assert get(c, instance) == {
            "error_code": 0, "client_instance_id": instance, "subscription_id": subscription_id([], 300000, instance),
            "accepted_compression_types": ACCEPTED, "push_interval_ms": 300000, "telemetry_max_bytes": 1048576,
            "delta_temporality": True, "requested_metrics": []}
        # a zero id gets one assigned
        fresh = get(c, uuid.UUID(int=0))
        assert fresh["error_code"] == 0 and fresh["client_instance_id"] != uuid.UUID(int=0)
    finally:
        c.close()


@pytest.mark.brokers(KPROTO, KAFKA)
def test_subscription_id_and_push_interval_checks(broker):
    """The union of the matching subscriptions, its id as Kafka computes it (CRC-32C of Java's
    HashSet text), then ClientMetricsManager.validatePushRequest's checks in their order."""
    client = Peer.unique("telemetry-sub")
    a, b = Peer.unique("sub-a"), Peer.unique("sub-b")
    subscribe(broker.bootstrap, a, "org.apache.kafka.producer., org.apache.kafka.consumer.", 60000,
              f"client_id={client}")
    subscribe(broker.bootstrap, b, "org.apache.kafka.client.,a.b", 3000000, f"client_id={client[:-3]}.*")
    c = Connection(broker.bootstrap, client)
    try:
        # Kafka's broker learns a subscription from its controller a moment after the alter answered
        instance, got = until(lambda: (i := uuid.uuid4(), g := get(c, i)) and len(g["requested_metrics"]) == 4
                              and (i, g), what="both subscriptions applied")
        metrics = got["requested_metrics"]
        assert sorted(metrics) == sorted(["org.apache.kafka.producer.", "org.apache.kafka.consumer.",
                                          "org.apache.kafka.client.", "a.b"])
        assert got["push_interval_ms"] == 60000
        assert got["subscription_id"] == subscription_id(metrics, 60000, instance)
        sub = got["subscription_id"]
        assert get(c, instance)["error_code"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED   # before the interval
        assert push(c, instance, sub + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID   # accepted time, wrong id
        assert push(c, instance, sub) == ErrorCode.THROTTLING_QUOTA_EXCEEDED     # that push counted
        assert push(c, instance, sub, terminating=True) == 0                    # terminating: never throttled
        assert push(c, instance, sub, terminating=True) == ErrorCode.INVALID_REQUEST
        assert push(c, uuid.UUID(int=0), sub) == ErrorCode.INVALID_REQUEST
        other = uuid.uuid4()
        sub2 = get(c, other)["subscription_id"]
        assert push(c, other, sub2, compression=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        # a change of subscription re-evaluates the instance at once: new id, not throttled
        assert alter(broker.bootstrap, a, ("metrics", "*", SET)) == (0, None)
        # throttled until the change arrives, then re-evaluated at once
        again = until(lambda: (g := get(c, instance))["error_code"] == 0 and g, what="the change applied")
        assert again["requested_metrics"] == ["*"]
        assert again["subscription_id"] == subscription_id(["*"], 60000, instance)
    finally:
        c.close()
        for name in (a, b):
            alter(broker.bootstrap, name, ("metrics", None, DELETE), ("interval.ms", None, DELETE),
                  ("match", None, DELETE))


@pytest.mark.brokers(KPROTO, KAFKA)
@pytest.mark.parametrize("ops, error", [
    ([("interval.ms", "50", SET)], (ErrorCode.INVALID_REQUEST, "Invalid value 50 for interval.ms, interval must "
                                   "be between 100 and 3600000 (1 hour)")),
    ([("interval.ms", "x", SET)], (ErrorCode.INVALID_CONFIG, "Invalid value x for configuration interval.ms: "
                                  "Not a number of type INT")),
    ([("colour", "red", SET)], (ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: colour")),
    ([("match", "client_idx=a", SET)], (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_idx=a")),
    ([("match", "client_id=[", SET)], (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id=[")),
    ([("metrics", "a,a", SET)], (0, None)),      # a metric twice: accepted
])
def test_client_metrics_configs_are_validated(broker, ops, error):
    """ClientMetricsConfigs.validate, each refusal's code and text as Kafka's."""
    assert alter(broker.bootstrap, Peer.unique("sub-bad"), *ops) == error


@pytest.mark.brokers(KPROTO, KAFKA)
def test_describe_and_list_client_metrics_resources(broker):
    name = Peer.unique("sub-list")
    subscribe(broker.bootstrap, name, "a.", 1000, "client_id=nobody")
    c = Connection(broker.bootstrap, "admin")
    try:
        def described():
            r = c.ask(P.describe_configs.API.key, 4, {"resources": [
                {"resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": None},
                {"resource_type": CLIENT_METRICS, "resource_name": name + "-none", "configuration_keys": None}],
                "include_synonyms": False, "include_documentation": False})
            return [[(e.name, e.value, e.config_source, e.config_type) for e in res.configs] for res in r.results]

        # Kafka's broker applies the controller's ConfigRecord after AlterConfigs has answered: wait for it
        got = until(lambda: (d := described())[0][0][2] == 7 and d, what="the subscription's configs applied")
        # ConfigSource CLIENT_METRICS_CONFIG (7) when set, DEFAULT_CONFIG (5) else; types INT (3), LIST (7)
        assert got == [
            [("interval.ms", "1000", 7, 3), ("match", "client_id=nobody", 7, 7), ("metrics", "a.", 7, 7)],
            [("interval.ms", "300000", 5, 3), ("match", "", 5, 7), ("metrics", "", 5, 7)]]
        v0 = c.ask(LIST, 0, {})
        assert v0.error_code == 0 and name in [x.resource_name for x in v0.config_resources]
        v1 = c.ask(LIST, 1, {"resource_types": [CLIENT_METRICS]})
        assert {(x.resource_name, x.resource_type) for x in v1.config_resources if x.resource_name == name} == {
            (name, CLIENT_METRICS)}
        assert c.ask(LIST, 1, {"resource_types": [1]}).error_code == ErrorCode.UNSUPPORTED_VERSION
        every = c.ask(LIST, 1, {"resource_types": []})       # none asked: every supported type
        assert {x.resource_type for x in every.config_resources} >= {4, 8, 16}
    finally:
        c.close()
        alter(broker.bootstrap, name, ("metrics", None, DELETE), ("interval.ms", None, DELETE),
              ("match", None, DELETE))


@pytest.fixture(scope="module")
def kproto_data(tmp_path_factory):
    """A kproto broker of this module's own, with its data directory (where pushed metrics go)."""
    tmp = tmp_path_factory.mktemp("telemetry")
    with kproto_broker(tmp, data_dir=tmp / "data") as bootstrap:
        yield bootstrap, tmp / "data"


def pushed(data_dir: Path, client_id: str) -> list[dict]:
    path = data_dir / PUSHED_FILE
    if not path.exists():
        return []
    return [line for line in map(json.loads, path.read_text().splitlines()) if line["client_id"] == client_id]


def test_confluent_kafka_pushes_the_subscribed_metrics(kproto_data):
    """librdkafka (enable.metrics.push, on by default) asks its subscription and pushes
    OTLP metrics; kproto writes each push as a JSON line with the metrics decoded."""
    bootstrap, data = kproto_data
    client = Peer.unique("telemetry-rdkafka")
    subscribe(bootstrap, Peer.unique("sub-rdkafka"), "org.apache.kafka.producer.", 100, f"client_id={client}")
    p = Producer({"bootstrap.servers": bootstrap, "client.id": client})
    try:
        until(lambda: any(line["metrics"] for line in pushed(data, client)), what="a push with metrics")
    finally:
        p.flush(30)
    line = next(line for line in pushed(data, client) if line["metrics"])
    names = {m["name"] for m in line["metrics"]}
    assert names and all(n.startswith("org.apache.kafka.producer.") for n in names), names
    assert line["resource"].get("client_rack", "") is not None
    assert {m["type"] for m in line["metrics"]} <= {"gauge", "sum", "histogram"}
    assert all(p_["time_unix_nano"] > 0 for m in line["metrics"] for p_ in m["points"])


def test_java_client_pushes_the_subscribed_metrics(kproto_data, kafka_ref):
    """kafka-clients' ClientTelemetryReporter: the producer asks its subscription and pushes
    the subscribed metrics before it has closed."""
    from tests import java_client
    bootstrap, data = kproto_data
    client = Peer.unique("telemetry-java")
    subscribe(bootstrap, Peer.unique("sub-java"), "org.apache.kafka.producer.", 100, f"client_id={client}")
    # A producer that closes before its subscription arrived pushes nothing (ClientTelemetryReporter
    # pushes only with a subscription): on a loaded machine that can happen, so producers run
    # until one has pushed.
    def run_and_push():
        out = java_client.run(kafka_ref, "produce", bootstrap=bootstrap, client=client, topic=Peer.unique("tj"),
                              count=3)
        assert out.returncode == 0, (out.events, out.stderr[-2000:])
        return pushed(data, client)
    lines = until(run_and_push, what="a push from the Java client")
    names = {m["name"] for line in lines for m in line["metrics"]}
    assert names and all(n.startswith("org.apache.kafka.producer.") for n in names), names
