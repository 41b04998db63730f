"""The transactional APIs: wire bodies <-> the transaction coordinator (``broker.transactions``),
the group coordinator (TxnOffsetCommit) and the logs (WriteTxnMarkers, DescribeProducers).

Versions (each schema's ledger has the rest):

* AddPartitionsToTxn v0-5: v0-3 one transaction; v4-5 the batched broker form
  (KIP-890), each transaction added or, with ``verify_only``, checked.
  Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION and the
  others OPERATION_NOT_ATTEMPTED, as KafkaApis does before asking the coordinator.
* AddOffsetsToTxn v0-4, EndTxn v0-4, TxnOffsetCommit v0-4: EndTxn v5 and
  TxnOffsetCommit v5 are transactions version 2 (an epoch bump per
  transaction, KIP-890 part 2), which the coordinator does not do.
  PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for clients that predate it.
* WriteTxnMarkers v0-2: the coordinator's own path, open to admin tools
  (``kproto transactions abort``, Admin.abortTransaction).
* DescribeProducers v0, DescribeTransactions v0, ListTransactions v0-1 (v2's
  transactional id pattern is not applied, so it is not advertised).
"""

from __future__ import annotations

from kproto.common import GROUP_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.coordinator import OffsetCommitRequestPartition, OffsetCommitRequestTopic, TxnOffsetCommitRequest
from kproto.server.handlers.groups import merge_commit_results, split_unknown_partitions, wire
from kproto.server.txn_coordinator import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest, EndTxnRequest,
    ListTransactionsRequest, TransactionResult, WriteTxnMarkers, fenced_error,
)

E = ErrorCode


def _known(broker, topic: str, partition: int) -> bool:
    return broker.logs.get_log(topic, partition) is not None


def _by_topic(results):
    """[(topic, partition, error)] -> AddPartitionsToTxn topic results, in request order."""
    topics: dict[str, list[dict]] = {}
    for topic, partition, error in results:
        topics.setdefault(topic, []).append({"partition_index": partition, "partition_error_code": error})
    return [{"name": name, "results_by_partition": parts} for name, parts in topics.items()]


async def _add_one(broker, version: int, txn_id: str, pid: int, epoch: int, topics, verify_only: bool = False):
    partitions = [(t.name, p) for t in topics for p in t.partitions]
    unknown = {tp for tp in partitions if not _known(broker, *tp)}
    if unknown:
        return [(t, p, E.UNKNOWN_TOPIC_OR_PARTITION if (t, p) in unknown else E.OPERATION_NOT_ATTEMPTED)
                for t, p in partitions]
    r = await broker.transactions.ask(AddPartitionsToTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, partitions=tuple(partitions),
        verify_only=verify_only))
    if verify_only:
        return [(t, p, error) for (t, p), error in r.verified]
    error = fenced_error("AddPartitionsToTxn", version, r.error_code)
    return [(t, p, error) for t, p in partitions]


async def add_partitions_to_txn(broker, header, body) -> dict:
    version = header.request_api_version
    if version < 4:
        results = await _add_one(broker, version, body.v3_and_below_transactional_id,
                                 body.v3_and_below_producer_id, body.v3_and_below_producer_epoch,
                                 body.v3_and_below_topics)
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _by_topic(results)}
    out = []
    for txn in body.transactions:
        results = await _add_one(broker, version, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                 txn.topics, txn.verify_only)
        out.append({"transactional_id": txn.transactional_id, "topic_results": _by_topic(results)})
    return {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": out}


async def add_offsets_to_txn(broker, header, body) -> dict:
    r = await broker.transactions.ask(AddOffsetsToTxnRequest(
        transactional_id=body.transactional_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
        group_id=body.group_id))
    return {"throttle_time_ms": 0,
            "error_code": fenced_error("AddOffsetsToTxn", header.request_api_version, r.error_code)}


async def end_txn(broker, header, body) -> dict:
    r = await broker.transactions.ask(EndTxnRequest(
        transactional_id=body.transactional_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
        committed=body.committed))
    return {"throttle_time_ms": 0, "error_code": fenced_error("EndTxn", header.request_api_version, r.error_code),
            "producer_id": -1, "producer_epoch": -1}


async def write_txn_markers(broker, header, body) -> dict:
    markers = []
    for m in body.markers:
        order = WriteTxnMarkers(0, "", m.producer_id, m.producer_epoch, m.coordinator_epoch,
                                TransactionResult.COMMIT if m.transaction_result else TransactionResult.ABORT,
                                tuple((t.name, p) for t in m.topics for p in t.partition_indexes))
        errors = {tp: broker.transactions.write_marker(order, *tp) for tp in order.partitions}
        written = [tp for tp, error in errors.items() if error is E.NONE]
        if written:
            broker.markers_written(order, written)
        markers.append({"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": p, "error_code": errors[(t.name, p)]}
                                            for p in t.partition_indexes]} for t in m.topics]})
    return {"markers": markers}


