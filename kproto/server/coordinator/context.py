"""What the group coordinator's parts share: the groups, the partitions this node
coordinates, and the runtime's outputs (responses, appends, timers).

Kafka's GroupCoordinatorShard hands its GroupMetadataManager and
OffsetMetadataManager the same things (the groups live in the former, which the
latter asks; the timer and the records go back through the shard). Here the
``GroupCoordinator`` builds one ``GroupContext`` over itself (it is the
``CoordinatorRuntime``) and gives it to ``GroupMembership`` and ``GroupOffsets``;
neither part reaches into the other or into the coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kproto.errors import ErrorCode
from kproto.server.coordinator.config import CoordinatorConfig
from kproto.server.coordinator.group import GroupMetadata
from kproto.server.coordinator.state import GroupEvent, GroupState, outcome_for
from kproto.server.runtime.core import Pending, Response, TimerQueue
from kproto.server.runtime.state_topic import partition_for

__all__ = ["GroupContext", "AppendFn", "Handler", "rejection", "validate_current_member"]

# APIs that accept the empty group id (Kafka keeps it for old offset-only clients and admin)
_EMPTY_ID_OK = frozenset({"OffsetCommit", "OffsetFetch", "DescribeGroups", "DeleteGroups", "ConsumerGroupDescribe",
                          "StreamsGroupDescribe"})


#: a request handler of a coordinator part: (request, its Pending handle, now_ms); it answers
#: through ``GroupContext.reply``, at once or later
Handler = Callable[[Any, Pending, int], None]


class AppendFn(Protocol):
    """``CoordinatorRuntime._append``: queue records for the state topic, get the append's id."""

    def __call__(self, partition: int, records: list[tuple[bytes, bytes | None]], now_ms: int,
                 on_done: Callable[[ErrorCode, int], None] | None = None, *,
                 producer: tuple[int, int] = (-1, -1)) -> int: ...


@dataclass(eq=False, slots=True, kw_only=True)
class GroupContext:
    config: CoordinatorConfig
    reply: Callable[[Pending, Response], None]     # a response is ready (CoordinatorRuntime._reply)
    append: AppendFn                               # records for __consumer_offsets
    timers: TimerQueue
    groups: dict[str, GroupMetadata] = field(default_factory=dict)           # classic groups
    consumer_groups: dict[str, Any] = field(default_factory=dict)          # KIP-848 (consumer_groups.ConsumerGroup)
    streams_groups: dict[str, Any] = field(default_factory=dict)           # KIP-1071 (streams_groups.StreamsGroup)
    #: a group's config overrides (GroupConfigManager.groupConfig: ``streams.session.timeout.ms`` ...)
    group_config: Callable[[str], Mapping[str, str]] = field(default=lambda group_id: {})
    owned: set[int] = field(default_factory=set)   # __consumer_offsets partitions coordinated here
    loading: set[int] = field(default_factory=set)  # ... being loaded

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``."""
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def validate_group_status(self, group_id: str | None, api: str) -> ErrorCode | None:
        """GroupCoordinator.validateGroupStatus: the group id is valid and coordinated here, loaded."""
        if group_id is None or (group_id == "" and api not in _EMPTY_ID_OK):
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def add_group(self, group_id: str, now_ms: int) -> GroupMetadata:
        group = GroupMetadata(group_id, GroupState.EMPTY, current_state_timestamp=now_ms)
        self.groups[group_id] = group
        return group


def rejection(group: GroupMetadata, event: GroupEvent) -> ErrorCode | None:
    """The state table's error for ``event`` in the group's state, if it rejects it."""
    answer = outcome_for(group.state, event).answer
    return None if answer is ErrorCode.NONE else answer


def validate_current_member(group: GroupMetadata, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """A static member's instance id must map to this member id; anyone else must be a member."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if current != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if not group.has(member_id):
        return ErrorCode.UNKNOWN_MEMBER_ID
    return None
