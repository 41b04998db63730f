"""Produce appends in a broker: on the event loop when small, in a worker thread
when large or when another append holds the lock (the loop serves on)."""

from __future__ import annotations

import asyncio
import threading

from kproto.records import NewRecord, build_record_batch, iter_batches
from kproto import protocol as P
from kproto.server.broker import Broker
from kproto.server.handlers.produce import INLINE_APPEND_BYTES
from kproto.server.network import ConnectionInfo

PRODUCE = P.produce.API.key


def produce_frame(batch: bytes, correlation_id: int) -> bytes:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}
    return P.encode_request(PRODUCE, 10, correlation_id, "test", body)


def answer(parts) -> tuple[int, int, int]:
    """(correlation id, error code, base offset) of a one-partition Produce response."""
    [frame] = parts
    header, body = P.decode_response(PRODUCE, 10, frame)
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
