"""Client quotas on kproto's broker and Apache Kafka's, with the same expectations: what
AlterClientQuotas refuses and says, what DescribeClientQuotas matches, and quotas
enforced: a produce over producer_byte_rate answers the throttle time Kafka's Rate and
QuotaUtils.throttleTime make, a librdkafka producer and consumer over their byte rates
are told to back off (throttle_cb) and every byte still arrives."""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kproto import protocol as P
from kproto.client.transport import BrokerClient
from kproto.framing import frame
from tests.components import KAFKA, KPROTO, Peer
from tests.e2e.test_broker_clients import create
from tests.helpers import exchange_raw, until
from tests.records.helpers import v2_batch

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)
EXACT, DEFAULT, ANY = 0, 1, 2


def alter(bootstrap: str, *entries: tuple[dict, dict], validate_only: bool = False) -> dict:
    """AlterClientQuotas of (entity {type: name}, ops {key: value, None to remove}) entries;
    -> {entity as sorted pairs: (error_code, error_message)} (Kafka answers in HashMap order)."""
    body = {"validate_only": validate_only, "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
         "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops.items()]}
        for entity, ops in entries]}
    with BrokerClient(bootstrap) as c:
        r = c.request(P.alter_client_quotas.API.key, body)
    return {tuple(sorted((d.entity_type, d.entity_name) for d in e.entity)): (e.error_code, e.error_message)
            for e in r.entries}


def describe(bootstrap: str, components: list[tuple[str, int, str | None]], strict: bool = False):
    """DescribeClientQuotas; -> (error_code, error_message, {entity pairs: {key: value}} or None).
    Kafka answers a success with error_message "" (the schema's default), not null."""
    with BrokerClient(bootstrap) as c:
        r = c.request(P.describe_client_quotas.API.key, {"strict": strict, "components": [
            {"entity_type": t, "match_type": m, "match": n} for t, m, n in components]})
    entries = None if r.entries is None else {
        tuple(sorted((d.entity_type, d.entity_name) for d in e.entity)): {v.key: v.value for v in e["values"]}
        for e in r.entries}
    return r.error_code, r.error_message, entries


def settled(bootstrap: str, components, expected: dict, strict: bool = False) -> None:
    """Kafka's broker describes its metadata image, which follows the controller's commit: wait for it."""
    until(lambda: describe(bootstrap, components, strict) == (0, "", expected), timeout=30,
          what=f"DescribeClientQuotas {components} = {expected}")


def test_alter_refuses_what_kafka_refuses(broker):
    u = Peer.unique("u")
    bad = 42     # INVALID_REQUEST
    got = alter(broker.bootstrap,
                ({"user": u}, {"producer_byte_rate": 1.5}),
                ({"client-id": u}, {"bogus": 1.0}),
                ({"user": u, "client-id": "zero"}, {"request_percentage": 0.0}),
                ({"ip": "10.0.0.7"}, {"connection_creation_rate": 2.5}),
                ({"ip": "10.0.0.8"}, {"producer_byte_rate": 10.0}),
                ({"user": u, "ip": "10.0.0.9"}, {"producer_byte_rate": 10.0}),
                ({"client-id": "big-" + u}, {"consumer_byte_rate": 1e19}),
                ({"group": u}, {"producer_byte_rate": 10.0}),
                ({"user": ""}, {"producer_byte_rate": 10.0}),
                ({}, {"producer_byte_rate": 10.0}),
                ({"client-id": "ok-" + u}, {"request_percentage": 25.5}))
    assert got == {
        (("user", u),): (bad, "producer_byte_rate cannot be a fractional value."),
        (("client-id", u),): (bad, "Invalid configuration key bogus"),
        (("client-id", "zero"), ("user", u)): (bad, "Quota request_percentage must be greater than 0"),
        (("ip", "10.0.0.7"),): (bad, "connection_creation_rate cannot be a fractional value."),
        (("ip", "10.0.0.8"),): (bad, "Invalid configuration key producer_byte_rate"),
        (("ip", "10.0.0.9"), ("user", u)): (bad, "Invalid quota entity combination, IP entity shouldnot be "
                                                 "combined with User or ClientId"),
        (("client-id", "big-" + u),): (bad, "Proposed value for consumer_byte_rate is too large for a LONG."),
        (("group", u),): (bad, "Unhandled client quota entity type: group"),
        (("user", ""),): (bad, "Empty user not supported"),
        (): (bad, "Invalid empty client quota entity"),
        (("client-id", "ok-" + u),): (0, None),
    }
    settled(broker.bootstrap, [("client-id", EXACT, "ok-" + u)], {(("client-id", "ok-" + u),): {
        "request_percentage": 25.5}})
    # the same entity twice: Kafka applies the first and answers the second's error for both
    dup = {"client-id": "dup-" + u}
    assert alter(broker.bootstrap, (dup, {"producer_byte_rate": 10.0}), (dup, {"producer_byte_rate": 20.0})) == {
        (("client-id", "dup-" + u),): (bad, f"Ignoring duplicate entity ClientQuotaEntity(entries={{client-id=dup-{u}}})")}
    settled(broker.bootstrap, [("client-id", EXACT, "dup-" + u)], {(("client-id", "dup-" + u),): {
        "producer_byte_rate": 10.0}})
    # validate_only answers and keeps nothing; removing what is not set is no error
    assert alter(broker.bootstrap, ({"client-id": "v-" + u}, {"producer_byte_rate": 10.0}), validate_only=True) \
        == {(("client-id", "v-" + u),): (0, None)}
    assert alter(broker.bootstrap, ({"client-id": "ok-" + u}, {"request_percentage": None, "consumer_byte_rate": None})) \
        == {(("client-id", "ok-" + u),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, "ok-" + u)], {})
    assert describe(broker.bootstrap, [("client-id", EXACT, "v-" + u)]) == (0, "", {})


