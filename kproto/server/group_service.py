"""The group coordinator wired to the broker: wire bodies <-> coordinator
events, its appends to ``__consumer_offsets``, its timers on the event loop.

``GroupCoordinator`` (sans-I/O) decides everything; this module only
translates and drives it: after every request and every timer it loops
``poll`` (hand out ready responses) and ``take_appends`` (write the records,
report ``append_done``) until both are empty, as the coordinator's contract
says. Appends go through the same ``UnifiedLog.append`` as Produce, under
the broker's append lock, so the coordinator's records are ordinary batches
that ``kproto dump-log --offsets-decoder`` and Kafka's tools read.

Startup: every ``__consumer_offsets`` partition is replayed before the
listener answers group requests (COORDINATOR_LOAD_IN_PROGRESS meanwhile is
the coordinator's own answer). As in Kafka, the topic itself is created by
the first request that needs it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from dataclasses import fields, is_dataclass
from typing import Any

from kproto.errors import ErrorCode, KafkaError
from kproto.log import LogManager
from kproto.server.coordinator import (
    CoordinatorConfig, DeleteGroupsRequest, DescribeGroupsRequest, GroupCoordinator, HeartbeatRequest,
    JoinGroupRequest, JoinGroupRequestProtocol, LeaveGroupRequest, ListGroupsRequest, MemberIdentity,
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest,
    OffsetFetchRequestTopic, Pending, SyncGroupRequest, SyncGroupRequestAssignment, append_batch,
    records_from_segments,
)

log = logging.getLogger("kproto.server.groups")

OFFSETS_TOPIC = "__consumer_offsets"
(OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP,
 DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS) = 8, 9, 10, 11, 12, 13, 14, 15, 16, 42
#: The APIs the broker routes here.
API_KEYS = (OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP,
            SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS)

#: The peer of the connection whose request is being handled ("/127.0.0.1", as
#: Kafka prints a client host); set by the broker per request task.
CLIENT_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("client_host", default="")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def coordinator_config(values: dict) -> CoordinatorConfig:
    """The coordinator's settings from the broker's (Kafka names)."""
    return CoordinatorConfig(
        group_min_session_timeout_ms=values["group.min.session.timeout.ms"],
        group_max_session_timeout_ms=values["group.max.session.timeout.ms"],
        group_max_size=values["group.max.size"],
        group_initial_rebalance_delay_ms=values["group.initial.rebalance.delay.ms"],
        offsets_topic_num_partitions=values["offsets.topic.num.partitions"],
        offsets_retention_minutes=values["offsets.retention.minutes"],
        offsets_retention_check_interval_ms=values["offsets.retention.check.interval.ms"])


def wire(value: Any) -> Any:
    """A coordinator response (frozen dataclasses, tuples) as a wire body."""
    if is_dataclass(value):
        return {f.name: wire(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [wire(v) for v in value]
    return value


class GroupService:
    def __init__(self, logs: LogManager, values: dict, *, node: tuple[int, str, int],
                 append_lock: threading.Lock | None = None) -> None:
        self.logs = logs
        self.values = values
        self.node = node
        self.append_lock = append_lock or threading.Lock()
        self.coordinator = GroupCoordinator(coordinator_config(values))
        self.partitions = values["offsets.topic.num.partitions"]
        self._waiting: dict[Pending, asyncio.Future] = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.Task | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        if self.logs.has_topic(OFFSETS_TOPIC):
            t = now_ms()
            for p in range(self.partitions):
                self.coordinator.begin_load(p, t)
            for p in range(self.partitions):
                loaded = self.coordinator.load_partition(p, records_from_segments(self._segments(p)), now_ms())
                if loaded:
                    log.info("loaded %d group(s) from %s-%d", len(loaded), OFFSETS_TOPIC, p)
        self._timer = asyncio.create_task(self._timers())

    def _ensure_offsets_topic(self) -> None:
        """Kafka creates __consumer_offsets on the first group request, not at
        startup (a fresh cluster lists no internal topic)."""
        if not self.logs.has_topic(OFFSETS_TOPIC):
            self.logs.create_topic(OFFSETS_TOPIC, self.partitions, {
                "cleanup.policy": "compact", "compression.type": "producer",
                "segment.bytes": self.values["offsets.topic.segment.bytes"]}, internal=True)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        for future in self._waiting.values():
            future.cancel()

    def _segments(self, partition: int):
        """(file, batches from the log start) of each segment of the partition;
        none for a partition missing on disk (created at its first append)."""
        plog = self.logs.get_log(OFFSETS_TOPIC, partition)
        if plog is None:
            return
        for segment in plog.segments:
            start = plog.log_start_offset
            yield str(segment.log.path), (b for b in segment.batches() if b.next_offset > start)

    # -- driving the coordinator ------------------------------------------------------------

    def _drive(self) -> None:
        """poll + take_appends until neither has anything (the coordinator's contract)."""
        while True:
            t = now_ms()
            for pending, response in self.coordinator.poll(t):
                future = self._waiting.pop(pending, None)
                if future is not None and not future.done():
                    future.set_result(response)
            appends = self.coordinator.take_appends()
            if not appends:
                break
            for a in appends:
                error = ErrorCode.NONE
                try:
                    with self.append_lock:
                        self.logs.get_or_create_log(OFFSETS_TOPIC, a.partition).append(append_batch(a))
                except KafkaError as e:
                    log.error("append to %s-%d failed: %s", OFFSETS_TOPIC, a.partition, e)
                    error = e.error_code
                self.coordinator.append_done(a.id, now_ms(), error)
        self._wake.set()

    async def _timers(self) -> None:
        while True:
            deadline = self.coordinator.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=min(delay, 1.0))
                continue        # a request changed the timers: recompute the deadline
            except asyncio.TimeoutError:
                pass
            try:
                self._drive()
            except Exception:   # a timer failure is logged; the broker serves on
                log.exception("group coordinator timer pass failed")

    async def _ask(self, request) -> Any:
        result = self.coordinator.handle(request, now_ms())
        if isinstance(result, Pending):
            future = asyncio.get_running_loop().create_future()
            self._waiting[result] = future
            self._drive()
            return await future
        self._drive()
        return result

    # -- requests ---------------------------------------------------------------------------

    async def handle(self, header, body) -> dict:
        key, version = header.request_api_key, header.request_api_version
        if key not in (LIST_GROUPS, DESCRIBE_GROUPS) and not (key == FIND_COORDINATOR and body.key_type != 0):
            self._ensure_offsets_topic()
        if key == FIND_COORDINATOR:
            return self._find_coordinator(version, body)
        if key == JOIN_GROUP:
            return _join_response(version, await self._ask(JoinGroupRequest(
                group_id=body.group_id, session_timeout_ms=body.session_timeout_ms,
                rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else -1,
                member_id=body.member_id, group_instance_id=body.group_instance_id,
                protocol_type=body.protocol_type,
                protocols=tuple(JoinGroupRequestProtocol(name=p.name, metadata=bytes(p.metadata)) for p in body.protocols),
                client_id=header.client_id or "", client_host=CLIENT_HOST.get(),
                require_known_member_id=version >= 4, support_skipping_assignment=version >= 9)))
        if key == SYNC_GROUP:
            response = wire(await self._ask(SyncGroupRequest(
                group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
                group_instance_id=body.group_instance_id, protocol_type=body.protocol_type,
                protocol_name=body.protocol_name,
                assignments=tuple(SyncGroupRequestAssignment(member_id=a.member_id, assignment=bytes(a.assignment))
                                  for a in body.assignments))))
            return {"throttle_time_ms": 0, **response}
        if key == HEARTBEAT:
            return {"throttle_time_ms": 0, **wire(await self._ask(HeartbeatRequest(
                group_id=body.group_id, generation_id=body.generation_id, member_id=body.member_id,
                group_instance_id=body.group_instance_id)))}
        if key == LEAVE_GROUP:
            return self._leave_response(version, await self._ask(LeaveGroupRequest(
                group_id=body.group_id,
                members=(MemberIdentity(member_id=body.member_id),) if version < 3 else tuple(
                    MemberIdentity(member_id=m.member_id, group_instance_id=m.group_instance_id) for m in body.members))))
        if key == OFFSET_COMMIT:
            return {"throttle_time_ms": 0, **wire(await self._ask(OffsetCommitRequest(
                group_id=body.group_id, generation_id=body.generation_id_or_member_epoch,
                member_id=body.member_id, group_instance_id=body.group_instance_id,
                retention_time_ms=body.retention_time_ms,
                topics=tuple(OffsetCommitRequestTopic(name=t.name, partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=p.partition_index, committed_offset=p.committed_offset,
                        committed_leader_epoch=p.committed_leader_epoch,
                        commit_timestamp=p.commit_timestamp, committed_metadata=p.committed_metadata)
                    for p in t.partitions)) for t in body.topics))))}
        if key == OFFSET_FETCH:
            return await self._offset_fetch(version, body)
        if key == LIST_GROUPS:
            return {"throttle_time_ms": 0, **wire(await self._ask(ListGroupsRequest(
                states_filter=tuple(body.states_filter), types_filter=tuple(body.types_filter))))}
        if key == DESCRIBE_GROUPS:
            return {"throttle_time_ms": 0, **wire(await self._ask(DescribeGroupsRequest(
                groups=tuple(body.groups), api_version=version)))}
        if key == DELETE_GROUPS:
            return {"throttle_time_ms": 0, **wire(await self._ask(DeleteGroupsRequest(
                groups_names=tuple(body.groups_names))))}
        raise KafkaError(f"not a group API: {key}", error_code=ErrorCode.INVALID_REQUEST)

    def _find_coordinator(self, version: int, body) -> dict:
        node_id, host, port = self.node
        keys = body.coordinator_keys if version >= 4 else [body.key]

        def answer(k: str) -> dict:
            if body.key_type != 0:      # transactions are not coordinated here
                return {"key": k, "node_id": -1, "host": "", "port": -1,
                        "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        "error_message": "kproto does not coordinate transactions"}
            return {"key": k, "node_id": node_id, "host": host, "port": port,
                    "error_code": 0, "error_message": None}

        if version >= 4:
            return {"throttle_time_ms": 0, "coordinators": [answer(k) for k in keys]}
        single = answer(keys[0])
        del single["key"]           # v0-3 answer for the one key asked
        return {"throttle_time_ms": 0, **single}

    @staticmethod
    def _leave_response(version: int, response) -> dict:
        out = {"throttle_time_ms": 0, **wire(response)}
        if version < 3 and out["error_code"] == 0 and out["members"]:
            out["error_code"] = out["members"][0]["error_code"]     # v0-2 carry one member
        return out

    async def _offset_fetch(self, version: int, body) -> dict:
        if version >= 8:
            groups = []
            for g in body.groups:
                r = await self._ask(OffsetFetchRequest(
                    group_id=g.group_id, topics=_fetch_topics(g.topics), require_stable=body.require_stable))
                groups.append({"group_id": g.group_id, "topics": wire(r.topics), "error_code": r.error_code})
            return {"throttle_time_ms": 0, "groups": groups}
        r = await self._ask(OffsetFetchRequest(
            group_id=body.group_id, topics=_fetch_topics(body.topics), require_stable=body.require_stable))
        topics = wire(r.topics)
        if version < 2 and r.error_code:    # no group-level error field: on each partition
            for t in topics:
                for p in t["partitions"]:
                    p["error_code"] = r.error_code
        return {"throttle_time_ms": 0, "topics": topics, "error_code": r.error_code}


def _fetch_topics(topics) -> tuple[OffsetFetchRequestTopic, ...] | None:
    if topics is None:
        return None
    return tuple(OffsetFetchRequestTopic(name=t.name, partition_indexes=tuple(t.partition_indexes)) for t in topics)


def _join_response(version: int, response) -> dict:
    out = {"throttle_time_ms": 0, **wire(response)}
    if version < 7 and out["protocol_name"] is None:
        out["protocol_name"] = ""       # not nullable before v7
    return out
