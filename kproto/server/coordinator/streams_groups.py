"""KIP-1071 streams groups: StreamsGroupHeartbeat and StreamsGroupDescribe (Kafka 4.4's
GroupMetadataManager.streamsGroupHeartbeat and its ``streams`` package), a part of the group
coordinator beside ``consumer_groups``, in the same shape.

A heartbeat (GroupMetadataManager.streamsGroupHeartbeat):

1. validates the request (throwIfStreamsGroupHeartbeatRequestIsInvalid) and finds or creates
   the group (a group id held by a group of another type: GROUP_ID_NOT_FOUND);
2. finds or creates the member, checks its member epoch (``consumer_state.check_member_epoch``
   over its tasks), applies the changed fields; the group takes the member's topology when it
   has none or is empty (StreamsGroup.setTopology), a member with another topology epoch is
   told STALE_TOPOLOGY;
3. configures the topology against the cluster's topics (``configure_topology``,
   InternalTopicManager.configureTopics): missing source topics, copartitioning, the partition
   counts of repartition and changelog topics, the internal topics to create; the statuses
   (MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS) go back
   to the member, the topics to create to the broker (KafkaApis creates them);
4. bumps the group epoch when a member joined or its topology, process or endpoint changed, or
   the metadata hash of the topology's topics changed (KIP-1101, ``metadata_hash``);
5. computes a new target assignment with the ``sticky`` task assignor (``assign_tasks``,
   StickyTaskAssignor) when the group epoch is ahead of the assignment epoch and the topology
   is valid;
6. moves the member one step towards its target (``consumer_state.reconcile``, with tasks as
   (kind, subtopology) -> partitions: a revoked task waits for the member to drop it, an
   active task another member still owns waits for it to be released), writes the streams
   records (types 17, 19-23) and answers once they are appended.

A member leaving (epoch -1), missing its session timeout (``group.streams.session.timeout.ms``)
or still holding tasks to revoke at the end of its rebalance timeout (the member's
``RebalanceTimeoutMs``, scheduleStreamsGroupRebalanceTimeout) is removed: its records are
tombstoned and the group epoch bumped. Loading replays the records
(``replay_streams_record``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from kproto.errors import ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator.consumer_state import (
    JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, MemberState, check_member_epoch, reconcile,
)
from kproto.server.coordinator.context import GroupContext, Handler
from kproto.server.coordinator.events import Pending
from kproto.server.coordinator.metadata_hash import group_hash, topic_hash
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition
from kproto.server.coordinator.heartbeat import HeartbeatError, heartbeat_exchange
from kproto.server.coordinator.owners import OwnerEpochs, replayed_record
from kproto.server.coordinator.persistence import STREAMS_GROUP_TYPES
from kproto.server.share.group_config import split_list, streams_value

__all__ = ["StreamsGroups", "StreamsGroup", "StreamsGroupMember", "Subtopology", "TopicInfo", "Topology",
           "StreamsGroupHeartbeatRequest", "StreamsGroupDescribeRequest", "configure_topology", "assign_tasks",
           "heartbeat_response", "error_response", "request_from_body",
           "replay_streams_record", "STREAMS_RECORD_TYPES", "Status"]

#: topic name -> (topic id, partition count)
TopicImage = Mapping[str, tuple[uuid.UUID, int]]
#: (kind, subtopology id) -> partitions; kind is "active", "standby" or "warmup"
Tasks = dict[Hashable, frozenset[int]]
KINDS = ("active", "standby", "warmup")

GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY = 17, 19, 20, 21, 22, 23
STREAMS_RECORD_TYPES = STREAMS_GROUP_TYPES


class Status(Enum):
    """StreamsGroupHeartbeatResponse.Status: the value is the code on the wire."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


