"""Produce: validate and append through the log, whose producer state deduplicates
idempotent producers' retries and checks their sequences and epochs, and
transactional ones (fenced epochs, data outside an open transaction).

The log validates every batch as Kafka's LogValidator does (sizes, CRC,
offsets, then every record, decompressed): a rejected batch writes nothing,
and records rejected one by one come back as ``record_errors`` with the
error's text as ``error_message`` (KIP-467). Internal topics take no client
appends (ReplicaManager.appendToLocalLog). acks=-1
on this single node means appended and flushed per the topic's flush policy,
which the append itself applies.

Appends run one request at a time (``broker.append_lock``). A request of up to
``INLINE_APPEND_BYTES`` that will not fsync is appended on the event loop: the
hand-off to a worker thread and back costs more than such an append (the figures:
docs/broker-notes.md). Larger ones, those that may fsync (flush policy due, a roll) and
those arriving while another append holds the lock go to a worker thread, so
the event loop serves other connections while that one copies, checksums
(both without the GIL) and syncs.
"""

from __future__ import annotations

import asyncio

from kproto.common import is_internal, now_ms
from kproto.errors import DecodeError, ErrorCode, KafkaError
from kproto.log.manager import LEADER_EPOCH
from kproto.log.validator import RecordValidationError
from kproto.records import RecordBatch, iter_batches
from kproto.schemas import protocol as P
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import TXN_DENIED, Access, PerEntry, partitions_denied, topic_name
from kproto.server.handlers import handles

# Records per request appended on the event loop at most (see the module's docstring).
INLINE_APPEND_BYTES = 1 << 20


def _idempotent_batch(records) -> RecordBatch | None:
    """The batch of an idempotent producer (one batch per partition, as Kafka requires)."""
    try:
        first = next(iter_batches(records, verify_crc=False), None)
    except DecodeError:
        return None          # the log's validation reports it with the byte position
    if isinstance(first, RecordBatch) and first.producer_id >= 0 and first.base_sequence >= 0:
        return first
    return None


def append_partition(broker, topic: str, partition: int, records) -> dict:
    out = {"index": partition, "error_code": 0, "base_offset": -1, "log_append_time_ms": -1,
           "log_start_offset": -1}
    if is_internal(topic):      # checked first, as ReplicaManager does
        out.update(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                   error_message=f"Cannot append to internal topic {topic}")
        return out
    plog = broker.logs.get_log(topic, partition)
    if plog is None:
        out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return out
    try:
        # a retried idempotent batch comes back with the first append's offsets (the log's dedup)
        epoch = LEADER_EPOCH if broker.cluster is None else broker.cluster.partitions[(topic, partition)].leader_epoch
        info = plog.append(records or b"", leader_epoch=epoch)
    except RecordValidationError as e:
        out.update(error_code=e.error_code, error_message=str(e), log_start_offset=plog.log_start_offset,
                   record_errors=[{"batch_index": i, "batch_index_error_message": text}
                                  for i, text in e.record_errors])
        return out
    except KafkaError as e:
        out.update(error_code=e.error_code, error_message=str(e))
        return out
    out.update(base_offset=info.first_offset, log_append_time_ms=info.log_append_time,
               log_start_offset=plog.log_start_offset)
    return out


def _append_locked(broker, topic_data, refused: dict) -> list[dict]:
    """Under ``append_lock``. ``refused``: (topic, partition) -> (error, message)
    of the partitions not to append."""
    def refusal(key) -> dict:
        error, message = refused[key]
        return {"index": key[1], "error_code": error, "error_message": message, "base_offset": -1,
                "log_append_time_ms": -1, "log_start_offset": -1}
    return [{"name": t.name, "partition_responses": [
        refusal((t.name, p.index)) if (t.name, p.index) in refused
        else append_partition(broker, t.name, p.index, p.records) for p in t.partition_data]}
        for t in topic_data]


def _append_all(broker, topic_data, refused: dict) -> list[dict]:
    with broker.append_lock:
        return _append_locked(broker, topic_data, refused)


