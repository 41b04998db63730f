"""Fetch: whole batches straight from segment files, with Kafka's long poll.

Records are never copied through Python: each partition's ``FetchSlice``
becomes a ``RecordsRegion`` that the encoder leaves as a hole, filled by
sendfile when the response is written; its file stays pinned open until then
(a read the long poll drops is unpinned at once). Limits as Kafka applies them: each
partition up to ``partition_max_bytes``, the response up to ``max_bytes``,
but the first batch found is sent whole even when larger (KIP-74) so a
consumer never stalls. Fetch sessions (KIP-227) are not kept: session id 0
tells clients to send full fetches. ``isolation_level`` 1 (read_committed,
v4+) reads up to the last stable offset and lists the aborted transactions
in what it returns, from the segments' ``.txnindex`` (the client drops their
records); read_uncommitted reads to the high watermark, with no list.
"""

from __future__ import annotations

import asyncio
import logging

from kproto.common import now_ms
from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.server.network import RecordsRegion, release_regions
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import PerEntry, partitions_denied, topic_name
from kproto.server.handlers import handles

log = logging.getLogger("kproto.server")
READ_COMMITTED = 1


def _replica_id(body) -> int:
    """The fetching follower's id (v15+ in replica_state), -1 for a consumer."""
    replica_id = body.get("replica_id", -1)
    if replica_id == -1 and body.get("replica_state") is not None:
        replica_id = body.replica_state.replica_id
    return replica_id


def _read(broker, body, regions: list[RecordsRegion]) -> tuple[list[dict], int, bool]:
    """(topic responses, bytes found, whether any partition has an error); the
    regions pinned go to ``regions``."""
    remaining = body.max_bytes if body.max_bytes > 0 else 2**31 - 1
    total, errors, first = 0, False, True
    read_committed = body.get("isolation_level", 0) == READ_COMMITTED
    cluster = broker.cluster
    replica_id = _replica_id(body)
    responses = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            out = {"partition_index": p.partition, "error_code": 0, "high_watermark": -1,
                   "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
                   "preferred_read_replica": -1, "records": b""}
            parts.append(out)
            plog = broker.logs.get_log(t.topic, p.partition)
            max_offset, throttled = None, False
            if cluster is not None and cluster.replicated(t.topic):
                # a node of a cluster answers from the leader only (ReplicaManager.readFromLog);
                # a follower's fetch first moves its progress (Partition.updateFollowerFetchState)
                part, error = cluster.leader_for(t.topic, p.partition, p.get("current_leader_epoch", -1))
                if not error and replica_id >= 0:
                    error = cluster.on_follower_fetch(part, replica_id, p.fetch_offset)
                if error:
                    out["error_code"] = error
                    errors = True
                    continue
                if replica_id < 0:
                    max_offset = plog.high_watermark      # consumers read below the HW only
                else:
                    throttled = cluster.should_leader_throttle(part, replica_id)
            if plog is None:
                out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                errors = True
                continue
            hw, lso = plog.high_watermark, plog.last_stable_offset
            out.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=plog.log_start_offset)
            if read_committed:
                out["aborted_transactions"] = []
            if throttled or remaining <= 0 and not first:
                continue        # ReplicaManager.readFromLog: a throttled replica is sent no records
            try:
                found = plog.read(p.fetch_offset, min(p.partition_max_bytes, remaining), min_one_message=first,
                                  max_offset=lso if read_committed else max_offset)
            except KafkaError as e:
                out["error_code"] = e.error_code
                errors = True
                continue
            if found.length and read_committed:
                out["aborted_transactions"] = [
                    {"producer_id": t.producer_id, "first_offset": t.first_offset}
                    for t in plog.collect_aborted_transactions(p.fetch_offset, lso)]
            if found.length:
                try:
                    fd = found.pin()
                except OSError as e:     # the pool had closed it and it cannot reopen
                    log.warning("fetch from %s-%d: %s", t.topic, p.partition, e)
                    out["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                    errors = True
                    continue
                out["records"] = RecordsRegion(fd, found.position, found.length, found.path, found.unpin)
                regions.append(out["records"])
                total += found.length
                remaining -= found.length
                first = False
        responses.append({"topic": t.topic, "partitions": parts})
    return responses, total, errors


def _read_pinned(broker, body) -> tuple[list[dict], int, bool, list[RecordsRegion]]:
    regions: list[RecordsRegion] = []
    try:
        return (*_read(broker, body, regions), regions)
    except BaseException:
        release_regions(regions)
        raise


FETCH = PerEntry("topics", topic_name, R.TOPIC, O.READ, "responses",
                 lambda e, err: {"topic": e.topic, "partitions": partitions_denied(
                     "partitions", "partition", "partition_index", high_watermark=-1, last_stable_offset=-1,
                     log_start_offset=-1, preferred_read_replica=-1, records=b"")(e, err)})


@handles(P.fetch, authorize=FETCH)
async def fetch(broker, ctx, body) -> dict:
    deadline = now_ms() + max(body.max_wait_ms, 0)
    # KafkaApis.handleFetchRequest: no more than the consumer byte rate quota lets through at once
    window = broker.quotas.fetch.max_value_in_window(ctx.principal.name, ctx.client_id or "")
    if window < (body.max_bytes if body.max_bytes > 0 else 2**31 - 1):
        body.max_bytes = int(window)
        body.min_bytes = min(body.min_bytes, body.max_bytes)
    while True:
        responses, total, errors, regions = _read_pinned(broker, body)
        wait = deadline - now_ms()
        if total >= max(body.min_bytes, 1) or errors or wait <= 0:
            break
        release_regions(regions)
        try:
            await asyncio.wait_for(asyncio.shield(broker.wait_for_append()), wait / 1000)
        except asyncio.TimeoutError:
            responses, total, errors, regions = _read_pinned(broker, body)
            break
    if broker.cluster is not None and _replica_id(body) >= 0:
        broker.cluster.record_leader_replication(responses)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}
