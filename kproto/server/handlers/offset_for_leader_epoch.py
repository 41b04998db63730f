"""OffsetForLeaderEpoch: the end offset of a leader epoch (KIP-101, KIP-320), which
consumers ask after a leader change to detect truncation.

Kafka's Partition.lastOffsetForLeaderEpoch over LeaderEpochFileCache.endOffsetFor.
Here every partition has had one epoch, LEADER_EPOCH (0), since its log start, so
the cache is one entry (0 -> the log start offset): asking for it answers the log
end offset (the epoch still being written); a later epoch is unknown (-1, -1); an
earlier one answers the start of epoch 0. ``current_leader_epoch`` fences as
Partition.checkCurrentLeaderEpoch does.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.log.manager import LEADER_EPOCH
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import Access, PerEntry, partitions_denied
from kproto.server.handlers import handles

UNDEFINED_EPOCH = UNDEFINED_EPOCH_OFFSET = -1


def _end_offset(broker, topic: str, p) -> dict:
    if broker.cluster is not None and broker.cluster.replicated(topic):     # its epoch cache, on its leader
        return broker.cluster.end_offset_for(topic, p.partition, p.leader_epoch, p.current_leader_epoch)
    out = {"partition": p.partition, "error_code": 0, "leader_epoch": UNDEFINED_EPOCH,
           "end_offset": UNDEFINED_EPOCH_OFFSET}
    log = broker.logs.get_log(topic, p.partition)
    current = p.current_leader_epoch
    if log is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    elif current != -1 and current != LEADER_EPOCH:
        out["error_code"] = (ErrorCode.FENCED_LEADER_EPOCH if current < LEADER_EPOCH
                             else ErrorCode.UNKNOWN_LEADER_EPOCH)
    elif p.leader_epoch == LEADER_EPOCH:
        out.update(leader_epoch=LEADER_EPOCH, end_offset=log.log_end_offset)
    elif p.leader_epoch != UNDEFINED_EPOCH and p.leader_epoch < LEADER_EPOCH:
        # below every known epoch: the requested epoch, ending where the first known one starts
        out.update(leader_epoch=p.leader_epoch, end_offset=log.log_start_offset)
    return out


_PER_TOPIC = PerEntry("topics", lambda e: e.topic, R.TOPIC, O.DESCRIBE, "topics",
                      lambda e, err: {"topic": e.topic, "partitions": partitions_denied(
                          "partitions", "partition", "partition")(e, err)})


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    """KafkaApis.handleOffsetForLeaderEpochRequest: CLUSTER_ACTION on the cluster (followers)
    allows every topic; else DESCRIBE on each (consumers, KIP-320)."""
    if a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME, False):
        return await handler(broker, ctx, body)
    return await a.per_entry(_PER_TOPIC, broker, body, handler)


@handles(P.offset_for_leader_epoch, authorize=_authorize)
async def offset_for_leader_epoch(broker, ctx, body) -> dict:
    return {"throttle_time_ms": 0, "topics": [
        {"topic": t.topic, "partitions": [_end_offset(broker, t.topic, p) for p in t.partitions]}
        for t in body.topics]}
