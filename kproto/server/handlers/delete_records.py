"""DeleteRecords: move partitions' log start offsets forward (KafkaApis.handleDeleteRecordsRequest).

The work and its checks are LogManager.delete_records; this module answers
each partition with its low watermark, or -1 and the error (Kafka's
DeleteRecordsResponse.INVALID_LOW_WATERMARK). A partition named twice is
answered once, for the last offset given, and a topic named twice is one
topic in the answer: Kafka collects the request into a map.
"""

from __future__ import annotations

import asyncio

from kproto.errors import KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import PerEntry, partitions_denied, topic_name
from kproto.server.handlers import handles

INVALID_LOW_WATERMARK = -1


def _delete(broker, wanted: dict[tuple[str, int], int]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for (topic, partition), offset in wanted.items():
        result = {"partition_index": partition, "low_watermark": INVALID_LOW_WATERMARK, "error_code": 0}
        try:
            result["low_watermark"] = broker.logs.delete_records(topic, partition, offset)
        except KafkaError as e:
            result["error_code"] = e.error_code
        out.setdefault(topic, []).append(result)
    return out


DELETE_RECORDS = PerEntry("topics", topic_name, R.TOPIC, O.DELETE, "topics",
                          lambda e, err: {"name": e.name, "partitions": partitions_denied(
                              "partitions", "partition_index", "partition_index", low_watermark=-1)(e, err)})


@handles(P.delete_records, authorize=DELETE_RECORDS)
async def delete_records(broker, ctx, body) -> dict:
    wanted = {(t.name, p.partition_index): p.offset for t in body.topics for p in t.partitions}
    # segment files are renamed and the checkpoint fsynced: off the event loop
    results = await asyncio.to_thread(_delete, broker, wanted)
    return {"throttle_time_ms": 0,
            "topics": [{"name": name, "partitions": parts} for name, parts in results.items()]}