class StreamsGroupState(Enum):
    """StreamsGroup.StreamsGroupState; the value is the name Kafka reports."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


# --- the topology ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicInfo:
    """StreamsGroupHeartbeatRequest.TopicInfo: an internal topic (0 partitions: to be derived)."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    topic_configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """ConfiguredTopology: each subtopology's task count, the internal topics to create, the
    statuses to report (empty: ready for assignment)."""

    tasks: dict[str, int]
    creatable: dict[str, TopicInfo]
    statuses: tuple[tuple[Status, str], ...]

    @property
    def ready(self) -> bool:
        return not self.statuses


def configure_topology(topology: Topology, image: TopicImage) -> ConfiguredTopology:
    """InternalTopicManager.configureTopics: source topics must exist; repartition topics get
    their partition count from the subtopologies that write to them (RepartitionTopics), the
    copartitioned ones the same count (CopartitionedTopicsEnforcer); a changelog topic has a
    partition per task; internal topics the cluster lacks are to be created, ones it has with
    another partition count are an error."""
    def error(status: Status, detail: str) -> ConfiguredTopology:
        return ConfiguredTopology({}, {}, ((status, detail),))

    subs = topology.subtopologies
    missing = sorted({t for s in subs for t in s.source_topics if t not in image})
    if missing:
        return error(Status.MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing.")
    counts: dict[str, int] = {t: n for t, (_, n) in image.items()}
    repartition: dict[str, int] = {}
    for s in subs:
        for r in s.repartition_source_topics:
            if r.partitions > 0:
                repartition[r.name] = r.partitions
    wanted = {r.name for s in subs for r in s.repartition_source_topics}
    # RepartitionTopics.computeRepartitionTopicPartitionCount: from the writers' inputs, iterated
    while wanted - set(repartition):
        progressed = False
        for s in subs:
            inputs = [counts[t] for t in s.source_topics] + [
                repartition[r.name] for r in s.repartition_source_topics if r.name in repartition]
            for sink in s.repartition_sink_topics:
                if sink in wanted and sink not in repartition and inputs:
                    repartition[sink] = max(inputs)
                    progressed = True
        if not progressed:
            return error(Status.INCORRECTLY_PARTITIONED_TOPICS, (
                "Failed to compute number of partitions for all repartition topics. There may be loops in "
                "the topology that cannot be resolved."))
    for s in subs:
        for sources, _, reps in s.copartition_groups:
            topics = [s.source_topics[i] for i in sources]
            reps_names = [s.repartition_source_topics[i].name for i in reps]
            if len({counts[t] for t in topics}) > 1:
                return error(Status.INCORRECTLY_PARTITIONED_TOPICS, (
                    f"Following topics do not have the same number of partitions: [{', '.join(sorted(topics))}]"))
            n = counts[topics[0]] if topics else max((repartition[r] for r in reps_names), default=0)
            for r in reps_names:
                repartition[r] = n
    tasks = {s.subtopology_id: max([counts[t] for t in s.source_topics]
                                   + [repartition[r.name] for r in s.repartition_source_topics], default=0)
             for s in subs}
    # the repartition topics, then the changelog topics (Kafka's order, as it names them)
    internal: dict[str, TopicInfo] = {}
    for s in subs:
        for r in s.repartition_source_topics:
            internal[r.name] = replace(r, partitions=repartition[r.name])
    for s in subs:
        for c in s.state_changelog_topics:
            internal[c.name] = replace(c, partitions=tasks[s.subtopology_id])
    wrong = sorted(t for t, info in internal.items() if t in counts and counts[t] != info.partitions)
    if wrong:
        return error(Status.INCORRECTLY_PARTITIONED_TOPICS, ", ".join(
            f"Existing topic {t} has different number of partitions: expected {internal[t].partitions}, "
            f"found {counts[t]}" for t in wrong))
    creatable = {t: info for t, info in internal.items() if t not in counts}
    if creatable:
        return ConfiguredTopology(tasks, creatable, ((Status.MISSING_INTERNAL_TOPICS,
                                                       f"Internal topics are missing: {', '.join(creatable)}"),))
    return ConfiguredTopology(tasks, {}, ())


def topology_topics(topology: Topology | None) -> set[str]:
    """Every topic a topology reads or keeps state in (for the metadata hash)."""
    if topology is None:
        return set()
    return {t for s in topology.subtopologies for t in (
        *s.source_topics, *(r.name for r in s.repartition_source_topics),
        *(c.name for c in s.state_changelog_topics))}


# --- the assignor -------------------------------------------------------------------------------

def assign_tasks(members: Mapping[str, tuple[str, Tasks]], tasks: Mapping[str, int],
                 num_standby_replicas: int, stateful: Collection[str] = ()) -> dict[str, Tasks]:
    """StickyTaskAssignor: ``members`` is member id -> (process id, current target tasks).
    Active tasks are balanced over the members (as even as counts allow) and stay with their
    previous owner while it is under its share; each task of a ``stateful`` subtopology (one
    with state changelog topics: TopologyMetadata.isStateful) then gets ``num_standby_replicas``
    standbys on the least loaded members of other processes (previous holders first). Neither
    rack ids nor client tags place them: Kafka 4.4's assignor reads only process ids, tasks and
    task offsets. No warm-up tasks (they need task lags kproto does not track)."""
    ids = sorted(members)
    out: dict[str, Tasks] = {m: {} for m in ids}
    if not ids:
        return out
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    quota_low, extra = divmod(len(all_tasks), len(ids))
    load: Counter = Counter()
    active: dict[tuple[str, int], str] = {}
    # stickiness: a member keeps its previous active tasks up to its share (``extra`` members
    # may keep one more than ``quota_low``)
    for m in ids:
        for s, p in sorted((s, p) for (kind, s), ps in members[m][1].items() if kind == "active" for p in ps):
            if (s, p) in active or s not in tasks or p >= tasks[s]:
                continue
            if load[m] < quota_low or (load[m] == quota_low and extra > 0):
                if load[m] == quota_low:
                    extra -= 1
                active[(s, p)] = m
                load[m] += 1
    for t in all_tasks:
        if t in active:
            continue
        m = min(ids, key=lambda x: (load[x], x))
        active[t] = m
        load[m] += 1
    for (s, p), m in active.items():
        out[m].setdefault(("active", s), frozenset())
        out[m][("active", s)] |= {p}
    if num_standby_replicas > 0:
        standby_load = Counter(load)
        for s, p in all_tasks:
            if s not in stateful:
                continue
            owner = active[(s, p)]
            taken = {members[owner][0]}
            previous = [m for m in ids if p in members[m][1].get(("standby", s), ())]
            for _ in range(num_standby_replicas):
                candidates = [m for m in ids if members[m][0] not in taken]
                if not candidates:
                    break
                m = min(candidates, key=lambda x: (x not in previous, standby_load[x], x))
                taken.add(members[m][0])
                standby_load[m] += 1
                out[m][("standby", s)] = out[m].get(("standby", s), frozenset()) | {p}
    return out


# --- requests (the handler's view of the wire bodies) ---------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupHeartbeatRequest:
    """StreamsGroupHeartbeatRequest; None fields: unchanged since the last heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    standby_tasks: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    warmup_tasks: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    version: int = 1                # the request's: v1+ hears MISSING_CLIENT_TAGS


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupDescribeRequest:
    group_ids: tuple[str, ...]


# --- the group ----------------------------------------------------------------------------------

@dataclass(eq=False, slots=True)
class StreamsGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Tasks = field(default_factory=dict)
    pending_revocation: Tasks = field(default_factory=dict)


