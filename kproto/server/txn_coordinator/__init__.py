"""Kafka's transaction coordinator, sans-I/O.

Modules: ``state`` (states, the request/state table), ``metadata``
(TransactionMetadata and its two-step transitions), ``events`` (requests,
responses, ``WriteTxnMarkers``), ``persistence`` (``__transaction_state``
records and replay), ``config``, ``coordinator`` (``TransactionCoordinator``).
"""

from kproto.server.txn_coordinator.config import TransactionConfig
from kproto.server.txn_coordinator.coordinator import TransactionCoordinator, txn_append_error
from kproto.server.txn_coordinator.events import *  # noqa: F401,F403
from kproto.server.txn_coordinator.events import __all__ as _events_all
from kproto.server.txn_coordinator.metadata import TV_2, TransactionMetadata, TxnTransitMetadata
from kproto.server.txn_coordinator.persistence import replay
from kproto.server.txn_coordinator.state import (
    REQUEST_OUTCOMES, VALID_PREVIOUS_STATES, TransactionResult, TransactionState, TxnEvent,
)

__all__ = [*_events_all, "TransactionConfig", "TransactionCoordinator", "txn_append_error",
           "TV_2", "TransactionMetadata", "TxnTransitMetadata", "replay",
           "REQUEST_OUTCOMES", "VALID_PREVIOUS_STATES", "TransactionResult", "TransactionState", "TxnEvent"]