@pytest.mark.parametrize("components, code, message", [
    ([("", EXACT, "x")], 42, "Invalid empty entity type."),
    ([("user", EXACT, "a"), ("user", ANY, None)], 42, "Entity type user cannot appear more than once in the filter."),
    ([("group", EXACT, "x")], 35, "Unsupported entity type group"),
    ([("user", EXACT, None)], 42, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("user", DEFAULT, "x")], 42, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("user", ANY, "x")], 42, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("user", 7, None)], 42, "Unknown match type 7"),
    ([("ip", ANY, None), ("client-id", EXACT, "c")], 42, "Invalid entity filter component combination. IP filter "
                                                          "component should not be used with user or clientId "
                                                          "filter component."),
])
def test_describe_refuses_what_kafka_refuses(broker, components, code, message):
    assert describe(broker.bootstrap, components) == (code, message, None)


def test_describe_matches_exact_default_any_and_strict(broker):
    u, c = Peer.unique("du"), Peer.unique("dc")
    assert alter(broker.bootstrap, ({"user": u}, {"producer_byte_rate": 1e6}),
                 ({"user": u, "client-id": c}, {"consumer_byte_rate": 2e6, "request_percentage": 50.0}),
                 ({"user": u, "client-id": None}, {"producer_byte_rate": 3e6}),
                 ({"client-id": c}, {"controller_mutation_rate": 4.0})) == {
        (("user", u),): (0, None), (("client-id", c), ("user", u)): (0, None),
        (("client-id", None), ("user", u)): (0, None), (("client-id", c),): (0, None)}
    mine = {(("user", u),): {"producer_byte_rate": 1e6},
            (("client-id", c), ("user", u)): {"consumer_byte_rate": 2e6, "request_percentage": 50.0},
            (("client-id", None), ("user", u)): {"producer_byte_rate": 3e6}}
    settled(broker.bootstrap, [("user", EXACT, u)], mine)
    assert describe(broker.bootstrap, [("user", EXACT, u)], strict=True) == (0, "", {(("user", u),): mine[
        (("user", u),)]})
    # "any" is any entity of the type, its default included (ClientQuotasImage.matches)
    assert describe(broker.bootstrap, [("user", EXACT, u), ("client-id", ANY, None)]) == (0, "", {
        k: v for k, v in mine.items() if len(k) == 2})
    assert describe(broker.bootstrap, [("user", EXACT, u), ("client-id", DEFAULT, None)], strict=True) == (0, "", {
        (("client-id", None), ("user", u)): {"producer_byte_rate": 3e6}})
    assert describe(broker.bootstrap, [("client-id", EXACT, c)], strict=True) == (0, "", {
        (("client-id", c),): {"controller_mutation_rate": 4.0}})
    assert describe(broker.bootstrap, [("client-id", EXACT, c), ("user", ANY, None)], strict=True) == (0, "", {
        (("client-id", c), ("user", u)): {"consumer_byte_rate": 2e6, "request_percentage": 50.0}})


def produce_frame(topic: str, client_id: str, value_size: int) -> bytes:
    batch = v2_batch(0, [(int(time.time() * 1000), None, b"v" * value_size, [])])
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}
    return P.encode_request(P.produce.API.key, 9, 1, client_id, body)