@dataclass(eq=False, slots=True)
class StreamsGroup(OwnerEpochs):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    topology: Topology | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Tasks] = field(default_factory=dict)
    owner_epochs: dict[tuple[Hashable, int], int] = field(default_factory=dict)    # active task -> owner's epoch
    endpoint_information_epoch: int = 0
    configured: ConfiguredTopology | None = None
    delayed: bool = False           # the first assignment waits (group.streams.initial.rebalance.delay.ms)
    last_assignment_configs: dict[str, str] = field(default_factory=dict)   # the assignor's, last used
    # the offsets part's view (as GroupMetadata's)
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    pending_offset_commits: Counter = field(default_factory=Counter)
    pending_txn_offsets: dict[int, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    current_state_timestamp: int | None = None

    @property
    def state(self) -> StreamsGroupState:
        """StreamsGroup.maybeUpdateGroupState."""
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        if any(m.state is not MemberState.STABLE or m.member_epoch != self.assignment_epoch
               for m in self.members.values()):
            return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def task_epoch(self, key: Hashable, partition: int) -> int:
        """The epoch of the member owning an active task (-1: free); standby and warm-up
        tasks never wait (a process may hold them while another releases the active one)."""
        kind, subtopology = key
        return self.owner_epochs.get((subtopology, partition), -1) if kind == "active" else -1

    def _owned(self, m: StreamsGroupMember) -> list[tuple[str, int]]:
        return [(s, p) for parts in (m.assigned, m.pending_revocation) for (kind, s), ps in parts.items()
                if kind == "active" for p in ps]

    def remove_member(self, member_id: str) -> None:
        OwnerEpochs.remove_member(self, member_id)
        self.target.pop(member_id, None)

    def compute_hash(self, image: TopicImage) -> int:
        return group_hash({t: topic_hash(image[t][0], t, image[t][1])
                           for t in sorted(topology_topics(self.topology)) if t in image})


# --- records ------------------------------------------------------------------------------------

def _key(record_type: int, **data) -> bytes:
    return CO.RecordKey.build({"version": record_type, "data": data})


def _value(record_type: int, **data) -> bytes:
    return CO.value_schema(record_type).build({"version": 0, "data": data})


def _task_list(tasks: Tasks, kind: str) -> list[dict]:
    return [{"subtopology_id": s, "partitions": sorted(ps)}
            for (k, s), ps in sorted(tasks.items(), key=lambda kv: str(kv[0])) if k == kind and ps]


def _tasks_from(value, prefix: str = "") -> Tasks:
    out: Tasks = {}
    for kind in KINDS:
        for row in getattr(value, f"{kind}_tasks{prefix}") or ():
            if row.partitions:
                out[(kind, row.subtopology_id)] = frozenset(row.partitions)
    return out


def group_metadata_record(g: StreamsGroup) -> tuple[bytes, bytes]:
    return _key(GROUP_METADATA, group_id=g.group_id), _value(
        GROUP_METADATA, epoch=g.group_epoch, metadata_hash=g.metadata_hash,
        validated_topology_epoch=g.validated_topology_epoch,
        last_assignment_configs=[{"key": k, "value": v} for k, v in sorted(g.last_assignment_configs.items())])


def member_metadata_record(group_id: str, m: StreamsGroupMember) -> tuple[bytes, bytes]:
    return _key(MEMBER_METADATA, group_id=group_id, member_id=m.member_id), _value(
        MEMBER_METADATA, instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms, topology_epoch=m.topology_epoch,
        process_id=m.process_id,
        user_endpoint=None if m.user_endpoint is None else {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
        client_tags=[{"key": k, "value": v} for k, v in m.client_tags])


def topology_record(group_id: str, t: Topology) -> tuple[bytes, bytes]:
    def info(i: TopicInfo) -> dict:
        return {"name": i.name, "partitions": i.partitions, "replication_factor": i.replication_factor,
                "topic_configs": [{"key": k, "value": v} for k, v in i.topic_configs]}
    return _key(TOPOLOGY, group_id=group_id), _value(TOPOLOGY, epoch=t.epoch, subtopologies=[{
        "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
        "source_topic_regex": list(s.source_topic_regex),
        "state_changelog_topics": [info(i) for i in s.state_changelog_topics],
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "repartition_source_topics": [info(i) for i in s.repartition_source_topics],
        "copartition_groups": [{"source_topics": list(a), "source_topic_regex": list(b),
                                "repartition_source_topics": list(c)} for a, b, c in s.copartition_groups]}
        for s in t.subtopologies])


def target_member_record(group_id: str, member_id: str, tasks: Tasks) -> tuple[bytes, bytes]:
    return _key(TARGET_MEMBER, group_id=group_id, member_id=member_id), _value(
        TARGET_MEMBER, **{f"{k}_tasks": _task_list(tasks, k) for k in KINDS})


def target_epoch_record(g: StreamsGroup) -> tuple[bytes, bytes]:
    return _key(TARGET_METADATA, group_id=g.group_id), _value(TARGET_METADATA, assignment_epoch=g.assignment_epoch)


def current_assignment_record(group_id: str, m: StreamsGroupMember) -> tuple[bytes, bytes]:
    return _key(CURRENT_ASSIGNMENT, group_id=group_id, member_id=m.member_id), _value(
        CURRENT_ASSIGNMENT, member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=m.state.value, **{f"{k}_tasks": _task_list(m.assigned, k) for k in KINDS},
        **{f"{k}_tasks_pending_revocation": _task_list(m.pending_revocation, k) for k in KINDS})


def member_tombstones(group_id: str, member_id: str) -> list[tuple[bytes, None]]:
    """StreamsCoordinatorRecordHelpers: current assignment, target, then metadata."""
    return [(_key(CURRENT_ASSIGNMENT, group_id=group_id, member_id=member_id), None),
            (_key(TARGET_MEMBER, group_id=group_id, member_id=member_id), None),
            (_key(MEMBER_METADATA, group_id=group_id, member_id=member_id), None)]


def group_tombstones(group_id: str) -> list[tuple[bytes, None]]:
    """StreamsGroup.createGroupTombstoneRecords less the members': target epoch, topology, group."""
    return [(_key(TARGET_METADATA, group_id=group_id), None), (_key(TOPOLOGY, group_id=group_id), None),
            (_key(GROUP_METADATA, group_id=group_id), None)]


def _topology_from(v) -> Topology:
    def info(i) -> TopicInfo:
        return TopicInfo(i.name, i.partitions, i.replication_factor, tuple((c.key, c.value) for c in i.topic_configs))
    return Topology(v.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex or ()),
        tuple(info(i) for i in s.state_changelog_topics), tuple(s.repartition_sink_topics),
        tuple(info(i) for i in s.repartition_source_topics),
        tuple((tuple(c.source_topics), tuple(c.source_topic_regex or ()), tuple(c.repartition_source_topics))
              for c in s.copartition_groups)) for s in v.subtopologies))


