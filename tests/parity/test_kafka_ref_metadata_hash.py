"""KIP-1101's MetadataHash in ConsumerGroupMetadataValue (record type 3), against Kafka 4.4.

kproto's algorithm (kproto.server.coordinator.metadata_hash) is diffed against the value
Kafka's own broker writes for a consumer group subscribed to two topics, and kproto's broker's
record for the same scenario is read back with Kafka's DumpLogSegments, which must print the
value the algorithm gives for kproto's topics. Both records are read from the segment files
of ``__consumer_offsets`` with ``--offsets-decoder``."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

import kproto.testing
from kproto.client.transport import BrokerClient
from kproto.schemas import protocol as P
from kproto.server.coordinator.metadata_hash import group_hash, topic_hash

DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
TOPICS = {"mh-a": 3, "mh-b": 1}


def test_group_and_topic_hash_as_hash4j_computes_them():
    """Values hash4j 0.22's XXH3-64 hash stream gives (measured with Kafka 4.4's jar): a
    topic's magic byte, id, name, partition count, partitions and racks; a group's sorted hashes."""
    tid = uuid.UUID("0123456789abcdef" "fedcba9876543210")
    assert topic_hash(tid, "orders", 2, {0: ["rack1"]}) == 3654189960039043323
    assert group_hash({"b": 7, "a": -5}) == 4875440511356949002
    assert group_hash({}) == 0


@pytest.fixture(scope="module")
def kproto_broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("kproto-mh") / "data"
    with kproto.testing.broker(config={"offsets.topic.num.partitions": "1"}, data_dir=data) as b:
        yield b.bootstrap_servers, data


def _scenario(bootstrap: str, group: str) -> tuple[Consumer, dict[str, tuple[uuid.UUID, int]]]:
    """Topics mh-a (3 partitions) and mh-b (1), one group.protocol=consumer member of ``group``
    subscribed to both, assigned all four partitions (returned open: its leave would write
    another epoch); the topics' ids as the broker reports them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).values():
        try:
            f.result(timeout=60)
        except Exception as e:          # the module's second group reuses the topics
            assert "TOPIC_ALREADY_EXISTS" in str(e)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"})
    c.subscribe(list(TOPICS))
    deadline = time.monotonic() + 90
    while len(c.assignment()) < 4 and time.monotonic() < deadline:
        c.poll(0.2)
    assert len(c.assignment()) == 4
    with BrokerClient(bootstrap) as client:
        md = client.request(P.metadata.API.key, {"topics": [{"name": t} for t in TOPICS],
                                                 "allow_auto_topic_creation": False}, version=12)
    return c, {t.name: (t.topic_id, len(t.partitions)) for t in md.topics}


def _dumped_hashes(kafka_ref, log_dir: Path, group: str) -> list[int]:
    """MetadataHash of each ConsumerGroupMetadata record of ``group``, as DumpLogSegments prints them."""
    out = []
    for segment in sorted(log_dir.glob("*.log")):
        r = kafka_ref.run_tool(DUMP_LOG, "--files", str(segment), "--offsets-decoder")
        assert r.returncode == 0, r.stderr
        for line in r.stdout.splitlines():
            m = re.search(r"key: (\{.*\}) payload: (\{.*\})$", line)
            if m is None:
                continue
            key, payload = json.loads(m.group(1)), json.loads(m.group(2))
            if key.get("type") == "3" and key["data"].get("groupId") == group:
                out.append(payload["data"].get("metadataHash", 0))
    return out


def _expected(topics: dict[str, tuple[uuid.UUID, int]]) -> int:
    return group_hash({t: topic_hash(tid, t, n) for t, (tid, n) in topics.items()})


def _last_hash(kafka_ref, log_dir: Path, group: str, want: int) -> list[int]:
    """The group's record hashes, once the record with ``want`` reached the segment
    (Kafka appends it asynchronously; the timeout is a safety net)."""
    deadline = time.monotonic() + 60
    hashes = _dumped_hashes(kafka_ref, log_dir, group)
    while want not in hashes and time.monotonic() < deadline:
        time.sleep(1)
        hashes = _dumped_hashes(kafka_ref, log_dir, group)
    return hashes


def test_kafkas_record_has_kprotos_hash(kafka_ref, kafka_server):
    group = "mh-group-kafka"
    member, topics = _scenario(kafka_server.bootstrap, group)
    try:
        want = _expected(topics)
        # tests/kafka_ref.py's broker has offsets.topic.num.partitions=1
        hashes = _last_hash(kafka_ref, kafka_server.log_dir / "__consumer_offsets-0", group, want)
    finally:
        member.close()
    assert want != 0 and hashes and hashes[-1] == want, (hashes, want)


def test_kprotos_record_prints_the_same_in_dump_log_segments(kafka_ref, kproto_broker):
    bootstrap, data = kproto_broker
    group = "mh-group-kproto"
    member, topics = _scenario(bootstrap, group)
    try:
        want = _expected(topics)
        hashes = _last_hash(kafka_ref, data / "__consumer_offsets-0", group, want)
    finally:
        member.close()
    assert want != 0 and hashes and hashes[-1] == want, (hashes, want)
