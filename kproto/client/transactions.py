"""Admin calls for transactions (Kafka's Admin listTransactions, describeTransactions,
describeProducers, abortTransaction), over ``kproto.client.admin.Admin``'s connection.

DescribeTransactions goes to the transactional id's coordinator (FindCoordinator
key type 1); DescribeProducers and the abort's WriteTxnMarkers go to the
partition's leader (a single-node cluster's only broker: the bootstrap one).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from kproto.client.admin import Admin, TopicPartition, code
from kproto.errors import ErrorCode, error_for
from kproto.schemas import protocol as P

__all__ = ["TransactionListing", "TransactionDescription", "ProducerState", "list_transactions",
           "describe_transactions", "describe_producers", "abort_transaction"]

TRANSACTION_KEY_TYPE = 1


class TransactionListing(NamedTuple):
    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str


class TransactionDescription(NamedTuple):
    transactional_id: str
    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: tuple[TopicPartition, ...]


class ProducerState(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


def _node_id(admin: Admin) -> int:
    return admin.metadata([]).brokers[0].node_id


def list_transactions(admin: Admin, *, duration_filter_ms: int = -1, states: Iterable[str] = (),
                      producer_ids: Iterable[int] = ()) -> list[TransactionListing]:
    body = admin.client.request(P.list_transactions.API.key, {
        "state_filters": list(states), "producer_id_filters": list(producer_ids),
        "duration_filter": duration_filter_ms})
    if body.error_code != ErrorCode.NONE:
        raise error_for(body.error_code)
    node = _node_id(admin)
    return [TransactionListing(t.transactional_id, node, t.producer_id, t.transaction_state)
            for t in body.transaction_states]


def describe_transactions(admin: Admin, transactional_ids: Iterable[str]
                          ) -> dict[str, TransactionDescription | ErrorCode]:
    """Each id's description, or the error its coordinator answered."""
    out: dict[str, TransactionDescription | ErrorCode] = {}
    for txn_id in transactional_ids:
        c = admin.find_coordinator(txn_id, TRANSACTION_KEY_TYPE)
        body = admin.client.connect_to(c.host, c.port).request(
            P.describe_transactions.API.key, {"transactional_ids": [txn_id]})
        for s in body.transaction_states:
            if s.error_code != ErrorCode.NONE:
                out[s.transactional_id] = code(s.error_code)
                continue
            out[s.transactional_id] = TransactionDescription(
                s.transactional_id, c.node_id, s.transaction_state, s.producer_id, s.producer_epoch,
                s.transaction_timeout_ms, None if s.transaction_start_time_ms < 0 else s.transaction_start_time_ms,
                tuple((t.topic, p) for t in s.topics for p in t.partitions))
    return out


def describe_producers(admin: Admin, partitions: Iterable[TopicPartition]
                       ) -> dict[TopicPartition, list[ProducerState] | ErrorCode]:
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    body = admin.client.request(P.describe_producers.API.key, {"topics": [
        {"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]})
    out: dict[TopicPartition, list[ProducerState] | ErrorCode] = {}
    for t in body.topics:
        for p in t.partitions:
            if p.error_code != ErrorCode.NONE:
                out[(t.name, p.partition_index)] = code(p.error_code)
                continue
            out[(t.name, p.partition_index)] = [ProducerState(
                s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                None if s.coordinator_epoch < 0 else s.coordinator_epoch,
                None if s.current_txn_start_offset < 0 else s.current_txn_start_offset)
                for s in p.active_producers]
    return out


def abort_transaction(admin: Admin, partition: TopicPartition, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int) -> ErrorCode:
    """Write an ABORT marker to ``partition`` (Admin.abortTransaction: WriteTxnMarkers to its leader)."""
    topic, index = partition
    body = admin.client.request(P.write_txn_markers.API.key, {"markers": [{
        "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": False,
        "topics": [{"name": topic, "partition_indexes": [index]}], "coordinator_epoch": coordinator_epoch,
        "transaction_version": 0}]})
    return code(body.markers[0].topics[0].partitions[0].error_code)