def replay_streams_record(groups: dict[str, StreamsGroup], record_type: int, key: bytes,
                          value: bytes | None) -> None:
    """GroupMetadataManager.replay for the streams record types, in log order."""
    k, v, group = replayed_record(groups, StreamsGroup, record_type, key, value)
    if group is None:
        return
    if record_type == GROUP_METADATA:
        if v is None:
            groups.pop(k.group_id, None)
        else:
            group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash
            group.validated_topology_epoch = v.validated_topology_epoch
            group.last_assignment_configs = {c.key: c.value for c in v.last_assignment_configs or ()}
    elif record_type == TOPOLOGY:
        group.topology = None if v is None else _topology_from(v)
    elif record_type == MEMBER_METADATA:
        group.replay_member_metadata(k.member_id, v, StreamsGroupMember, _replay_member)
    elif record_type == TARGET_METADATA:
        if v is not None:
            group.assignment_epoch = v.assignment_epoch
    elif record_type == TARGET_MEMBER:
        if v is None:
            group.target.pop(k.member_id, None)
        else:
            group.target[k.member_id] = _tasks_from(v)
    elif record_type == CURRENT_ASSIGNMENT:
        group.replay_current_assignment(k.member_id, v, StreamsGroupMember,
                                        lambda v: (_tasks_from(v), _tasks_from(v, "_pending_revocation")))


def _replay_member(m: StreamsGroupMember, v) -> None:
    m.topology_epoch, m.process_id = v.topology_epoch, v.process_id
    m.user_endpoint = None if v.user_endpoint is None else (v.user_endpoint.host, v.user_endpoint.port)
    m.client_tags = tuple((t.key, t.value) for t in v.client_tags)


# --- the part -----------------------------------------------------------------------------------

def _owned(req: StreamsGroupHeartbeatRequest) -> Tasks | None:
    """The tasks the member says it owns (None: not sent, unchanged)."""
    if req.active_tasks is None:
        return None
    out: Tasks = {}
    for kind in KINDS:
        for s, ps in getattr(req, f"{kind}_tasks") or ():
            if ps:
                out[(kind, s)] = frozenset(ps)
    return out


def wire_tasks(tasks: Tasks, kind: str) -> list[dict]:
    return _task_list(tasks, kind)


def heartbeat_response(member_id: str, member_epoch: int, error: ErrorCode = ErrorCode.NONE,
                       message: str | None = None, **fields) -> dict:
    """A StreamsGroupHeartbeat answer: ``fields`` over the defaults of an error or a leave
    (``creatable``: the internal topics for the broker to create, not a wire field)."""
    return {"error_code": error, "error_message": message, "member_id": member_id, "member_epoch": member_epoch,
            "heartbeat_interval_ms": 0, "task_offset_interval_ms": 0, "acceptable_recovery_lag": 0,
            "status": None, "active_tasks": None, "standby_tasks": None, "warmup_tasks": None,
            "topology_description_required": False, "endpoint_information_epoch": 0,
            "partitions_by_user_endpoint": None, "creatable": {}, **fields}


def error_response(error: ErrorCode, message: str | None = None) -> dict:
    """A failed StreamsGroupHeartbeat as KafkaApis answers it (the response's defaults: no member
    id, epoch 0, an empty status list)."""
    return heartbeat_response("", 0, error, message, status=[])


