"""Kafka's classic group coordinator, sans-I/O.

Modules: ``state`` (states, the request/state table), ``events`` (requests,
responses, ``Pending``, ``Append``), ``group`` (GroupMetadata/MemberMetadata),
``offsets`` (committed offsets, retention), ``persistence`` (``__consumer_offsets``
records and partitioning), ``runtime`` (timers, outbox), ``membership``
(join/sync/heartbeat/leave), ``txn_offsets`` (TxnOffsetCommit), ``coordinator``
(``GroupCoordinator``).
"""

from kproto.server.coordinator.config import *  # noqa: F401,F403
from kproto.server.coordinator.config import __all__ as _config_all
from kproto.server.coordinator.coordinator import GroupCoordinator
from kproto.server.coordinator.events import *  # noqa: F401,F403
from kproto.server.coordinator.events import __all__ as _events_all
from kproto.server.coordinator.group import GroupMetadata, IllegalStateError, MemberMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata
from kproto.server.coordinator.persistence import (
    append_batch, java_string_hashcode, kafka_abs, partition_for, records_from_batches, records_from_log,
    records_from_segments,
)
from kproto.server.coordinator.state import GroupEvent, GroupState, REQUEST_OUTCOMES, VALID_PREVIOUS_STATES
from kproto.server.coordinator.txn_offsets import TxnOffsetCommitRequest

__all__ = [*_config_all, *_events_all, "GroupCoordinator", "GroupMetadata", "MemberMetadata",
           "IllegalStateError", "OffsetAndMetadata", "GroupState", "GroupEvent", "REQUEST_OUTCOMES",
           "VALID_PREVIOUS_STATES", "partition_for", "java_string_hashcode", "kafka_abs",
           "records_from_log", "records_from_batches", "records_from_segments", "append_batch",
           "TxnOffsetCommitRequest"]