async def txn_offset_commit(broker, header, body) -> dict:
    known, unknown = split_unknown_partitions(broker, body.topics)
    if not known:
        return {"throttle_time_ms": 0, "topics": unknown}
    version = header.request_api_version
    broker.groups.ensure_topic()
    verification = broker.transactions.verify(
        body.transactional_id, GROUP_METADATA_TOPIC_NAME, broker.groups.coordinator.partition_for(body.group_id),
        body.producer_id, body.producer_epoch, abortable=version >= 4)     # v4 knows TRANSACTION_ABORTABLE
    r = await broker.groups.ask(TxnOffsetCommitRequest(
        transactional_id=body.transactional_id, group_id=body.group_id, producer_id=body.producer_id,
        producer_epoch=body.producer_epoch, generation_id=body.generation_id, member_id=body.member_id or "",
        group_instance_id=body.group_instance_id, verification=verification,
        topics=tuple(OffsetCommitRequestTopic(name=t.name, partitions=tuple(
            OffsetCommitRequestPartition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                         committed_leader_epoch=p.committed_leader_epoch,
                                         committed_metadata=p.committed_metadata) for p in partitions))
            for t, partitions in known)))
    topics = merge_commit_results(unknown, wire(r)["topics"])
    if version < 2:     # KafkaApis: clients before 2.0 may crash on COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296)
        for t in topics:
            for p in t["partitions"]:
                if p["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS:
                    p["error_code"] = E.COORDINATOR_NOT_AVAILABLE
    return {"throttle_time_ms": 0, "topics": topics}


async def describe_producers(broker, header, body) -> dict:
    topics = []
    for t in body.topics:
        parts = []
        for p in t.partition_indexes:
            plog = broker.logs.get_log(t.name, p)
            if plog is None:
                parts.append({"partition_index": p, "error_code": E.UNKNOWN_TOPIC_OR_PARTITION,
                              "error_message": None, "active_producers": []})
                continue
            parts.append({"partition_index": p, "error_code": 0, "error_message": None, "active_producers": [
                {"producer_id": pid, "producer_epoch": e.producer_epoch, "last_sequence": e.last_seq,
                 "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                 "current_txn_start_offset": -1 if e.current_txn_first_offset is None
                 else e.current_txn_first_offset}
                for pid, e in sorted(plog.producer_state.producers.items())]})
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}


async def describe_transactions(broker, header, body) -> dict:
    r = await broker.transactions.ask(DescribeTransactionsRequest(transactional_ids=tuple(body.transactional_ids)))
    states = []
    for s in r.transaction_states:
        out = wire(s)
        out["topics"] = [{"topic": topic, "partitions": list(ps)} for topic, ps in s.topics]
        states.append(out)
    return {"throttle_time_ms": 0, "transaction_states": states}


async def list_transactions(broker, header, body) -> dict:
    r = await broker.transactions.ask(ListTransactionsRequest(
        state_filters=tuple(body.state_filters), producer_id_filters=tuple(body.producer_id_filters),
        duration_filter=body.duration_filter))
    return {"throttle_time_ms": 0, **wire(r)}


HANDLERS = {
    P.add_partitions_to_txn.API.key: (add_partitions_to_txn, 0, 5),
    P.add_offsets_to_txn.API.key: (add_offsets_to_txn, 0, 4),
    P.end_txn.API.key: (end_txn, 0, 4),
    P.write_txn_markers.API.key: (write_txn_markers, 0, 2),
    P.txn_offset_commit.API.key: (txn_offset_commit, 0, 4),
    P.describe_producers.API.key: (describe_producers, 0, 0),
    P.describe_transactions.API.key: (describe_transactions, 0, 0),
    P.list_transactions.API.key: (list_transactions, 0, 1),
}
