"""Helpers the test areas share (no test module imports another; each area's own
helpers are in tests/<area>/helpers.py).

Waiting on an event, a fake clock, kproto's admin client, raw requests through
kproto's codecs, and a confluent-kafka reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import NewTopic as CKNewTopic

from kproto.client.admin import Admin, OffsetAndMetadata
from kproto.client.transport import BrokerClient
from kproto.framing import frame
from kproto import protocol as P


def until(predicate, *, timeout: float = 60.0, what: str = "the condition"):
    """Poll ``predicate`` until it is true (a log line, a counter, a closed
    socket) and return its value; ``timeout`` is only a safety net."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(0.02)
    return value


async def until_async(predicate, *, timeout: float = 60.0, what: str = "the condition"):
    """``until`` inside an event loop (the server under test runs in it)."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        await asyncio.sleep(0.01)
    return value


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


@contextlib.contextmanager
def admin(bootstrap: str):
    with BrokerClient(bootstrap) as client:
        a = Admin(client)
        try:
            yield a
        finally:
            a.close()


def commit(bootstrap: str, group: str, offsets: dict) -> None:
    with admin(bootstrap) as a:
        result = a.offset_commit(group, {tp: OffsetAndMetadata(o) for tp, o in offsets.items()})
    assert set(result.values()) == {0}, result


def committed(bootstrap: str, group: str) -> dict:
    with admin(bootstrap) as a:
        return {tp: o.offset for tp, o in a.offset_fetch(group).items()}


def create_topic(bootstrap: str, name: str, *, partitions: int = 1, **configs: str) -> None:
    """A topic (one partition unless told) through confluent-kafka's AdminClient."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([CKNewTopic(name, partitions, 1, config=configs)])[name].result(timeout=10)


def until_served(bootstrap: str, topic: str, *, present: bool = True) -> None:
    """Wait until the broker's Metadata shows ``topic`` with a leader for every partition
    (or, ``present=False``, no longer lists it). Kafka's controller answers CreateTopics and
    DeleteTopics once committed; its broker serves the change once its metadata log got
    there. kproto's answers after the change, so this returns at once."""
    a = AdminClient({"bootstrap.servers": bootstrap})

    def served() -> bool:
        if not present:      # every topic: asking for this one would auto-create it again
            return topic not in a.list_topics(timeout=10).topics
        t = a.list_topics(topic, timeout=10).topics.get(topic)
        return t is not None and t.error is None and bool(t.partitions) and all(
            p.leader >= 0 for p in t.partitions.values())
    until(served, what=f"{topic} {'served' if present else 'gone'} in Metadata")


def until_applied(bootstrap: str) -> None:
    """Wait until the broker has applied every metadata change committed so far (configs,
    ACLs, quotas, SCRAM users: Kafka's broker applies the controller's records after the
    change was answered, and describes its own image). A marker topic created now is
    committed after them, its deletion after it, and the broker applies the metadata log in
    order: once it no longer lists the marker, it has applied what came before. Nothing of
    the marker is left to list."""
    marker = f"applied-{uuid.uuid4().hex[:12]}"
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([CKNewTopic(marker, 1, 1)])[marker].result(timeout=30)
    until_served(bootstrap, marker)
    a.delete_topics([marker])[marker].result(timeout=30)
    until_served(bootstrap, marker, present=False)


def exchange_raw(bootstrap: str, request: bytes) -> bytes:
    """Send one request frame (its size prefix included) on a new connection; the
    response's bytes after its size prefix."""
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        size = int.from_bytes(_recv(s, 4), "big")
        return _recv(s, size)


def request_raw(bootstrap: str, api_key: int, version: int, body: dict):
    """One request encoded by kproto's codec, at exactly ``version``; the decoded response."""
    reply = exchange_raw(bootstrap, frame(P.encode_request(api_key, version, 1, "raw", body)))
    return P.decode_response(api_key, version, reply)[1]


def produce_raw(bootstrap: str, topic: str, partition: int, records: bytes, version: int = 9):
    """One Produce request with ``records`` as given; the partition's response."""
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    return request_raw(bootstrap, P.produce.API.key, version, body).responses[0].partition_responses[0]


def fetch_raw(bootstrap: str, topic: str, partition: int, fetch_offset: int = 0, replica_id: int = -1):
    """One Fetch v12 from ``fetch_offset`` (as the follower ``replica_id``, or a consumer); the
    partition's response."""
    body = {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": fetch_offset, "partition_max_bytes": 1 << 20}]}]}
    return request_raw(bootstrap, P.fetch.API.key, 12, body).responses[0].partitions[0]


def _recv(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int | None = None,
             timeout: float = 10.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, end, quiet_since = [], time.monotonic() + timeout, time.monotonic()
    try:
        while time.monotonic() < end:
            m = c.poll(0.1)
            if m is None:
                if (expect is None or len(got) >= expect) and time.monotonic() - quiet_since > 1.0:
                    break
                continue
            quiet_since = time.monotonic()
            if not m.error():
                got.append(m.value())
    finally:
        c.close()
    return got


def create_in_cluster(cluster, topic: str, assignment: list[list[int]] | None = None, partitions: int = 1,
                      replication: int = 3, **configs) -> None:
    """Create ``topic`` on a cluster (kproto's or Kafka's) with ``assignment``, else ``partitions``
    x ``replication``; returns once every partition has a leader and its whole ISR."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    config = {k.replace("_", "."): str(v) for k, v in configs.items()}
    new = (CKNewTopic(topic, len(assignment), replica_assignment=assignment, config=config) if assignment
           else CKNewTopic(topic, partitions, replication, config=config))
    admin.create_topics([new])[topic].result(timeout=60)
    for p in range(len(assignment) if assignment else partitions):
        cluster.wait_for(lambda md: (lambda q: q if q is not None and q.leader >= 0
                                     and set(q.isr) == set(q.replicas) else None)(cluster.partition(topic, p, md)),
                         f"{topic}-{p} fully in sync")


def describe_on_both(kafka_ref, cluster, *args: str) -> str:
    """`topics --describe ARGS` by kproto's tool and by Kafka's TopicCommand on ``cluster``: the
    same output (-> it), exit 0 both."""
    from tests.tools.helpers import kt
    status, ours, err = kt(cluster.bootstrap_servers, "--describe", *args)
    assert (status, err) == (0, ""), err
    theirs = kafka_ref.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                                cluster.bootstrap_servers, "--describe", *args)
    assert (theirs.returncode, theirs.stdout) == (0, ours), theirs.stderr
    return ours


THROTTLE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                    "leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def replication_throttles(bootstrap: str, topics: list[str], brokers: list[int]) -> dict:
    """The replication throttles set (kproto's or Kafka's cluster, through librdkafka's describe,
    which asks each broker's resource of that broker): {topic or broker id: {name: value}}."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics] + [
        ConfigResource(ConfigResource.Type.BROKER, str(b)) for b in brokers]
    out: dict = {}
    for r in resources:         # librdkafka asks one BROKER resource per call
        key = r.name if r.restype == ConfigResource.Type.TOPIC else int(r.name)
        out[key] = {name: c.value for name, c in a.describe_configs([r])[r].result(timeout=30).items()
                    if name in THROTTLE_CONFIGS and c.value}
    return out
