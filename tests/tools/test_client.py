"""kproto's client: the sans-I/O connection alone, then the blocking
transport and admin layer against real brokers: kproto's, tansu and Apache Kafka."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kproto.client.admin import EARLIEST, LATEST, Admin, ConfigResource, NewTopic, OffsetAndMetadata
from kproto.client.connection import ClientConnection
from kproto.client.transport import BrokerClient, BrokerConnectionError, load_client_properties
from kproto.errors import ErrorCode, MalformedMessageError, UnsupportedVersionError, UsageError
from kproto.framing import NEED_DATA, frame
from kproto import protocol
from tests import components
from tests.helpers import until_served

METADATA, API_VERSIONS = 3, 18


def api_versions_answer(correlation_id: int, version: int, *, error: int = 0) -> bytes:
    body = {"error_code": error, "throttle_time_ms": 0,
            "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2},
                         {"api_key": 3, "min_version": 0, "max_version": 20}]}
    return frame(protocol.encode_response(API_VERSIONS, version, correlation_id, body))


# --- sans-I/O ----------------------------------------------------------------------------

def test_responses_come_back_whole_and_in_order():
    conn = ClientConnection("me")
    cid, data = conn.api_versions_request()
    assert protocol.decode_request(data[4:])[0].client_id == "me"
    answer = api_versions_answer(cid, 3)
    conn.receive_data(answer[:7])
    assert conn.next_response() is NEED_DATA
    conn.receive_data(answer[7:])
    response = conn.next_response()
    assert (response.api_key, response.api_version, response.correlation_id) == (18, 3, cid)
    conn.negotiate(response.body)
    # Metadata: the broker says v0-20, kproto decodes and serves up to 13: 13 it is
    assert conn.version_for(METADATA) == protocol.api(METADATA).served[1] == 13
    assert conn.supports(METADATA) and not conn.supports(19)
    with pytest.raises(UnsupportedVersionError, match="does not support CreateTopics"):
        conn.version_for(19)


def test_a_response_out_of_order_is_an_error():
    conn = ClientConnection()
    first, _ = conn.api_versions_request()
    conn.api_versions_request()
    conn.receive_data(api_versions_answer(first + 1, 3))
    with pytest.raises(MalformedMessageError, match=f"correlation id {first + 1}, expected {first}"):
        conn.next_response()



def test_the_client_names_topics_so_stops_below_the_versions_naming_them_by_id():
    """Kafka 4.4 (and kproto) serve Produce/Fetch v13+ and OffsetCommit/OffsetFetch v10+ by
    topic id only; kproto's client builds those bodies by name, so it speaks the version below."""
    conn = ClientConnection()
    conn.broker_versions = {0: (0, 13), 1: (4, 18), 8: (2, 10), 9: (1, 10), 2: (1, 11)}
    assert [conn.version_for(k) for k in (0, 1, 8, 9, 2)] == [12, 12, 9, 9, 11]

def test_versions_before_negotiation_and_the_kip511_retry():
    conn = ClientConnection()
    with pytest.raises(UnsupportedVersionError, match="not negotiated"):
        conn.version_for(METADATA)
    cid, _ = conn.api_versions_request(3)
    conn.receive_data(api_versions_answer(cid, 3, error=ErrorCode.UNSUPPORTED_VERSION))
    body = conn.next_response().body            # read as v0, whatever was asked
    assert ClientConnection.retry_version(body) == 2
    with pytest.raises(Exception, match="version of API is not supported"):
        conn.negotiate(body)


