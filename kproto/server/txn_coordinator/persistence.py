"""Transactions as ``__transaction_state`` records, and back (TransactionLog.scala).

Which partition: ``Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions``,
the group coordinator's formula (``coordinator.persistence.partition_for``).

What is written, as Kafka 4.4 writes it (TransactionLog.valueToBytes):

    key    TransactionLogKey   version 0  (transactional_id)
    value  TransactionLogValue version 0 while transaction.version is 0, else 1
                               (TransactionVersion.transactionLogValueVersion): producer
                               id and epoch, timeout, status, partitions grouped by topic
                               in Java's HashMap order (null when Empty), last update and
                               start timestamps; v1 adds the tagged previous and next
                               producer ids and ClientTransactionVersion (KIP-890 part 2)
    tombstone                  null value: the transactional id expired

Loading reads value versions 0 and 1 and never refuses to start: a record it
cannot read (no key, an unknown key version, a truncated or unknown value, a
state id it does not know) is skipped with a warning naming its offset, as
Kafka's loader skips unknown keys; the rest of the partition still loads.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from kproto import schemas
from kproto.common import TRANSACTION_STATE_TOPIC_NAME
from kproto.errors import KprotoError
from kproto.fastpath.protocol import build_record
from kproto.jvm import java_hashmap_order, java_string_hash, topic_partition_hash
from kproto.schemas import transaction_log as TL
from kproto.schemas.internal_records import key_version
from kproto.server.runtime.state_topic import LogRecord, TxnMarker, key_value, partition_for, where_read
from kproto.server.txn_coordinator.metadata import (
    NO_PRODUCER_EPOCH, TransactionMetadata, TxnTransitMetadata,
)
from kproto.server.txn_coordinator.state import TransactionState, state_from_id

__all__ = ["KEY_VERSION", "VALUE_VERSION", "value_version", "partition_for",
           "transaction_log_key", "transaction_log_value", "parse_key", "parse_value", "Replay", "replay"]

log = logging.getLogger("kproto.server.transactions")

KEY_VERSION = 0
VALUE_VERSION = 0


@lru_cache(maxsize=1024)     # every write of a transaction repeats its id's key
def transaction_log_key(transactional_id: str) -> bytes:
    return build_record(TL.TRANSACTION_LOG_KEY, KEY_VERSION, {"transactional_id": transactional_id},
                        TL.TransactionLogKey)


def value_version(transaction_version: int) -> int:
    """TransactionVersion.transactionLogValueVersion: flexible records from transaction.version 1."""
    return 1 if transaction_version >= 1 else 0


def transaction_log_value(t: TxnTransitMetadata, version: int = VALUE_VERSION) -> bytes | None:
    """The record for ``t`` at value ``version``; None (a tombstone) for Dead."""
    if t.state is TransactionState.DEAD:
        return None
    if t.state is TransactionState.EMPTY and t.topic_partitions:
        raise ValueError(f"an Empty transaction has no partitions: {t}")
    partitions = None if t.state is TransactionState.EMPTY else _by_topic(t.topic_partitions)
    return build_record(TL.TRANSACTION_LOG_VALUE, version, {
        "producer_id": t.producer_id, "previous_producer_id": t.previous_producer_id,
        "next_producer_id": t.next_producer_id, "producer_epoch": t.producer_epoch,
        "transaction_timeout_ms": t.txn_timeout_ms, "transaction_status": t.state.id,
        "transaction_partitions": partitions,
        "transaction_last_update_timestamp_ms": t.txn_last_update_timestamp,
        "transaction_start_timestamp_ms": t.txn_start_timestamp,
        "client_transaction_version": t.client_transaction_version}, TL.TransactionLogValue)


@lru_cache(maxsize=1024)     # a transaction's Ongoing, Prepare and Complete records list the same set
def _by_topic(topic_partitions: frozenset[tuple[str, int]]) -> list[dict]:
    """Kafka groups the transaction's HashSet<TopicPartition> by topic into a HashMap: both orders.
    (Shared between calls: read, never changed.)"""
    by_topic: dict[str, list[int]] = {}
    for topic, p in java_hashmap_order(sorted(topic_partitions), topic_partition_hash, copy=True):
        by_topic.setdefault(topic, []).append(p)
    return [{"topic": topic, "partition_ids": by_topic[topic]} for topic in java_hashmap_order(by_topic, java_string_hash)]


def parse_key(key: bytes) -> str | None:
    """The transactional id; None for a key version this coordinator does not own."""
    if key_version(key) not in (None, KEY_VERSION):
        return None
    return schemas.parse(TL.TransactionLogKey, key).data.transactional_id


def parse_value(transactional_id: str, value: bytes) -> TransactionMetadata:
    """A transaction as Kafka loads it (TransactionLog.readTxnRecordValue)."""
    d = schemas.parse(TL.TransactionLogValue, value).data
    state = state_from_id(d.transaction_status)
    meta = TransactionMetadata(
        transactional_id=transactional_id, producer_id=d.producer_id, producer_epoch=d.producer_epoch,
        txn_timeout_ms=d.transaction_timeout_ms, state=state,
        txn_last_update_timestamp=d.transaction_last_update_timestamp_ms,
        previous_producer_id=d.get("previous_producer_id", -1), last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_start_timestamp=d.transaction_start_timestamp_ms, next_producer_id=d.get("next_producer_id", -1),
        client_transaction_version=d.get("client_transaction_version", 0))
    if state is not TransactionState.EMPTY:
        for entry in d.transaction_partitions or ():
            meta.topic_partitions.update((entry.topic, p) for p in entry.partition_ids)
    return meta


@dataclass
class Replay:
    """One partition after replay: the last write per transactional id wins,
    tombstones delete; ``skipped`` says why each unreadable record was dropped."""

    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def replay(records: Iterable[LogRecord], *, partition: int | None = None) -> Replay:
    """``records``: ``(key, value)`` pairs, Records or LoggedRecords (the group
    coordinator's loading types: a skip line says where the record was read), in log order."""
    out = Replay()
    where = TRANSACTION_STATE_TOPIC_NAME if partition is None else f"{TRANSACTION_STATE_TOPIC_NAME}-{partition}"
    for i, record in enumerate(records):
        if isinstance(record, TxnMarker):          # no transaction writes __transaction_state
            continue
        (key, value), position = key_value(record), where_read(record, i)
        try:
            if key is None:
                raise ValueError("the record has no key")
            txn_id = parse_key(bytes(key))
            if txn_id is None:
                raise ValueError(f"unknown key version {key_version(bytes(key))}")
            if value is None:
                out.transactions.pop(txn_id, None)
            else:
                out.transactions[txn_id] = parse_value(txn_id, bytes(value))
        except (KprotoError, ValueError) as e:
            reason = f"{where} {position}: skipped an unreadable record: {e}"
            out.skipped.append(reason)
            log.warning("%s", reason)
    return out
