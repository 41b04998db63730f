"""Events in (requests) and out (responses, pending handles, log appends).

All are inert frozen values (h11's events). Field names are Kafka's JSON names
in snake_case, so the server's translation from the wire schemas is
mechanical; ``error_code`` is an ``ErrorCode`` (an int). A few inputs are not
in the request body and say where they come from.

Version-dependent behaviour is passed explicitly, with Kafka's own names:
``JoinGroupRequest.require_known_member_id`` (JoinGroup v4+),
``support_skipping_assignment`` (v9+), ``DescribeGroupsRequest.api_version``
(v6+ reports unknown groups). Everything else the server maps itself:
JoinGroup v0 has no rebalance timeout (pass -1: the session timeout is used);
LeaveGroup v0-2 carry one member id (pass one ``MemberIdentity``; the v0-2
error is ``members[0].error_code`` when ``error_code`` is NONE);
JoinGroup/SyncGroup before v7/v5 write ``protocol_name`` None as "".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kproto.errors import ErrorCode
from kproto.server.runtime.core import Append, Pending

__all__ = [
    "JoinGroupRequestProtocol", "JoinGroupRequest", "SyncGroupRequestAssignment", "SyncGroupRequest",
    "HeartbeatRequest", "MemberIdentity", "LeaveGroupRequest", "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic", "OffsetCommitRequest", "TxnOffsetCommitRequest", "OffsetFetchRequestTopic", "OffsetFetchRequest",
    "ListGroupsRequest", "DescribeGroupsRequest", "DeleteGroupsRequest", "Request",
    "JoinGroupResponseMember", "JoinGroupResponse", "SyncGroupResponse", "HeartbeatResponse",
    "LeaveGroupResponseMember", "LeaveGroupResponse", "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic", "OffsetCommitResponse", "OffsetFetchResponsePartition",
    "OffsetFetchResponseTopic", "OffsetFetchResponse", "ListedGroup", "ListGroupsResponse",
    "DescribedGroupMember", "DescribedGroup", "DescribeGroupsResponse", "DeletableGroupResult",
    "DeleteGroupsResponse", "OffsetDeleteRequest", "OffsetDeleteResponse", "Response", "Pending", "Append",
    "ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse", "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse", "DescribedConsumerGroup", "DescribedConsumerGroupMember",
    "DescribedTopicPartitions",
]

_frozen = dataclass(frozen=True, slots=True, kw_only=True)


# --- requests -------------------------------------------------------------------------

@_frozen
class JoinGroupRequestProtocol:
    name: str
    metadata: bytes


@_frozen
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    rebalance_timeout_ms: int = -1            # -1 (JoinGroup v0): use session_timeout_ms
    member_id: str = ""
    group_instance_id: str | None = None      # v5+, static membership (KIP-345)
    client_id: str = ""                       # request header
    client_host: str = ""                     # connection's peer address, as the server prints it
    require_known_member_id: bool = True      # v4+ (KIP-394)
    support_skipping_assignment: bool = False  # v9+ (KIP-814)


@_frozen
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes


@_frozen
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None          # v5+
    protocol_name: str | None = None          # v5+
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()


@_frozen
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@_frozen
class MemberIdentity:
    member_id: str = ""                       # "" with an instance id: removal by instance id
    group_instance_id: str | None = None


@_frozen
class LeaveGroupRequest:
    group_id: str
    members: tuple[MemberIdentity, ...]


@_frozen
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    commit_timestamp: int = -1                # v1 only; -1: now
    committed_metadata: str | None = ""


@_frozen
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


@_frozen
class OffsetCommitRequest:
    group_id: str
    topics: tuple[OffsetCommitRequestTopic, ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1               # v2-4; -1: the broker's retention
    api_version: int = 9                      # consumer-group members must commit with v9+


@_frozen
class TxnOffsetCommitRequest:
    """Offsets committed inside a transaction; answered with an ``OffsetCommitResponse``,
    whose shape TxnOffsetCommit's response shares."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    topics: tuple[OffsetCommitRequestTopic, ...]
    generation_id: int = -1                   # v3+ (KIP-447)
    member_id: str = ""
    group_instance_id: str | None = None
    #: the transaction coordinator's verdict on the producer's transaction (KIP-890 verification,
    #: TxnService.verify): anything but NONE answers every partition, nothing is stored
    verification: ErrorCode = ErrorCode.NONE


