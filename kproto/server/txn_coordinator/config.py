"""The transaction coordinator's broker settings, under Kafka's names, Kafka's defaults
(TransactionStateManagerConfig.java, TransactionLogConfig.java)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TransactionConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionConfig:
    transaction_max_timeout_ms: int = 15 * 60_000
    transactional_id_expiration_ms: int = 7 * 24 * 3_600_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    transaction_state_log_num_partitions: int = 50
    # AddOffsetsToTxn adds the group's __consumer_offsets partition to the transaction
    offsets_topic_num_partitions: int = 50
    # a failed marker write is tried again after this (the marker channel's retry.backoff.ms)
    marker_retry_backoff_ms: int = 100