class StreamsGroups:
    """The streams groups of the shared ``GroupContext`` (``ctx.streams_groups``)."""

    def __init__(self, ctx: GroupContext) -> None:
        self._ctx = ctx
        self.image: TopicImage = {}
        #: other group types' ids (``GroupMetadataManager.group``: one type per id)
        self.other_types: Callable[[str], bool] = lambda group_id: (
            group_id in ctx.consumer_groups or group_id in ctx.groups)

    def setting(self, group_id: str, name: str) -> Any:
        """A group's ``streams.*`` config: its override (IncrementalAlterConfigs on the GROUP
        resource, validated there) or the broker's ``group.streams.*`` (GroupMetadataManager.
        streamsGroupSessionTimeoutMs, streamsGroupInitialRebalanceDelayMs, streamsGroupAssignmentConfigs
        ...: each the group config, else the broker's); ``streams.assignor.name`` defaults to the
        broker's first assignor."""
        value = self._ctx.group_config(group_id).get(name)
        if value is not None:
            return streams_value(name, value)
        if name == "streams.assignor.name":
            return self._ctx.config.streams_group_assignors[0]
        return getattr(self._ctx.config, "streams_group_" + name.removeprefix("streams.").replace(".", "_"))

    def handlers(self) -> dict[type, Handler]:
        return {StreamsGroupHeartbeatRequest: self._heartbeat, StreamsGroupDescribeRequest: self._describe}

    def update_image(self, image: TopicImage) -> None:
        """New cluster topics: each group's topology configured against them again (its state
        follows; a heartbeat bumps the epoch when the topics' hash changed)."""
        self.image = image
        for group in self._ctx.streams_groups.values():
            if group.topology is not None:
                group.configured = configure_topology(group.topology, image)

    # --- heartbeat -----------------------------------------------------------------------

    def _heartbeat(self, req: StreamsGroupHeartbeatRequest, handle: Pending, now_ms: int) -> None:
        def step() -> tuple[list, Any]:
            self._validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req, now_ms)
            return self._join_or_heartbeat(req, now_ms)

        heartbeat_exchange(self._ctx, handle, req.group_id, "StreamsGroupHeartbeat", now_ms, step,
                           error_response)

    def _validate(self, req: StreamsGroupHeartbeatRequest) -> None:
        """throwIfStreamsGroupHeartbeatRequestIsInvalid (INVALID_REQUEST with Kafka's messages)."""
        def invalid(message: str) -> HeartbeatError:
            return HeartbeatError(ErrorCode.INVALID_REQUEST, message)

        if not req.group_id:
            raise invalid("GroupId can't be empty.")
        if not req.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if req.instance_id is not None and not req.instance_id:
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id:
            raise invalid("RackId can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topology is None:
                raise invalid("Topology must be non-null when joining the streams group.")
            if any(getattr(req, f"{k}_tasks") for k in KINDS):
                raise invalid("ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.")
            if req.process_id is None:
                raise invalid("ProcessId can't be null.")
            _check_topology(req.topology, invalid)
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_EPOCH:
            raise invalid(f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")

    def _group(self, group_id: str, create: bool, now_ms: int) -> StreamsGroup:
        """getOrCreateStreamsGroup: a group id of another type is not a streams group."""
        group = self._ctx.streams_groups.get(group_id)
        if group is not None:
            return group
        if self.other_types(group_id):
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
        group = self._ctx.streams_groups[group_id] = StreamsGroup(group_id, current_state_timestamp=now_ms)
        return group

    def _join_or_heartbeat(self, req: StreamsGroupHeartbeatRequest, now_ms: int):
        config = self._ctx.config
        group = self._group(req.group_id, req.member_epoch == JOIN_EPOCH, now_ms)
        records: list = []
        owned = _owned(req)
        replaced = self._static_member(group, req) if req.instance_id is not None else None
        existing = group.members.get(req.member_id)
        if replaced is not None:
            # replaceStreamsMember: the new member id takes the static member's place, its
            # tasks and target, at epoch 0 (getOrMaybeCreateStaticStreamsGroupMember)
            member = _copy(replaced)
            member.member_id, member.member_epoch, member.previous_member_epoch = req.member_id, 0, 0
            records += member_tombstones(group.group_id, replaced.member_id)
            target = group.target.get(replaced.member_id, {})
            self._cancel_timers(group.group_id, replaced.member_id)
            group.remove_member(replaced.member_id)
            if existing is not None and existing is not replaced:
                self._cancel_timers(group.group_id, existing.member_id)
                group.remove_member(existing.member_id)
            group.target[member.member_id] = target
            records.append(member_metadata_record(group.group_id, member))
            records.append(target_member_record(group.group_id, member.member_id, target))
            existing = None
        elif existing is None:
            if req.member_epoch != JOIN_EPOCH:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member {req.member_id} is not a member of group {req.group_id}.")
            if len(group.members) >= config.streams_group_max_size:
                raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The streams group has reached its maximum capacity of "
                                     f"{config.streams_group_max_size} members.")
            member = StreamsGroupMember(req.member_id)
        if existing is not None:
            member = _copy(existing)
            if req.member_epoch == JOIN_EPOCH:
                # a member rejoining with epoch 0 starts over, owning nothing
                member.member_epoch, member.state = 0, MemberState.STABLE
            else:
                error, _ = check_member_epoch(req.member_epoch, existing.member_epoch, existing.previous_member_epoch,
                                              owned, existing.assigned)
                if error is not ErrorCode.NONE:
                    raise HeartbeatError(error, (
                        f"The streams group member has a {'greater' if req.member_epoch > existing.member_epoch else 'smaller'}"
                        f" member epoch ({req.member_epoch}) than the one known by the group coordinator "
                        f"({existing.member_epoch}). The member must abandon all its partitions and rejoin."))
        before = _copy(member) if replaced is not None else (
            None if existing is None or req.member_epoch == JOIN_EPOCH else existing)
        # the changed fields (null: unchanged)
        for name in ("instance_id", "rack_id", "process_id", "user_endpoint"):
            if getattr(req, name) is not None:
                setattr(member, name, getattr(req, name))
        if req.client_tags is not None:
            member.client_tags = req.client_tags
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.topology is not None:
            member.topology_epoch = req.topology.epoch

        # the group's topology (StreamsGroup.setTopology): the first, or a new one in an empty group
        bump = False
        if req.topology is not None and (group.topology is None or (
                req.topology.epoch != group.topology.epoch and not (set(group.members) - {member.member_id}))):
            group.topology = req.topology
            records.append(topology_record(group.group_id, req.topology))
            bump = True
        metadata_changed = before is None or any(getattr(before, f) != getattr(member, f) for f in (
            "instance_id", "rack_id", "client_id", "client_host", "rebalance_timeout_ms", "topology_epoch",
            "process_id", "user_endpoint", "client_tags"))
        if metadata_changed:
            records.append(member_metadata_record(group.group_id, member))
        # a static member taking its place back bumps the epoch only if its metadata changed
        bump = bump or (existing is None and replaced is None) or (
            replaced is None and req.member_epoch == JOIN_EPOCH) or any(
            getattr(existing or before, f) != getattr(member, f) for f in ("topology_epoch", "process_id", "client_tags"))
        if existing is not None and existing.user_endpoint != member.user_endpoint:
            group.endpoint_information_epoch += 1
        group.put_member(member)

        # the topology against the cluster's topics, the group epoch
        new_hash = group.compute_hash(self.image)
        group.configured = configure_topology(group.topology, self.image)
        assignment_configs = self._assignment_configs(group.group_id)
        if bump or new_hash != group.metadata_hash or assignment_configs != group.last_assignment_configs:
            group.group_epoch += 1
            group.metadata_hash = new_hash
            group.last_assignment_configs = assignment_configs
            group.validated_topology_epoch = group.topology.epoch if group.configured.ready else -1
            records.append(group_metadata_record(group))

        # a new group waits ``group.streams.initial.rebalance.delay.ms`` for more members: its
        # first target assignment has no tasks, the timer bumps the group epoch for the real one
        delay = self.setting(group.group_id, "streams.initial.rebalance.delay.ms")
        if existing is None and group.group_epoch == 1 and delay > 0:
            group.delayed = True
            self._ctx.timers.schedule(("streams-initial-rebalance", group.group_id), now_ms + delay,
                                      lambda t: self._end_initial_delay(group.group_id, t))

        # the target assignment (no tasks while the topology is not valid or the assignment delayed)
        if group.group_epoch > group.assignment_epoch:
            records += self._assign(group)

        # reconcile the member one step
        target = group.target.get(member.member_id, {})
        try:
            step = reconcile(member.state, member.member_epoch, member.previous_member_epoch, member.assigned,
                             member.pending_revocation, group.assignment_epoch, target, group.task_epoch, owned)
        except ValueError:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, (
                "The streams group member is in a unknown state. The member must abandon all its tasks "
                "and rejoin.")) from None
        changed = existing is None or req.member_epoch == JOIN_EPOCH
        if step is not None:
            updated = _copy(member)
            updated.state, updated.member_epoch, updated.previous_member_epoch = (
                step.state, step.member_epoch, step.previous_member_epoch)
            updated.assigned, updated.pending_revocation = step.assigned, step.pending_revocation
            changed = changed or updated.assigned != member.assigned
            group.put_member(updated)
            member = updated
        if step is not None or existing is None or req.member_epoch == JOIN_EPOCH:
            records.append(current_assignment_record(group.group_id, member))
        if step is not None:
            # maybeReconcile: a member left with tasks to revoke has its rebalance timeout to
            # drop them; any other step ends that timeout
            self._schedule_rebalance_timeout(group.group_id, member, now_ms)
        self._schedule_session(group.group_id, member.member_id, now_ms)

        statuses = [(Status.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay.")
                    ] if group.delayed else []
        statuses += group.configured.statuses
        if member.topology_epoch != group.topology.epoch:
            statuses.append((Status.STALE_TOPOLOGY, (
                f"The member's topology epoch {member.topology_epoch} is behind the group's topology epoch "
                f"{group.topology.epoch}.")))
        # a v1+ member without a client tag the rack-aware standby placement is configured with
        tags = assignment_configs.get("rack.aware.assignment.tags", "").strip()
        missing = [t for t in split_list(tags) if t not in dict(member.client_tags)]
        if req.version >= 1 and missing:
            statuses.append((Status.MISSING_CLIENT_TAGS, (
                f"Missing required client tags for rack-aware standby assignment: [{', '.join(missing)}]. "
                "Configure them via 'client.tag.<tagKey>' in your Streams config.")))
        response = heartbeat_response(
            member.member_id, member.member_epoch,
            heartbeat_interval_ms=self.setting(group.group_id, "streams.heartbeat.interval.ms"),
            task_offset_interval_ms=self.setting(group.group_id, "streams.task.offset.interval.ms"),
            acceptable_recovery_lag=self.setting(group.group_id, "streams.acceptable.recovery.lag"),
            status=[{"status_code": s.value, "status_detail": d} for s, d in statuses],
            endpoint_information_epoch=group.endpoint_information_epoch,
            creatable=dict(group.configured.creatable))
        if changed:
            for kind in KINDS:
                response[f"{kind}_tasks"] = wire_tasks(member.assigned, kind)
        return records, response

    def _assignment_configs(self, group_id: str) -> dict[str, str]:
        """streamsGroupAssignmentConfigs: what the assignor is given, kept in the group's record
        (a change bumps the group epoch, so the group is reassigned): the standby replicas and,
        when set, the rack-aware assignment tags."""
        configs = {"num.standby.replicas": str(self.setting(group_id, "streams.num.standby.replicas"))}
        tags = self.setting(group_id, "streams.rack.aware.assignment.tags")
        if tags:
            configs["rack.aware.assignment.tags"] = ",".join(tags)
        return configs

    def _assign(self, group: StreamsGroup) -> list:
        """TargetAssignmentBuilder with the sticky assignor: records for the members whose target
        changed, then the new assignment epoch."""
        records = []
        result = assign_tasks({m.member_id: (m.process_id, group.target.get(m.member_id, m.assigned))
                               for m in group.members.values()},
                              group.configured.tasks if group.configured.ready and not group.delayed else {},
                              self.setting(group.group_id, "streams.num.standby.replicas"),
                              {s.subtopology_id for s in group.topology.subtopologies if s.state_changelog_topics}
                              if group.topology is not None else ())
        for member_id in sorted(result):
            if group.target.get(member_id) != result[member_id]:
                group.target[member_id] = result[member_id]
                records.append(target_member_record(group.group_id, member_id, result[member_id]))
        group.assignment_epoch = group.group_epoch
        records.append(target_epoch_record(group))
        return records

    def _end_initial_delay(self, group_id: str, now_ms: int) -> None:
        """The initial rebalance delay ran out: a group epoch bump, so the next heartbeat
        computes the assignment with every member that joined meanwhile."""
        group = self._ctx.streams_groups.get(group_id)
        if group is None or not group.delayed:
            return
        group.delayed = False
        group.group_epoch += 1
        self._ctx.append(self._ctx.partition_for(group_id), [group_metadata_record(group)], now_ms)

    # --- leave and fencing ----------------------------------------------------------------

    def _static_member(self, group: StreamsGroup, req: StreamsGroupHeartbeatRequest) -> StreamsGroupMember | None:
        """getOrMaybeCreateStaticStreamsGroupMember's checks (and streamsGroupLeave's): a join
        takes the place of a static member that left with epoch -2 (returned) and is refused
        while the instance id is held; other heartbeats must come from the holder."""
        holder_id = group.static_members.get(req.instance_id)
        holder = group.members.get(holder_id) if holder_id is not None else None
        if req.member_epoch == JOIN_EPOCH:
            if holder is None:
                return None
            if holder.member_epoch != STATIC_LEAVE_EPOCH:
                raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID, (
                    f"Static member {req.member_id} with instance id {req.instance_id} cannot join the group "
                    f"because the instance id is owned by {holder.member_id} member."))
            return holder
        if holder is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if holder.member_id != req.member_id:
            raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, (
                f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                f"{holder.member_id}."))
        return None

    def _leave(self, req: StreamsGroupHeartbeatRequest, now_ms: int):
        """streamsGroupLeave: a static member leaving with epoch -2 stays, its tasks kept for
        its instance (streamsGroupStaticMemberGroupLeave); any other leave fences the member."""
        group = self._group(req.group_id, False, now_ms)
        if req.instance_id is not None:
            self._static_member(group, req)
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {req.member_id} is not a member of group {req.group_id}.")
        response = heartbeat_response(req.member_id, req.member_epoch, status=[])
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            updated = _copy(member)
            updated.member_epoch, updated.pending_revocation = STATIC_LEAVE_EPOCH, {}
            group.put_member(updated)
            return [current_assignment_record(group.group_id, updated)], response
        return self.remove(group, req.member_id), response

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("streams-session", "streams-rebalance"):
            self._ctx.timers.cancel((kind, group_id, member_id))

    def remove(self, group: StreamsGroup, member_id: str) -> list:
        """GroupMetadataManager.streamsGroupFenceMember: tombstones, a group epoch bump."""
        self._cancel_timers(group.group_id, member_id)
        group.remove_member(member_id)
        if not group.members and group.delayed:
            group.delayed = False
            self._ctx.timers.cancel(("streams-initial-rebalance", group.group_id))
        group.group_epoch += 1
        return [*member_tombstones(group.group_id, member_id), group_metadata_record(group)]

    def _fence(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._ctx.streams_groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        self._ctx.append(self._ctx.partition_for(group_id), self.remove(group, member_id), now_ms)

    def _schedule_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        self._ctx.timers.schedule(("streams-session", group_id, member_id),
                                  now_ms + self.setting(group_id, "streams.session.timeout.ms"),
                                  lambda t: self._fence(group_id, member_id, t))

    def _schedule_rebalance_timeout(self, group_id: str, member: StreamsGroupMember, now_ms: int) -> None:
        """scheduleStreamsGroupRebalanceTimeout / cancelGroupRebalanceTimeout: a member in
        UNREVOKED_TASKS is fenced when it is still at that member epoch after its rebalance
        timeout (the timer is replaced at each step that leaves it there)."""
        key = ("streams-rebalance", group_id, member.member_id)
        if member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ctx.timers.cancel(key)
            return
        member_id, epoch = member.member_id, member.member_epoch

        def expire(t: int) -> None:
            group = self._ctx.streams_groups.get(group_id)
            m = group.members.get(member_id) if group is not None else None
            if m is not None and m.member_epoch == epoch:
                self._fence(group_id, member_id, t)

        self._ctx.timers.schedule(key, now_ms + max(member.rebalance_timeout_ms, 0), expire)

    # --- describe, load -------------------------------------------------------------------

    def _describe(self, req: StreamsGroupDescribeRequest, handle: Pending, now_ms: int) -> None:
        """GroupMetadataManager.streamsGroupDescribe (StreamsGroup.asDescribedGroup)."""
        out = []
        for group_id in req.group_ids:
            error = self._ctx.validate_group_status(group_id, "StreamsGroupDescribe")
            group = self._ctx.streams_groups.get(group_id)
            if error is not None:
                out.append(_described_error(group_id, error, None))
            elif group is None:
                out.append(_described_error(group_id, ErrorCode.GROUP_ID_NOT_FOUND, (
                    f"Group {group_id} is not a streams group." if self.other_types(group_id)
                    else f"Group {group_id} not found.")))
            else:
                out.append(self.described(group))
        self._ctx.reply(handle, {"groups": out})

    def described(self, g: StreamsGroup) -> dict:
        def info(i: TopicInfo, partitions: int | None = None) -> dict:
            return {"name": i.name, "partitions": i.partitions if partitions is None else partitions,
                    "replication_factor": i.replication_factor,
                    "topic_configs": [{"key": k, "value": v} for k, v in i.topic_configs]}

        topology = None if g.topology is None else {"epoch": g.topology.epoch, "subtopologies": [{
            "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
            "repartition_sink_topics": list(s.repartition_sink_topics),
            "state_changelog_topics": [info(i) for i in s.state_changelog_topics],
            "repartition_source_topics": [info(i) for i in s.repartition_source_topics]}
            for s in g.topology.subtopologies]}

        def tasks(t: Tasks, kind: str) -> list[dict]:
            return _task_list(t, kind)

        return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": g.group_id,
                "group_state": g.state.value, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
                "topology": topology, "members": [{
                    "member_id": m.member_id, "member_epoch": m.member_epoch, "instance_id": m.instance_id,
                    "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
                    "topology_epoch": m.topology_epoch, "process_id": m.process_id,
                    "user_endpoint": None if m.user_endpoint is None else {
                        "host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                    "client_tags": [{"key": k, "value": v} for k, v in m.client_tags],
                    "task_offsets": [], "task_end_offsets": [],
                    "assignment": {f"{k}_tasks": tasks(m.assigned, k) for k in KINDS},
                    "target_assignment": {f"{k}_tasks": tasks(g.target.get(m.member_id, {}), k) for k in KINDS},
                    "is_classic": False} for m in g.members.values()],
                "authorized_operations": -2147483648}

    def loaded(self, group: StreamsGroup, now_ms: int) -> None:
        """A replayed group: its members' sessions start now (as Kafka's onLoaded)."""
        group.current_state_timestamp = now_ms
        if group.topology is not None:
            group.configured = configure_topology(group.topology, self.image)
        for member_id, member in group.members.items():
            self._schedule_session(group.group_id, member_id, now_ms)
            if member.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group.group_id, member, now_ms)

    def unload(self, group_id: str) -> None:
        group = self._ctx.streams_groups.pop(group_id, None)
        if group is not None:
            for member_id in group.members:
                self._cancel_timers(group_id, member_id)
            self._ctx.timers.cancel(("streams-initial-rebalance", group_id))

    # --- offsets (StreamsGroup.validateOffsetCommit / validateOffsetFetch) ------------------

    @staticmethod
    def validate_offset_commit(group: StreamsGroup, member_id: str, member_epoch: int) -> ErrorCode | None:
        if member_epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    @staticmethod
    def validate_offset_fetch(group: StreamsGroup, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        return group.offset_fetch_error(member_id, member_epoch)


def _described_error(group_id: str, error: ErrorCode, message: str | None) -> dict:
    return {"error_code": error, "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": -1, "assignment_epoch": -1, "topology": None, "members": [],
            "authorized_operations": -2147483648}


def _check_topology(t: Topology, invalid: Callable[[str], Exception]) -> None:
    """What the coordinator needs of a topology (not Kafka's wording: Kafka Streams never sends
    these): unique subtopology ids, copartition groups indexing their subtopology's topics."""
    ids = [s.subtopology_id for s in t.subtopologies]
    if len(set(ids)) != len(ids):
        raise invalid("Subtopology ids must be unique.")
    for s in t.subtopologies:
        for sources, regexes, reps in s.copartition_groups:
            if any(not 0 <= i < n for ix, n in ((sources, len(s.source_topics)), (regexes, len(s.source_topic_regex)),
                                                  (reps, len(s.repartition_source_topics))) for i in ix):
                raise invalid(f"Subtopology {s.subtopology_id} has a copartition group with an index out of range.")


def _copy(m: StreamsGroupMember) -> StreamsGroupMember:
    return StreamsGroupMember(**{f: getattr(m, f) for f in StreamsGroupMember.__slots__})


def request_from_body(body: Any, client_id: str, client_host: str, version: int = 1) -> StreamsGroupHeartbeatRequest:
    """The handler's translation of a StreamsGroupHeartbeat body."""
    def info(i) -> TopicInfo:
        return TopicInfo(i.name, i.partitions, i.replication_factor,
                         tuple((c.key, c.value) for c in i.topic_configs or ()))

    def task_ids(rows) -> tuple | None:
        return None if rows is None else tuple((r.subtopology_id, tuple(r.partitions)) for r in rows)

    t = body.topology
    topology = None if t is None else Topology(t.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex or ()),
        tuple(info(i) for i in s.state_changelog_topics), tuple(s.repartition_sink_topics),
        tuple(info(i) for i in s.repartition_source_topics),
        tuple((tuple(c.source_topics), tuple(c.source_topic_regex or ()), tuple(c.repartition_source_topics))
              for c in s.copartition_groups)) for s in t.subtopologies))
    return StreamsGroupHeartbeatRequest(
        group_id=body.group_id, member_id=body.member_id, member_epoch=body.member_epoch,
        endpoint_information_epoch=body.endpoint_information_epoch, instance_id=body.instance_id,
        rack_id=body.rack_id, rebalance_timeout_ms=body.rebalance_timeout_ms, topology=topology,
        active_tasks=task_ids(body.active_tasks), standby_tasks=task_ids(body.standby_tasks),
        warmup_tasks=task_ids(body.warmup_tasks), process_id=body.process_id,
        user_endpoint=None if body.user_endpoint is None else (body.user_endpoint.host, body.user_endpoint.port),
        client_tags=None if body.client_tags is None else tuple((c.key, c.value) for c in body.client_tags),
        shutdown_application=body.shutdown_application, client_id=client_id, client_host=client_host,
        version=version)
