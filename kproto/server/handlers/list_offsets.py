"""ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4) or by time,
via the timeindex; -5 and -6 (tiered storage's) find nothing here."""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.log.manager import LEADER_EPOCH
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import PerEntry, partitions_denied, topic_name
from kproto.server.handlers import handles


def _partition(broker, topic: str, p, version: int) -> dict:
    out = {"partition_index": p.partition_index, "error_code": 0, "timestamp": -1, "offset": -1,
           "leader_epoch": -1}
    plog = broker.logs.get_log(topic, p.partition_index)
    if broker.cluster is not None and broker.cluster.replicated(topic):      # the leader answers
        part, error = broker.cluster.leader_for(topic, p.partition_index, p.get("current_leader_epoch", -1))
        if error:
            out["error_code"] = error
            return out
        if version >= 4:
            out["leader_epoch"] = part.leader_epoch
    if plog is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return out
    found = plog.offset_for_timestamp(p.timestamp)
    if found is not None:       # none found: offset and leader epoch -1 (measured on Kafka 4.4)
        out.update(timestamp=found.timestamp, offset=found.offset, leader_epoch=-1 if version < 4 else LEADER_EPOCH)
    if version == 0:
        out["old_style_offsets"] = [] if found is None else [found.offset]
    return out


LIST_OFFSETS = PerEntry("topics", topic_name, R.TOPIC, O.DESCRIBE, "topics",
                        lambda e, err: {"name": e.name, "partitions": partitions_denied(
                            "partitions", "partition_index", "partition_index", timestamp=-1, offset=-1,
                            old_style_offsets=[])(e, err)})


@handles(P.list_offsets, authorize=LIST_OFFSETS)
async def list_offsets(broker, ctx, body) -> dict:
    v = ctx.request_api_version
    return {"throttle_time_ms": 0, "topics": [
        {"name": t.name, "partitions": [_partition(broker, t.name, p, v) for p in t.partitions]}
        for t in body.topics]}
