"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3) or by time, via the timeindex."""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.log.manager import LEADER_EPOCH
from kproto.schemas import protocol as P


def _partition(broker, topic: str, p, version: int) -> dict:
    out = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1,
           "leader_epoch": -1 if version < 4 else LEADER_EPOCH}
    plog = broker.logs.get_log(topic, p.partition_index)
    if plog is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return out
    found = plog.offset_for_timestamp(p.timestamp)
    if found is not None:
        out.update(timestamp=found.timestamp, offset=found.offset)
    if version == 0:
        out["old_style_offsets"] = [] if found is None else [found.offset]
    return out


async def list_offsets(broker, header, body) -> dict:
    v = header.request_api_version
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [_partition(broker, t.name, p, v) for p in t.partitions]}
        for t in body.topics]}


# Versions: v0-8 (-3 max timestamp, -4 earliest local = earliest here). v9's
# -5 (latest tiered offset, KIP-1005) and v10's timeout need tiered storage
# and remote replicas, which kproto has not got.
HANDLERS = {P.list_offsets.API.key: (list_offsets, 0, 8)}