def _may_block(broker, topic_data) -> bool:
    """Too large to append on the event loop, or a partition's log may fsync."""
    parts = [(t.name, p.index, len(p.records)) for t in topic_data for p in t.partition_data if p.records]
    if sum(size for _, _, size in parts) > INLINE_APPEND_BYTES:
        return True
    logs = ((broker.logs.get_log(topic, partition), size) for topic, partition, size in parts)
    return any(plog is not None and plog.append_may_sync(size) for plog, size in logs)


async def _append(broker, topic_data, refused: dict) -> list[dict]:
    lock = broker.append_lock
    if lock.acquire(blocking=False):
        try:
            if not _may_block(broker, topic_data):
                return _append_locked(broker, topic_data, refused)
        finally:
            lock.release()
    return await asyncio.to_thread(_append_all, broker, topic_data, refused)


PRODUCE = PerEntry("topic_data", topic_name, R.TOPIC, O.WRITE, "responses",
                   lambda e, err: {"name": e.name, "partition_responses": partitions_denied(
                       "partition_data", "index", "index", base_offset=-1)(e, err)})


async def _produce(a: Access, broker, ctx, body, handler):
    txn = body.get("transactional_id")
    if txn is not None and not a.ok(O.WRITE, R.TRANSACTIONAL_ID, txn):
        response = {"responses": []}
        body.topic_data, denied = [], list(body.topic_data)
        a.merge(response, PRODUCE, denied, TXN_DENIED)
        return response if body.acks != 0 else None
    denied = a.split(body, PRODUCE)
    if not body.topic_data and denied:
        response = {"responses": []}
    else:
        response = await handler(broker, ctx, body)
    a.merge(response, PRODUCE, denied)
    return response if body.acks != 0 else None


@handles(P.produce, authorize=_produce)
async def produce(broker, ctx, body):
    # transactional batches go through the same path (the log's producer state
    # checks their epoch and transaction state) once the coordinator has said
    # that their partitions are in the transaction (KIP-890 part 1)
    # v11+ may be answered TRANSACTION_ABORTABLE (KafkaApis: genericErrorSupported from v11);
    # v12+ with transaction.version 2 finalized adds the partition to the transaction
    # (AddPartitionsToTxnManager's addPartition, KIP-890 part 2): a client told of level 2
    # sends no AddPartitionsToTxn.
    refused = {}
    if body.transactional_id is not None:
        refused = await broker.transactions.verify_produce(body.transactional_id, [
            (t.name, p.index, _idempotent_batch(p.records) if p.records else None)
            for t in body.topic_data for p in t.partition_data], version=ctx.request_api_version)
    if broker.cluster is not None:
        refused.update(_cluster_refusals(broker, body))
    responses = await _append(broker, body.topic_data, refused)
    if broker.cluster is not None:
        await _replicated(broker, body, responses)
    broker.notify_appended()
    if body.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


def _cluster_refusals(broker, body) -> dict:
    """A node of a cluster appends only where it leads, and acks=all only with
    min.insync.replicas in the ISR (ReplicaManager.appendToLocalLog)."""
    refused = {}
    for t in body.topic_data:
        for p in t.partition_data:
            if not is_internal(t.name):
                error = broker.cluster.produce_error(t.name, p.index, body.acks)
                if error is not None:
                    refused[(t.name, p.index)] = error
    return refused


async def _replicated(broker, body, responses: list[dict]) -> None:
    """The leader's state learns of each append; acks=all answers once the ISR has the
    records (DelayedProduce), NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
    the minimum meanwhile, REQUEST_TIMED_OUT at the request's timeout."""
    cluster = broker.cluster
    waits = []
    for t in responses:
        for out in t["partition_responses"]:
            if out["error_code"] == 0 and not is_internal(t["name"]):
                required = cluster.on_append(t["name"], out["index"])
                if body.acks == -1:
                    waits.append((out, t["name"], required))
    if waits:
        deadline = now_ms() + max(body.timeout_ms, 0)
        errors = await asyncio.gather(*(cluster.wait_acks(topic, out["index"], required, deadline)
                                        for out, topic, required in waits))
        for (out, _, _), error in zip(waits, errors):
            if error:
                out["error_code"] = error
