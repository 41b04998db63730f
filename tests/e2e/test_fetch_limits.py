"""Fetch's byte limits as Kafka's ReplicaManager.readFromLog applies them, raw frames through
kproto's codecs against kproto and Kafka alike: each partition up to partition_max_bytes, the
response up to max_bytes, the first batch found sent whole even when larger (KIP-74), then
nothing but whole batches within what is left. Kafka may end a partition's records with part
of the next batch (kproto sends whole batches only); a client drops that part, so the whole
batches are what is compared."""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode
from kproto.records import iter_batches
from kproto.schemas import protocol as P
from tests.helpers import create_topic, produce_raw, request_raw, until, until_served
from tests.records.helpers import v2_batch

pytestmark = pytest.mark.brokers("kproto", "kafka")

PARTITIONS, BATCHES, PER_BATCH = 3, 3, 10


def batch(i: int) -> bytes:
    """PER_BATCH records of 100 B; every batch the same size."""
    return v2_batch(0, [(1_700_000_000_000, None, b"%03d-" % i + b"x" * 96, [])] * PER_BATCH)


B = len(batch(0))


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = broker.unique("fetch-limits")
    create_topic(broker.bootstrap, name, partitions=PARTITIONS)
    until_served(broker.bootstrap, name)
    for p in range(PARTITIONS):
        # Kafka's partition may answer NOT_LEADER_OR_FOLLOWER a moment after Metadata shows its
        # leader; that answer appends nothing, so the first batch is sent again
        until(lambda: produce_raw(broker.bootstrap, name, p, batch(0)).error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER,
              what=f"{name}-{p} led")
        assert fetch(broker.bootstrap, name, 1 << 20, 1 << 20)[p][1] == PER_BATCH
        for i in range(1, BATCHES):
            assert produce_raw(broker.bootstrap, name, p, batch(i)).error_code == 0
    return name


def fetch(bootstrap: str, topic: str, max_bytes: int, partition_max_bytes: int) -> list[tuple[int, int, list[int]]]:
    """(partition, high watermark, base offsets of the whole batches) of one Fetch v12."""
    body = {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": p, "fetch_offset": 0, "partition_max_bytes": partition_max_bytes}
                for p in range(PARTITIONS)]}]}
    parts = request_raw(bootstrap, P.fetch.API.key, 12, body).responses[0].partitions
    return [(p.partition_index, p.high_watermark,
             [b.base_offset for b in iter_batches(bytes(p.records), allow_incomplete=True)]) for p in parts]


ALL = [0, 10, 20]


@pytest.mark.parametrize("max_bytes, partition_max_bytes, expected", [
    (1 << 20, 1 << 20, [ALL, ALL, ALL]),
    # the response limit spent inside partition 0: the others get nothing
    (B + B // 2, 1 << 20, [[0], [], []]),
    # smaller than one batch: partition 0's first batch whole all the same, then nothing
    (10, 1 << 20, [[0], [], []]),
    # each partition to its own limit, whole batches only
    (1 << 20, 2 * B - 1, [[0], [0], [0]]),
    (1 << 20, 2 * B, [[0, 10], [0, 10], [0, 10]]),
    # only the first partition read gets a batch larger than its limit (minOneMessage, then not)
    (1 << 20, B // 2, [[0], [], []]),
    # both limits at once: 3 batches fit the response, partition 1 takes what partition 0 left
    (3 * B, 2 * B, [[0, 10], [0], []]),
])
def test_fetch_limits_as_kafka_applies_them(broker, topic, max_bytes, partition_max_bytes, expected):
    assert fetch(broker.bootstrap, topic, max_bytes, partition_max_bytes) == \
        [(p, PER_BATCH * BATCHES, e) for p, e in enumerate(expected)]
