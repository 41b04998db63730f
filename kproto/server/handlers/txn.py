"""The transactional APIs: wire bodies <-> the transaction coordinator (``broker.transactions``),
the group coordinator (TxnOffsetCommit) and the logs (WriteTxnMarkers, DescribeProducers).

The versions each answers are its schema's ``served``, whose ledger says why.

* AddPartitionsToTxn: v0-3 one transaction; v4+ the batched broker form
  (KIP-890), each transaction added or, with ``verify_only``, checked.
  Partitions of unknown topics answer UNKNOWN_TOPIC_OR_PARTITION and the
  others OPERATION_NOT_ATTEMPTED, as KafkaApis does before asking the coordinator.
* AddOffsetsToTxn, EndTxn, TxnOffsetCommit: PRODUCER_FENCED becomes
  INVALID_PRODUCER_EPOCH for clients that predate it.
* WriteTxnMarkers: the coordinator's own path, open to admin tools
  (``kproto transactions abort``, Admin.abortTransaction).
* DescribeProducers, DescribeTransactions, ListTransactions.
"""

from __future__ import annotations

import re

from kproto.common import GROUP_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, G_DENIED, T_DENIED, TXN_DENIED, Access, PerEntry, topic_name
from kproto.server.coordinator import OffsetCommitRequestPartition, OffsetCommitRequestTopic, TxnOffsetCommitRequest
from kproto.server.handlers import handles
from kproto.server.handlers.groups import (
    OFFSET_COMMIT_TOPICS, merge_commit_results, offset_commit_topics, split_unknown_partitions, wire,
)
from kproto.server.txn_coordinator import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest, EndTxnRequest,
    ListTransactionsRequest, TV_2, TransactionResult, WriteTxnMarkers, fenced_error,
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
    # v5+ from a broker adding a Produce's partitions (not verifying) is transaction version 2
    r = await broker.transactions.ask(AddPartitionsToTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, partitions=tuple(partitions),
        verify_only=verify_only, client_transaction_version=TV_2 if version >= 5 and not verify_only else 0))
    if verify_only:
        return [(t, p, error) for (t, p), error in r.verified]
    error = fenced_error("AddPartitionsToTxn", version, r.error_code)
    return [(t, p, error) for t, p in partitions]


# --- authorization (KafkaApis.handle*Txn*, handleDescribeProducers, handle*Transactions) ---


def _txn_denied(rows, error: int):
    """AddPartitionsToTxn v0-3 topic results, every partition answering ``error``."""
    return [{"name": t.name, "results_by_partition": [{"partition_index": p, "partition_error_code": error}
                                                      for p in t.partitions]} for t in rows]


async def _add_partitions_to_txn(a: Access, broker, ctx, body, handler):
    if ctx.request_api_version >= 4:           # the broker form: CLUSTER_ACTION
        if not a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME):
            return {"error_code": C_DENIED, "results_by_transaction": []}
        return await handler(broker, ctx, body)
    topics = body.v3_and_below_topics
    if not a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.v3_and_below_transactional_id):
        return {"results_by_topic_v3_and_below": _txn_denied(topics, TXN_DENIED)}
    denied = [t for t in topics if not a.ok(O.WRITE, R.TOPIC, t.name)]
    if denied:                                     # the others are not attempted, as Kafka answers
        return {"results_by_topic_v3_and_below": [
            *_txn_denied(denied, T_DENIED), *_txn_denied([t for t in topics if t not in denied],
                                                         ErrorCode.OPERATION_NOT_ATTEMPTED)]}
    return await handler(broker, ctx, body)


def _txn_whole(group: bool = False):
    """WRITE on the transactional id (and READ on the group): else one error code."""
    async def check(a: Access, broker, ctx, body, handler):
        if not a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.transactional_id):
            return {"error_code": TXN_DENIED}
        if group and not a.ok(O.READ, R.GROUP, body.group_id):
            return {"error_code": G_DENIED}
        return await handler(broker, ctx, body)
    return check


_ADD_OFFSETS_TO_TXN = _txn_whole(group=True)
_END_TXN = _txn_whole()


async def _txn_offset_commit(a: Access, broker, ctx, body, handler):
    for allowed, error in ((a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.transactional_id), TXN_DENIED),
                           (a.ok(O.READ, R.GROUP, body.group_id), G_DENIED)):
        if not allowed:
            response = {"topics": []}
            a.merge(response, OFFSET_COMMIT_TOPICS, list(body.topics), error)
            return response
    return await offset_commit_topics(a, broker, ctx, body, handler)


async def _write_txn_markers(a: Access, broker, ctx, body, handler):
    if a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME):
        return await handler(broker, ctx, body)
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": C_DENIED} for p in t.partition_indexes]}
        for t in m.topics]} for m in body.markers]}


async def _list_transactions(a: Access, broker, ctx, body, handler):
    response = await handler(broker, ctx, body)
    response["transaction_states"] = [t for t in response["transaction_states"]
                                      if a.ok(O.DESCRIBE, R.TRANSACTIONAL_ID, t["transactional_id"])]
    return response


DESCRIBE_PRODUCERS = PerEntry("topics", topic_name, R.TOPIC, O.READ, "topics",
                              lambda e, err: {"name": e.name, "partitions": [
                                  {"partition_index": p, "error_code": err, "error_message": None,
                                   "active_producers": []} for p in e.partition_indexes]})


