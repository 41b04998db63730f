"""Kafka 4.4's newest versions on the wire, raw frames through kproto's codecs, against kproto and
Kafka alike: topics named by id (KIP-516: Produce v13, Fetch v18, OffsetCommit/OffsetFetch v10),
an unknown id answered UNKNOWN_TOPIC_ID with nothing written, ListOffsets v11's tiered-storage
timestamps, and the versions KIP-896 removed answered as Kafka 4.4 answers them."""

from __future__ import annotations

import uuid

import pytest

from kproto.errors import ErrorCode
from kproto.records import iter_batches
from kproto.schemas import protocol as P
from tests.helpers import create_topic, request_raw, until, until_served
from tests.records.helpers import v2_batch

pytestmark = pytest.mark.brokers("kproto", "kafka")


def simple_batch(values: list[bytes]) -> bytes:
    return v2_batch(0, [(1_700_000_000_000, None, v, []) for v in values])


def _topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    body = {"topics": [{"topic_id": uuid.UUID(int=0), "name": topic}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
    return request_raw(bootstrap, P.metadata.API.key, 13, body).topics[0].topic_id


def _produce(bootstrap: str, topic_id: uuid.UUID, records: bytes):
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"topic_id": topic_id, "partition_data": [{"index": 0, "records": records}]}]}
    return request_raw(bootstrap, P.produce.API.key, 13, body).responses[0]


def _fetch(bootstrap: str, topic_id: uuid.UUID):
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic_id": topic_id, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                        "fetch_offset": 0, "last_fetched_epoch": -1, "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20}]}]}
    return request_raw(bootstrap, P.fetch.API.key, 18, body).responses[0]


def test_produce_v13_and_fetch_v18_by_topic_id(broker):
    topic = broker.unique("by-id")
    create_topic(broker.bootstrap, topic)
    until_served(broker.bootstrap, topic)
    tid = _topic_id(broker.bootstrap, topic)
    assert tid != uuid.UUID(int=0)
    out = _produce(broker.bootstrap, tid, simple_batch([b"a", b"b"]))
    assert (out.topic_id, [(p.index, p.error_code, p.base_offset) for p in out.partition_responses]) == \
        (tid, [(0, 0, 0)])
    got = _fetch(broker.bootstrap, tid)
    assert got.topic_id == tid and got.partitions[0].error_code == 0 and got.partitions[0].high_watermark == 2
    assert [r.value for b in iter_batches(bytes(got.partitions[0].records)) for r in b.records()] == [b"a", b"b"]


def test_an_unknown_topic_id_is_unknown_topic_id_and_nothing_is_written(broker):
    nobody = uuid.uuid4()
    out = _produce(broker.bootstrap, nobody, simple_batch([b"x"]))
    assert (out.topic_id, [(p.index, p.error_code, p.base_offset) for p in out.partition_responses]) == \
        (nobody, [(0, ErrorCode.UNKNOWN_TOPIC_ID, -1)])
    got = _fetch(broker.bootstrap, nobody)
    assert (got.topic_id, got.partitions[0].error_code, got.partitions[0].high_watermark) == \
        (nobody, ErrorCode.UNKNOWN_TOPIC_ID, -1)
    group = broker.unique("g-by-id")
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
              "topics": [{"topic_id": nobody, "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                               "committed_leader_epoch": -1,
                                                               "committed_metadata": ""}]}]}
    r = request_raw(broker.bootstrap, P.offset_commit.API.key, 10, commit)
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == \
        [(nobody, [(0, ErrorCode.UNKNOWN_TOPIC_ID)])]


@pytest.mark.parametrize("timestamp", [-5, -6])
def test_list_offsets_v11_tiered_timestamps_find_nothing_without_tiered_storage(broker, timestamp):
    topic = broker.unique("lo")
    create_topic(broker.bootstrap, topic)
    until_served(broker.bootstrap, topic)
    body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]}
    p = request_raw(broker.bootstrap, P.list_offsets.API.key, 11, body).topics[0].partitions[0]
    assert (p.error_code, p.timestamp, p.offset, p.leader_epoch) == (0, -1, -1, -1)


def test_the_default_ranges_are_kafka_4_4s(broker):
    """ApiVersions: each API both answer, advertised alike (KIP-896's floors: Fetch from v4,
    OffsetCommit from v2; Produce still from v0, KAFKA-18659), but those other work still
    owes kproto (the transaction APIs' newest)."""
    body = request_raw(broker.bootstrap, P.api_versions.API.key, 3,
                       {"client_software_name": "kproto-test", "client_software_version": "1"})
    got = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert (got[0], got[1], got[2], got[3], got[8], got[9], got[19]) == \
        ((0, 13), (4, 18), (1, 11), (0, 13), (2, 10), (1, 10), (2, 7))


def test_txn_offset_commit_v6_names_topics_by_id(broker):
    """TxnOffsetCommit v6 (KIP-1319): topics by id, an unknown id UNKNOWN_TOPIC_ID; a known one
    reaches the transaction check, which refuses a producer no coordinator knows."""
    topic, nobody = broker.unique("txn-by-id"), uuid.uuid4()
    create_topic(broker.bootstrap, topic)
    until_served(broker.bootstrap, topic)
    tid = _topic_id(broker.bootstrap, topic)
    partition = {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""}
    body = {"transactional_id": broker.unique("txn-by-id"), "group_id": broker.unique("g-txn-by-id"),
            "producer_id": 123456, "producer_epoch": 0, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"topic_id": tid, "partitions": [partition]},
                                                  {"topic_id": nobody, "partitions": [partition]}]}
    retried = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}
    for key_type, key in ((1, body["transactional_id"]), (0, body["group_id"])):     # as a client: Kafka
        until(lambda: request_raw(broker.bootstrap, P.find_coordinator.API.key, 4, {     # creates the topics then
            "key_type": key_type, "coordinator_keys": [key]}).coordinators[0].error_code == 0,
            what="the coordinator")
    answers = []        # Kafka's coordinators may still be loading: a client retries those
    until(lambda: answers.append(request_raw(broker.bootstrap, P.txn_offset_commit.API.key, 6, body))
          or not {p.error_code for t in answers[-1].topics for p in t.partitions} & retried,
          what="an answer from the coordinators")
    r = answers[-1]
    assert sorted((str(t.topic_id), [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics) == \
        sorted([(str(tid), [(0, ErrorCode.INVALID_PRODUCER_ID_MAPPING)]), (str(nobody), [(0, ErrorCode.UNKNOWN_TOPIC_ID)])])
