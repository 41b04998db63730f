"""Produce appends in a broker: on the event loop when small, in a worker thread
when large or when another append holds the lock (the loop serves on)."""

from __future__ import annotations

import asyncio
import threading

from kproto import protocol as P
from kproto.compression import CompressionType
from kproto.records import NewRecord, RecordBatch, TimestampType, build_record_batch, iter_batches
from kproto.server.broker import Broker
from kproto.server.handlers.produce import INLINE_APPEND_BYTES
from kproto.server.network import ConnectionInfo
from tests.records.helpers import legacy_batch, LEGACY_GZIP

PRODUCE = P.produce.API.key


def produce_frame(batch: bytes, correlation_id: int, version: int = 10) -> bytes:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    return P.encode_request(PRODUCE, version, correlation_id, "test", body)


def answer(parts, version: int = 10) -> tuple[int, int, int]:
    """(correlation id, error code, base offset) of a one-partition Produce response."""
    [frame] = parts
    header, body = P.decode_response(PRODUCE, version, frame)
    [partition] = body.responses[0].partition_responses
    return header.correlation_id, partition.error_code, partition.base_offset


def test_small_and_large_appends_and_one_waiting_for_the_lock(tmp_path):
    broker = Broker(tmp_path)
    broker.logs.create_topic("t", 1)
    conn = ConnectionInfo(peer="test")
    small = build_record_batch([NewRecord(b"k", b"v" * 100, (), 1000 + i) for i in range(10)])
    half = build_record_batch([NewRecord(None, bytes(1000), (), 2000)] * 600)    # under max.message.bytes
    large = half + half
    assert len(large) > INLINE_APPEND_BYTES

    async def main():
        assert answer(await broker.handle(produce_frame(small, 1), conn)) == (1, 0, 0)
        assert answer(await broker.handle(produce_frame(large, 2), conn)) == (2, 0, 10)
        # Another appender holds the lock: this request waits in a worker thread,
        # and the event loop serves on (asyncio.wait's timeout fires first).
        broker.append_lock.acquire()
        stuck = []      # were the loop blocked on the lock, this timer would unblock it
        safety = threading.Timer(10, lambda: (stuck.append(True), broker.append_lock.release()))
        safety.start()
        task = asyncio.create_task(broker.handle(produce_frame(small, 3), conn))
        await asyncio.wait([task], timeout=0.05)
        assert not stuck and not task.done()
        safety.cancel()
        broker.append_lock.release()
        assert answer(await task) == (3, 0, 1210)

    try:
        asyncio.run(main())
        data = broker.logs.get_log("t", 0).read(0, 1 << 24).read()
        assert [(b.base_offset, b.last_offset) for b in iter_batches(data)] == [
            (0, 9), (10, 609), (610, 1209), (1210, 1219)]
    finally:
        broker.logs.close()


def test_legacy_message_sets_are_stored_as_record_batch_v2(tmp_path):
    """Produce v0 and v2 with MessageSet v0 and v1, plain and gzip-wrapped:
    each request's messages become one RecordBatch v2 at the log end (Kafka
    3+'s LogValidator), keys, values and v1 timestamps kept, v0 with none
    (-1), the wrapper's codec kept (compression.type=producer)."""
    broker = Broker(tmp_path)
    broker.logs.create_topic("t", 1)
    conn = ConnectionInfo(peer="test")
    requests = [
        (0, legacy_batch(0, [(0, None, b"a", b"1"), (1, None, None, b"2"), (2, None, b"c", None)])),
        (1, legacy_batch(0, [(0, None, b"d", b"3"), (1, None, b"e", b"4")], codec=1)),
        (2, legacy_batch(1, [(0, 1700000000100, b"f", b"5"), (1, 1700000000050, None, b"6")])),
        (2, LEGACY_GZIP),
    ]

    async def main():
        return [answer(await broker.handle(produce_frame(data, i, version), conn), version)
                for i, (version, data) in enumerate(requests)]

    try:
        assert asyncio.run(main()) == [(0, 0, 0), (1, 0, 3), (2, 0, 5), (3, 0, 7)]
        data = broker.logs.get_log("t", 0).read(0, 1 << 20).read()
    finally:
        broker.logs.close()
    batches = list(iter_batches(data, verify_crc=True))
    assert {(type(b), b.magic, b.partition_leader_epoch) for b in batches} == {(RecordBatch, 2, 0)}
    assert [(b.base_offset, b.last_offset, b.compression, b.timestamp_type, b.max_timestamp, b.producer_id)
            for b in batches] == [
        (0, 2, CompressionType.NONE, TimestampType.CREATE_TIME, -1, -1),
        (3, 4, CompressionType.GZIP, TimestampType.CREATE_TIME, -1, -1),
        (5, 6, CompressionType.NONE, TimestampType.CREATE_TIME, 1700000000100, -1),
        (7, 8, CompressionType.GZIP, TimestampType.CREATE_TIME, 1700000000401, -1)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for b in batches for r in b.records()] == [
        (0, -1, b"a", b"1", ()), (1, -1, None, b"2", ()), (2, -1, b"c", None, ()),
        (3, -1, b"d", b"3", ()), (4, -1, b"e", b"4", ()),
        (5, 1700000000100, b"f", b"5", ()), (6, 1700000000050, None, b"6", ()),
        (7, 1700000000400, b"c", b"p", ()), (8, 1700000000401, b"d", b"q", ())]