DESCRIBE_TRANSACTIONS = PerEntry("transactional_ids", lambda e: e, R.TRANSACTIONAL_ID, O.DESCRIBE,
                                 "transaction_states",
                                 lambda e, err: {"error_code": err, "transactional_id": e, "transaction_state": "",
                                                 "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                                                 "producer_id": -1, "producer_epoch": -1, "topics": []},
                                 error=TXN_DENIED)


@handles(P.add_partitions_to_txn, authorize=_add_partitions_to_txn)
async def add_partitions_to_txn(broker, ctx, body) -> dict:
    version = ctx.request_api_version
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


@handles(P.add_offsets_to_txn, authorize=_ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(broker, ctx, body) -> dict:
    r = await broker.transactions.ask(AddOffsetsToTxnRequest(
        transactional_id=body.transactional_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
        group_id=body.group_id))
    return {"throttle_time_ms": 0,
            "error_code": fenced_error("AddOffsetsToTxn", ctx.request_api_version, r.error_code)}


@handles(P.end_txn, authorize=_END_TXN)
async def end_txn(broker, ctx, body) -> dict:
    # v5+ is transaction version 2 (KafkaApis.handleEndTxnRequest): the coordinator bumps the
    # epoch and answers the id and epoch of the next transaction
    version = ctx.request_api_version
    r = await broker.transactions.ask(EndTxnRequest(
        transactional_id=body.transactional_id, producer_id=body.producer_id, producer_epoch=body.producer_epoch,
        committed=body.committed, client_transaction_version=TV_2 if version >= 5 else 0))
    return {"throttle_time_ms": 0, "error_code": fenced_error("EndTxn", version, r.error_code),
            "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}


@handles(P.write_txn_markers, authorize=_write_txn_markers)
async def write_txn_markers(broker, ctx, body) -> dict:
    markers = []
    for m in body.markers:
        order = WriteTxnMarkers(0, "", m.producer_id, m.producer_epoch, m.coordinator_epoch,
                                TransactionResult.COMMIT if m.transaction_result else TransactionResult.ABORT,
                                tuple((t.name, p) for t in m.topics for p in t.partition_indexes))
        if broker.cluster is not None:      # the leader's markers, replicated before the answer
            errors = await broker.transactions.replicated_markers(order, list(order.partitions))
        else:
            errors = {tp: broker.transactions.write_marker(order, *tp) for tp in order.partitions}
            written = [tp for tp, error in errors.items() if error is E.NONE]
            if written:
                broker.markers_written(order, written)
        markers.append({"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": p, "error_code": errors[(t.name, p)]}
                                            for p in t.partition_indexes]} for t in m.topics]})
    return {"markers": markers}


@handles(P.txn_offset_commit, authorize=_txn_offset_commit)
async def txn_offset_commit(broker, ctx, body) -> dict:
    known, unknown = split_unknown_partitions(broker, body.topics)
    if not known:
        return {"throttle_time_ms": 0, "topics": unknown}
    version = ctx.request_api_version
    broker.groups.ensure_topic()
    # v4 knows TRANSACTION_ABORTABLE; v5+ adds the offsets partition itself with transaction
    # version 2 (GroupCoordinatorService: addPartition from TxnOffsetCommit v5, KIP-890 part 2)
    verification = await broker.transactions.verify(
        body.transactional_id, GROUP_METADATA_TOPIC_NAME, broker.groups.coordinator.partition_for(body.group_id),
        body.producer_id, body.producer_epoch, abortable=version >= 4,
        add=broker.transactions.implicit_add(version, 5))
    r = await broker.groups.ask(TxnOffsetCommitRequest(
        transactional_id=body.transactional_id, group_id=body.group_id, producer_id=body.producer_id,
        producer_epoch=body.producer_epoch, generation_id=body.generation_id_or_member_epoch, member_id=body.member_id or "",
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


@handles(P.describe_producers, authorize=DESCRIBE_PRODUCERS)
async def describe_producers(broker, ctx, body) -> dict:
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


@handles(P.describe_transactions, authorize=DESCRIBE_TRANSACTIONS)
async def describe_transactions(broker, ctx, body) -> dict:
    r = await broker.transactions.ask(DescribeTransactionsRequest(transactional_ids=tuple(body.transactional_ids)))
    states = []
    for s in r.transaction_states:
        out = wire(s)
        out["topics"] = [{"topic": topic, "partitions": list(ps)} for topic, ps in s.topics]
        states.append(out)
    return {"throttle_time_ms": 0, "transaction_states": states}


@handles(P.list_transactions, authorize=_list_transactions)
async def list_transactions(broker, ctx, body) -> dict:
    # v2 (KIP-1152): TransactionStateManager.listTransactionStates keeps the ids the pattern
    # matches whole (Matcher.matches); a pattern that does not compile is INVALID_REGULAR_EXPRESSION
    pattern = body.get("transactional_id_pattern")
    try:
        matcher = re.compile(pattern).fullmatch if pattern else None
    except re.error:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                "unknown_state_filters": [], "transaction_states": []}
    r = await broker.transactions.ask(ListTransactionsRequest(
        state_filters=tuple(body.state_filters), producer_id_filters=tuple(body.producer_id_filters),
        duration_filter=body.duration_filter))
    out = {"throttle_time_ms": 0, **wire(r)}
    if matcher is not None:
        out["transaction_states"] = [t for t in out["transaction_states"] if matcher(t["transactional_id"])]
    return out