def test_produce_over_the_byte_rate_answers_kafkas_throttle_time(broker):
    """The first request of a client over its quota: Kafka's Rate spans at least 10 windows of
    1 s (quota.window.num - 1), so throttle_time_ms = round(bytes / rate * 1000 - 10000)."""
    topic, client = Peer.unique("qt"), Peer.unique("qc")
    create(broker.bootstrap, topic)
    assert alter(broker.bootstrap, ({"client-id": client}, {"producer_byte_rate": 1000.0})) == {
        (("client-id", client),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, client)], {(("client-id", client),): {
        "producer_byte_rate": 1000.0}})
    request = produce_frame(topic, client, 10_200)
    response = P.decode_response(P.produce.API.key, 9, exchange_raw(broker.bootstrap, frame(request)))[1]
    assert response.responses[0].partition_responses[0].error_code == 0
    assert response.throttle_time_ms == round(len(request) * 1000 / 1000.0 - 10_000) > 0
    # another client id is not throttled
    other = produce_frame(topic, Peer.unique("free"), 10_200)
    assert P.decode_response(P.produce.API.key, 9, exchange_raw(broker.bootstrap, frame(other)))[1] \
        .throttle_time_ms == 0


def test_librdkafka_producer_and_consumer_are_throttled_and_lose_nothing(broker):
    topic, client = Peer.unique("qp"), Peer.unique("qpc")
    create(broker.bootstrap, topic)
    assert alter(broker.bootstrap, ({"client-id": client}, {"producer_byte_rate": 2000.0,
                                                            "consumer_byte_rate": 2000.0})) == {
        (("client-id", client),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, client)], {(("client-id", client),): {
        "producer_byte_rate": 2000.0, "consumer_byte_rate": 2000.0}})
    throttled: list[float] = []
    # one record per batch: a batch larger than the quota lets through in its windows (20000 bytes)
    # would never be fetched, by Kafka either (the first batch goes whole, is throttled, taken back)
    p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client, "linger.ms": 50, "batch.size": 1200,
                  "throttle_cb": lambda e: throttled.append(e.throttle_time)})
    values = [b"%05d" % i + b"x" * 995 for i in range(24)]
    errors = []
    for v in values:
        p.produce(topic, value=v, partition=0, on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(60) == 0 and errors == []
    until(lambda: p.poll(0.1) is not None and throttled, timeout=30, what="the producer's throttle callback")
    assert max(throttled) > 0

    consumed: list[bytes] = []
    c_throttled: list[float] = []
    c = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": client, "group.id": Peer.unique("qg"),
                  "enable.auto.commit": False, "throttle_cb": lambda e: c_throttled.append(e.throttle_time)})
    c.assign([TopicPartition(topic, 0, 0)])

    def poll() -> bool:
        m = c.poll(0.2)
        if m is not None and not m.error():
            consumed.append(m.value())
        return len(consumed) >= len(values) and bool(c_throttled)
    try:
        until(poll, timeout=120, what="every record consumed and the consumer throttled")
    finally:
        c.close()
    assert consumed == values and max(c_throttled) > 0


