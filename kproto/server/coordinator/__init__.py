"""Kafka's classic group coordinator, sans-I/O.

Modules, from the ground up: ``state`` (states, the request/state table),
``events`` (requests, responses, ``Pending``, ``Append``), ``offsets`` (committed
offsets, retention), ``group`` (GroupMetadata/MemberMetadata), ``persistence``
(``__consumer_offsets`` records), ``append_errors`` (a failed append as the APIs
answer it), ``context`` (``GroupContext``: what the parts share), the two parts
``membership`` (``GroupMembership``: join/sync/heartbeat/leave, list/describe) and
``offset_commits`` (``GroupOffsets``: OffsetCommit, TxnOffsetCommit, OffsetFetch),
and ``coordinator`` (``GroupCoordinator``, which composes them). Timers, the outbox
and the state topic's partitioning are the shared runtime's (kproto.server.runtime).
"""

from kproto.server.coordinator.config import *  # noqa: F401,F403
from kproto.server.coordinator.config import __all__ as _config_all
from kproto.server.coordinator.coordinator import GroupCoordinator
from kproto.server.coordinator.events import *  # noqa: F401,F403
from kproto.server.coordinator.events import __all__ as _events_all
from kproto.server.coordinator.group import GroupMetadata, IllegalStateError, MemberMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata
from kproto.server.coordinator.state import GroupEvent, GroupState, REQUEST_OUTCOMES, VALID_PREVIOUS_STATES

__all__ = [*_config_all, *_events_all, "GroupCoordinator", "GroupMetadata", "MemberMetadata",
           "IllegalStateError", "OffsetAndMetadata", "GroupState", "GroupEvent", "REQUEST_OUTCOMES",
           "VALID_PREVIOUS_STATES"]