@_frozen
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]


@_frozen
class OffsetFetchRequest:
    group_id: str
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None   # None: every committed partition
    require_stable: bool = False              # v7+: UNSTABLE_OFFSET_COMMIT while a commit is pending
    member_id: str | None = None              # v9+ (KIP-848): a consumer-group member's fetch
    member_epoch: int = -1


@_frozen
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()       # v4+, case-insensitive
    types_filter: tuple[str, ...] = ()        # v5+; every group here is "classic"


@_frozen
class DescribeGroupsRequest:
    groups: tuple[str, ...]
    api_version: int = 0                      # v6+: unknown groups are GROUP_ID_NOT_FOUND


@_frozen
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]


@_frozen
class OffsetDeleteRequest:
    """OffsetDelete: the partitions whose committed offsets to remove (only partitions the
    broker has: the server answers the others UNKNOWN_TOPIC_OR_PARTITION)."""

    group_id: str
    topics: tuple[OffsetFetchRequestTopic, ...]


@_frozen
class ConsumerGroupHeartbeatRequest:
    """KIP-848's one request for join, heartbeat, leave; None fields: unchanged since the last."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+
    server_assignor: str | None = None
    topic_partitions: tuple[tuple[Any, tuple[int, ...]], ...] | None = None   # (topic id, partitions)
    client_id: str = ""                        # request header
    client_host: str = ""
    api_version: int = 1                       # v0: the coordinator makes the member id
    # with a regex: the topics the member's principal may DESCRIBE (None: no authorizer); the
    # group's regexes resolve to those only (refreshRegularExpressions, Kafka 4.x)
    describable: frozenset[str] | None = None


@_frozen
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]


Request = (JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest
           | OffsetCommitRequest | TxnOffsetCommitRequest | OffsetFetchRequest | ListGroupsRequest
           | DescribeGroupsRequest | DeleteGroupsRequest | OffsetDeleteRequest | ConsumerGroupHeartbeatRequest
           | ConsumerGroupDescribeRequest)


# --- responses ------------------------------------------------------------------------

@_frozen
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@_frozen
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()


@_frozen
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@_frozen
class HeartbeatResponse:
    error_code: ErrorCode


@_frozen
class LeaveGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@_frozen
class LeaveGroupResponse:
    error_code: ErrorCode
    members: tuple[LeaveGroupResponseMember, ...] = ()


@_frozen
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode


@_frozen
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@_frozen
class OffsetCommitResponse:
    topics: tuple[OffsetCommitResponseTopic, ...]


@_frozen
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""
    error_code: ErrorCode = ErrorCode.NONE


@_frozen
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


@_frozen
class OffsetFetchResponse:
    error_code: ErrorCode
    topics: tuple[OffsetFetchResponseTopic, ...] = ()


@_frozen
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@_frozen
class ListGroupsResponse:
    error_code: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@_frozen
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@_frozen
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...] = ()
    error_message: str | None = None          # v6+
    authorized_operations: int = -2147483648  # not computed: no ACLs


@_frozen
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@_frozen
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode


@_frozen
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]


@_frozen
class OffsetDeleteResponse:
    """A group-level error (and no topics), or each partition's (OffsetCommit's shape)."""

    error_code: ErrorCode
    topics: tuple[OffsetCommitResponseTopic, ...] = ()


@_frozen
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[Any, tuple[int, ...]], ...] | None = None   # (topic id, partitions)


@_frozen
class DescribedTopicPartitions:
    topic_id: Any
    topic_name: str
    partitions: tuple[int, ...]


@_frozen
class DescribedConsumerGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    member_type: int = 1                        # v1+: 1 consumer protocol, 0 classic


@_frozen
class DescribedConsumerGroup:
    error_code: ErrorCode
    group_id: str
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerGroupMember, ...] = ()
    authorized_operations: int = -2147483648


@_frozen
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedConsumerGroup, ...]


Response = (JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse
            | OffsetCommitResponse | OffsetFetchResponse | ListGroupsResponse
            | DescribeGroupsResponse | DeleteGroupsResponse | OffsetDeleteResponse
            | ConsumerGroupHeartbeatResponse | ConsumerGroupDescribeResponse)
