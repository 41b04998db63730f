"""A member of a classic consumer group (protocol type ``consumer``, the
range assignor), one blocking call at a time: what Kafka's
ConsumerCoordinator/AbstractCoordinator do for a KafkaConsumer with
``group.protocol=classic`` and the eager RangeAssignor.

    member = GroupMember(data, "billing", ["orders"])
    assigned = member.join()             # JoinGroup (+ SyncGroup; the leader assigns)
    ...
    if member.heartbeat():               # due every heartbeat.interval.ms; True: rejoin
        ...
    member.commit({tp: offset})          # OffsetCommit with the generation and member id
    member.leave()

The caller polls: ``heartbeat()`` between fetches keeps the session alive, so
a fetch must wait less than the session timeout."""

from __future__ import annotations

import time
from typing import Iterable, Mapping

from kproto.client.admin import OffsetAndMetadata, TopicPartition, code
from kproto.client.data import DataClient
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode, KafkaError, error_for

JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
PROTOCOL_TYPE, RANGE = "consumer", "range"
# JoinGroup answers that mean "ask again" (AbstractCoordinator.JoinGroupResponseHandler)
_JOIN_AGAIN = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REBALANCE_IN_PROGRESS,
               ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
# Heartbeat answers after which the member joins again
_REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID,
           ErrorCode.FENCED_INSTANCE_ID}


def subscription_bytes(topics: Iterable[str]) -> bytes:
    """ConsumerProtocolSubscription v0 (ConsumerProtocol.serializeSubscription)."""
    from kproto.schemas.consumer_offsets import ConsumerProtocolSubscription
    return ConsumerProtocolSubscription.build({"version": 0, "data": {"topics": sorted(topics), "user_data": None}})


def subscribed_topics(metadata: bytes) -> list[str]:
    from kproto.schemas.consumer_offsets import CONSUMER_PROTOCOL_SUBSCRIPTION
    return list(CONSUMER_PROTOCOL_SUBSCRIPTION.struct(0).parse(bytes(metadata[2:])).topics)


def assignment_bytes(partitions: Iterable[TopicPartition]) -> bytes:
    from kproto.schemas.consumer_offsets import ConsumerProtocolAssignment
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    return ConsumerProtocolAssignment.build({"version": 0, "data": {
        "assigned_partitions": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()], "user_data": None}})


def assigned_partitions(data: bytes) -> list[TopicPartition]:
    """ConsumerProtocolAssignment of any version, read as its v0 prefix (empty: nothing)."""
    if len(data) < 2:
        return []
    from kproto.schemas.consumer_offsets import CONSUMER_PROTOCOL_ASSIGNMENT
    parsed = CONSUMER_PROTOCOL_ASSIGNMENT.struct(0).parse(bytes(data[2:]))
    return sorted({(t.topic, p) for t in parsed.assigned_partitions for p in t.partitions})


def range_assign(subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]
                 ) -> dict[str, list[TopicPartition]]:
    """RangeAssignor.assign: per topic, its members in member id order each take a
    consecutive range; the first ``n % members`` take one more."""
    out: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        members = sorted(m for m, ts in subscriptions.items() if topic in ts)
        n = partitions.get(topic, 0)
        per, extra = divmod(n, len(members))
        for i, m in enumerate(members):
            start = per * i + min(i, extra)
            out[m] += [(topic, p) for p in range(start, start + per + (1 if i < extra else 0))]
    return out