def test_request_percentage_throttles_any_request_at_most_one_window(broker):
    """request_percentage counts the time spent on each request (ClientRequestQuotaManager);
    its throttle time is bounded by one quota window (1000 ms)."""
    client = Peer.unique("rq")
    assert alter(broker.bootstrap, ({"client-id": client}, {"request_percentage": 0.01})) == {
        (("client-id", client),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, client)], {(("client-id", client),): {
        "request_percentage": 0.01}})
    request = frame(P.encode_request(P.metadata.API.key, 12, 1, client, {
        "topics": None, "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}))

    def throttle() -> int:
        return P.decode_response(P.metadata.API.key, 12, exchange_raw(broker.bootstrap, request))[1].throttle_time_ms
    assert 0 < until(throttle, timeout=120, what="a Metadata request throttled") <= 1000


# README "What differs from Kafka": kept on purpose, asserted as kproto's, a strict xfail on Kafka's side.
RESOLVES_NAMES = "Kafka accepts an ip entity named by any host name it can resolve; kproto resolves no name a client sends"
ACCEPTS_NAN = "Kafka's check is value <= 0.0, which NaN passes"


@pytest.mark.differs(KAFKA, RESOLVES_NAMES)
def test_an_ip_entity_is_an_address(broker):
    host = socket.gethostname()          # a name this machine resolves (/etc/hosts), not "localhost"
    assert host != "localhost" and socket.gethostbyname(host)
    try:
        assert alter(broker.bootstrap, ({"ip": host}, {"connection_creation_rate": 5.0})) == {
            (("ip", host),): (42, f"{host} is not a valid IP or resolvable host.")}
    finally:     # Kafka took it: this machine's connections would be limited for every later test
        alter(broker.bootstrap, ({"ip": host}, {"connection_creation_rate": None}))


@pytest.mark.differs(KAFKA, ACCEPTS_NAN)
def test_a_nan_quota_is_refused(broker):
    client = Peer.unique("nan")
    assert alter(broker.bootstrap, ({"client-id": client}, {"request_percentage": float("nan")})) == {
        (("client-id", client),): (42, "Quota request_percentage must be greater than 0")}


def test_controller_mutation_rate_throttles_topic_mutations(broker):
    """ControllerMutationQuotaManager: a TokenBucket of controller_mutation_rate partitions a second,
    11 s of them at most; a strict request (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
    v5+) is refused topic by topic once it is below zero, and told how long to wait."""
    client = Peer.unique("mut")
    assert alter(broker.bootstrap, ({"client-id": client}, {"controller_mutation_rate": 1.0})) == {
        (("client-id", client),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, client)], {(("client-id", client),): {
        "controller_mutation_rate": 1.0}})
    names = [Peer.unique("mt") for _ in range(3)]
    with BrokerClient(broker.bootstrap, client_id=client) as c:
        def create_topics(*names: str):
            return c.request(P.create_topics.API.key, {"timeout_ms": 10000, "validate_only": False, "topics": [
                {"name": n, "num_partitions": 30, "replication_factor": 1, "assignments": [], "configs": []}
                for n in names]}, version=7)
        first = create_topics(names[0])        # 11 tokens: taken, the bucket at -19
        assert ([(t.error_code, t.error_message) for t in first.topics], first.throttle_time_ms) == ([(0, None)], 0)
        second = create_topics(*names[1:])     # below zero: each topic refused
        assert [(t.name, t.error_code, t.error_message) for t in second.topics] == [
            (n, 89, None) for n in names[1:]]      # THROTTLING_QUOTA_EXCEEDED
        assert 0 < second.throttle_time_ms <= 19_000


def test_a_fetch_over_consumer_byte_rate_answers_no_partitions(broker):
    """A batch larger than the quota lets through in its windows is still sent whole (KIP-74),
    so that Fetch goes over consumer_byte_rate: Kafka answers it with no partitions, takes its
    bytes back and answers the throttle time; a Fetch under the quota is answered."""
    topic, client = Peer.unique("qf"), Peer.unique("qfc")
    create(broker.bootstrap, topic)
    request = frame(produce_frame(topic, Peer.unique("w"), 3000))
    # Kafka's broker learns it leads the new partition a moment after CreateTopics answered
    until(lambda: P.decode_response(P.produce.API.key, 9, exchange_raw(broker.bootstrap, request))[1]
          .responses[0].partition_responses[0].error_code == 0, what="the batch appended")
    assert alter(broker.bootstrap, ({"client-id": client}, {"consumer_byte_rate": 100.0})) == {
        (("client-id", client),): (0, None)}
    settled(broker.bootstrap, [("client-id", EXACT, client)], {(("client-id", client),): {
        "consumer_byte_rate": 100.0}})

    def fetch(offset: int, client_id: str = client):
        body = {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
                "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}]}
        reply = exchange_raw(broker.bootstrap, frame(P.encode_request(P.fetch.API.key, 12, 1, client_id, body)))
        return P.decode_response(P.fetch.API.key, 12, reply)[1], len(reply)
    _, whole = fetch(0, Peer.unique("free"))          # the answer a client without quota gets
    size = whole - 5 + 4        # FetchResponse.sizeOf: 4 + the body (after the 5-byte v1 response header)
    throttled, _ = fetch(0)
    assert (throttled.error_code, throttled.responses) == (0, [])
    assert throttled.throttle_time_ms == round(size * 1000 / 100 - 10_000) > 0
    empty, _ = fetch(1)          # nothing past the batch: a small answer, within the quota (the big one was taken back)
    assert empty.throttle_time_ms == 0 and empty.responses[0].partitions[0].records in (b"", None)


def api_versions_from(bootstrap: str, source: str) -> bytes:
    """An ApiVersions v0 on a new connection from ``source``: the response's bytes, or b"" if the
    broker closed the connection without answering."""
    host, port = bootstrap.split(":")
    with socket.socket() as s:
        s.bind((source, 0))
        s.settimeout(30)
        s.connect((host, int(port)))
        s.sendall(frame(P.encode_request(P.api_versions.API.key, 0, 7, "conn", {})))
        try:
            return s.recv(1 << 16)
        except ConnectionResetError:
            return b""


def test_connection_creation_rate_closes_a_connection_over_it(broker):
    """SocketServer's ConnectionQuotas: the address's 11th connection at 1 a second goes over
    (the Rate spans at least 10 s): it is held unanswered and closed; the first 10 are served.
    From 127.0.0.2, so no other test's connections count."""
    ip = "127.0.0.2"
    assert alter(broker.bootstrap, ({"ip": ip}, {"connection_creation_rate": 1.0})) == {(("ip", ip),): (0, None)}
    try:
        settled(broker.bootstrap, [("ip", EXACT, ip)], {(("ip", ip),): {"connection_creation_rate": 1.0}})
        answers = [api_versions_from(broker.bootstrap, ip) for _ in range(11)]
        assert all(answers[:10]) and answers[10] == b""
    finally:
        alter(broker.bootstrap, ({"ip": ip}, {"connection_creation_rate": None}))