def test_client_properties(tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("# comment\n! also\nclient.id = tools\nrequest.timeout.ms: 5000\nsasl.mechanism PLAIN\n")
    assert load_client_properties(props) == {"client.id": "tools", "request.timeout.ms": "5000",
                                             "sasl.mechanism": "PLAIN"}
    props.write_text("security.protocol=SSL\n")
    assert load_client_properties(props) == {"security.protocol": "SSL"}     # TLS: kproto/security/client.py
    props.write_text("security.protocol=KERBEROS\n")
    with pytest.raises(UsageError, match="security.protocol=KERBEROS: expected one of PLAINTEXT, SSL"):
        load_client_properties(props)
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n")
    with pytest.raises(UsageError, match="PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"):
        load_client_properties(props)


def test_unreachable_bootstrap_names_every_address():
    a, b = components.free_port(), components.free_port()
    with pytest.raises(BrokerConnectionError) as e:
        BrokerClient(f"127.0.0.1:{a},127.0.0.1:{b}", timeout_s=2)
    assert str(e.value).startswith(f"cannot connect to 127.0.0.1:{a}: ")
    assert f"; cannot connect to 127.0.0.1:{b}: " in str(e.value)


# --- against real brokers ------------------------------------------------------------------



@pytest.mark.brokers(components.KPROTO, components.TANSU, components.KAFKA)
def test_admin_round_trip(broker):
    kind, bs = broker
    t, g = broker.unique("client-t"), broker.unique("client-g")
    with BrokerClient(bs, config={"client.id": "kproto-test"}) as client:
        admin = Admin(client)
        assert client.supports(METADATA) and client.version(METADATA) >= 1
        created = admin.create_topics([NewTopic(t, 2, 1, configs={"retention.ms": "60000"})])
        assert created[t].error == ErrorCode.NONE
        until_served(bs, t)         # Kafka's broker serves the topic once its metadata log got there
        again = admin.create_topics([NewTopic(t, 2, 1)])
        assert again[t].error == ErrorCode.TOPIC_ALREADY_EXISTS
        md = admin.metadata([t])
        topic = md.topics[t]
        assert [p.partition for p in topic.partitions] == [0, 1] and topic.topic_id is not None
        assert {b.node_id for b in md.brokers} == {topic.partitions[0].leader}

        p = Producer({"bootstrap.servers": bs})
        for i in range(5):
            p.produce(t, value=b"v%d" % i, partition=0)
            p.flush(10)             # one batch per record (tansu counts a batch as one offset)
        ends = admin.list_offsets({(t, 0): LATEST, (t, 1): LATEST})
        starts = admin.list_offsets({(t, 0): EARLIEST})
        assert ends[(t, 0)].offset == 5 and ends[(t, 1)].offset == 0
        assert starts[(t, 0)].offset == 0

        res = ConfigResource(2, t)
        entries = {e.name: e for e in admin.describe_configs([res])[res].entries}
        assert entries["retention.ms"].value == "60000"

        assert admin.offset_commit(g, {(t, 0): OffsetAndMetadata(3, "note")}) == {
            (t, 0): ErrorCode.NONE}
        fetched = admin.offset_fetch(g)
        assert fetched[(t, 0)].offset == 3
        # tansu 0.6 drops the commit metadata; kproto keeps it, as Kafka does.
        assert fetched[(t, 0)].metadata == (None if kind == components.TANSU else "note")

        deleted = admin.delete_topics([t])
        assert deleted[t].error == ErrorCode.NONE
        until_served(bs, t, present=False)
        assert t not in admin.metadata().topics
        admin.close()


def test_create_partitions_and_coordinator_on_kproto(tmp_path):
    """tansu 0.6 has no CreatePartitions (test_topics_tool asserts its error)."""
    with components.kproto_broker(tmp_path) as bs, BrokerClient(bs) as client:
        admin = Admin(client)
        admin.create_topics([NewTopic("grow-me", 1, 1)])
        assert admin.create_partitions({"grow-me": 3})["grow-me"].error == ErrorCode.NONE
        assert len(admin.metadata(["grow-me"]).topics["grow-me"].partitions) == 3
        shrink = admin.create_partitions({"grow-me": 2})["grow-me"]
        assert shrink.error == ErrorCode.INVALID_PARTITIONS
        assert admin.find_coordinator("any-group").node_id == 1


@pytest.mark.parametrize("error", ["COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR"])
def test_offset_fetch_waits_out_a_loading_or_moved_coordinator(kafka_broker, error):
    """Kafka's Admin (ListConsumerGroupOffsetsHandler) asks a loading coordinator again
    and looks a moved one up again, within its timeout; Kafka 4.4's broker answers
    COORDINATOR_LOAD_IN_PROGRESS to the first group request while __consumer_offsets
    loads. Twice the error, then the answer."""
    bs = kafka_broker.bootstrap_servers
    with BrokerClient(bs) as client:
        admin = Admin(client)
        admin.create_topics([NewTopic("fetch-retry", 1, 1)])
        assert admin.offset_commit("fetch-retry-group", {("fetch-retry", 0): OffsetAndMetadata(7)}) == {
            ("fetch-retry", 0): ErrorCode.NONE}
        with kafka_broker.faults.inject(api="OffsetFetch", error=error, count=2) as rule:
            assert {tp: o.offset for tp, o in admin.offset_fetch("fetch-retry-group").items()} == {
                ("fetch-retry", 0): 7}
            assert rule.hits == 2