class GroupMember:
    def __init__(self, data: DataClient, group_id: str, topics: Iterable[str], *,
                 session_timeout_ms: int = 45_000, rebalance_timeout_ms: int = 300_000,
                 heartbeat_interval_ms: int = 3_000, group_instance_id: str | None = None) -> None:
        self.data, self.group_id, self.topics = data, group_id, sorted(topics)
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.heartbeat_interval_ms, self.group_instance_id = heartbeat_interval_ms, group_instance_id
        self.member_id, self.generation_id = "", -1
        self.assignment: list[TopicPartition] = []
        self._coordinator: BrokerClient | None = None
        self._next_heartbeat = 0.0

    # JoinGroup waits for the whole group: its answer may take the rebalance timeout
    # (ConsumerNetworkClient: max(request.timeout.ms, rebalance.timeout.ms + 5 s))
    def _client(self) -> BrokerClient:
        if self._coordinator is None:
            c = self.data.admin.coordinator(self.group_id)
            base = self.data.client
            self._coordinator = BrokerClient(f"{c.host}:{c.port}", config=base.config, client_id=base.client_id,
                                             timeout_s=max(base.timeout_s, self.rebalance_timeout_ms / 1000 + 5))
        return self._coordinator

    def join(self) -> list[TopicPartition]:
        """Join (again) until a SyncGroup hands this member its partitions."""
        while True:
            answer = self._client().request(JOIN_GROUP, {
                "group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": PROTOCOL_TYPE,
                "protocols": [{"name": RANGE, "metadata": subscription_bytes(self.topics)}], "reason": None})
            error = code(answer.error_code)
            if error == ErrorCode.MEMBER_ID_REQUIRED:            # KIP-394: join again with the id given
                self.member_id = answer.member_id
                continue
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if error in _JOIN_AGAIN:
                if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._reconnect()
                time.sleep(0.1)                                  # retry.backoff.ms
                continue
            if error != ErrorCode.NONE:
                raise error_for(error, f"JoinGroup {self.group_id}: {error.name}")
            self.member_id, self.generation_id = answer.member_id, answer.generation_id
            assignments = []
            if answer.leader == self.member_id and not answer.get("skip_assignment", False):
                subs = {m.member_id: subscribed_topics(m.metadata) for m in answer.members}
                md = self.data.refresh(sorted({t for ts in subs.values() for t in ts}))
                counts = {t.name: len(t.partitions) for t in md.topics.values() if t.error == ErrorCode.NONE}
                assignments = [{"member_id": m, "assignment": assignment_bytes(tps)}
                               for m, tps in range_assign(subs, counts).items()]
            synced = self._client().request(SYNC_GROUP, {
                "group_id": self.group_id, "generation_id": self.generation_id, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "protocol_type": PROTOCOL_TYPE,
                "protocol_name": answer.get("protocol_name") or RANGE, "assignments": assignments})
            error = code(synced.error_code)
            if error in _REJOIN or error in _JOIN_AGAIN:
                if error == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                continue
            if error != ErrorCode.NONE:
                raise error_for(error, f"SyncGroup {self.group_id}: {error.name}")
            self.assignment = assigned_partitions(synced.assignment)
            self._next_heartbeat = time.monotonic() + self.heartbeat_interval_ms / 1000
            return self.assignment

    def _reconnect(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
            self._coordinator = None
        self.data.admin.forget_coordinator(self.group_id)

    def heartbeat(self, *, force: bool = False) -> bool:
        """A Heartbeat when one is due; True when the member must join again."""
        now = time.monotonic()
        if not force and now < self._next_heartbeat:
            return False
        self._next_heartbeat = now + self.heartbeat_interval_ms / 1000
        answer = self._client().request(HEARTBEAT, {
            "group_id": self.group_id, "generation_id": self.generation_id, "member_id": self.member_id,
            "group_instance_id": self.group_instance_id})
        error = code(answer.error_code)
        if error == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id, self.generation_id = "", -1
        if error in _REJOIN:
            return True
        if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            self._reconnect()
            return True
        if error != ErrorCode.NONE:
            raise error_for(error, f"Heartbeat {self.group_id}: {error.name}")
        return False

    def commit(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, ErrorCode]:
        """OffsetCommit as this member of its generation."""
        return self.data.admin.offset_commit(
            self.group_id, {tp: OffsetAndMetadata(o) for tp, o in offsets.items()},
            generation_id=self.generation_id, member_id=self.member_id, group_instance_id=self.group_instance_id)

    def leave(self) -> None:
        """LeaveGroup (a static member stays: Kafka's close() does not send it for one)."""
        if self.member_id and self.group_instance_id is None:
            try:
                self._client().request(LEAVE_GROUP, {
                    "group_id": self.group_id, "member_id": self.member_id,
                    "members": [{"member_id": self.member_id, "group_instance_id": None,
                                 "reason": "the consumer is being closed"}]})
            except KafkaError:
                pass
        self.member_id, self.generation_id, self.assignment = "", -1, []

    def close(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
            self._coordinator = None


__all__ = ["GroupMember", "assigned_partitions", "assignment_bytes", "range_assign", "subscribed_topics",
           "subscription_bytes"]
