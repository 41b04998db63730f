"""The group and transaction coordinators, driven request by request with a fake
clock and a fake log."""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict

from kproto.errors import ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL
from kproto.server.txn_coordinator import (
    InitProducerIdRequest, TransactionConfig, TransactionCoordinator, TransactionState, WriteTxnMarkers,
)
from kproto.server.txn_coordinator.persistence import transaction_log_key
from kproto.server.coordinator.events import ConsumerGroupHeartbeatRequest
from kproto.server.coordinator.streams_groups import StreamsGroupHeartbeatRequest, Subtopology, TopicInfo, Topology
from kproto.server.coordinator import (
    CoordinatorConfig, GroupCoordinator, GroupState, HeartbeatRequest, JoinGroupRequest,
    JoinGroupRequestProtocol, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetFetchRequest, OffsetFetchRequestTopic, Pending, SyncGroupRequest, SyncGroupRequestAssignment,
)


# --- the group coordinator ------------------------------------------------------------------

E = ErrorCode
SESSION = 1_000
REBALANCE = 2_000
DELAY = 50


def subscription(*topics: str) -> bytes:
    return CO.ConsumerProtocolSubscription.build({"version": 0, "data": {"topics": list(topics)}})


def assignment(topic: str, *partitions: int) -> bytes:
    return CO.ConsumerProtocolAssignment.build({"version": 0, "data": {
        "assigned_partitions": [{"topic": topic, "partitions": list(partitions)}], "user_data": None}})


def protocols(*names: str, topics: tuple[str, ...] = ("t",)) -> tuple[JoinGroupRequestProtocol, ...]:
    return tuple(JoinGroupRequestProtocol(name=n, metadata=subscription(*topics)) for n in names)


class _HeldAppends:
    """What both coordinator harnesses do with appends held back
    (``auto_append=False``): the test completes them, or fails them."""

    def release(self, error: ErrorCode = ErrorCode.NONE) -> None:
        held, self.held = self.held, []
        for append in held:
            if error is ErrorCode.NONE:
                self.log[append.partition].extend(append.records)
            self.c.append_done(append.id, self.now, error)
        self.pump()


class Harness(_HeldAppends):
    def __init__(self, *, auto_append: bool = True, uuids: bool = False, **config) -> None:
        settings = dict(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=DELAY)
        settings.update(config)
        counter = itertools.count(1)
        self.c = GroupCoordinator(CoordinatorConfig(**settings),
                                  uuid_factory=None if uuids else (lambda: f"u{next(counter)}"))
        self.now = 0
        self.auto_append = auto_append
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.held = []
        self.done: dict[Pending, object] = {}

    def send(self, request):
        r = self.c.handle(request, self.now)
        self.pump()
        if isinstance(r, Pending) and r in self.done:
            return self.done.pop(r)
        return r

    def pump(self) -> None:
        """What the server's loop does after every call: append, report, poll,
        until nothing is left (timers fired by poll may append more)."""
        while True:
            self.done.update(self.c.poll(self.now))
            appends = self.c.take_appends()
            if not appends:
                return
            for append in appends:
                if self.auto_append:
                    self.log[append.partition].extend(append.records)
                    self.c.append_done(append.id, self.now)
                else:
                    self.held.append(append)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.pump()

    def settle(self, handles) -> None:
        """Let the initial delay (and its extensions) run out."""
        for _ in range(1000):
            if all(x in self.done for x in handles):
                return
            self.advance(DELAY)
        raise AssertionError("rebalance never completed")

    def result(self, handle: Pending):
        assert handle in self.done, f"{handle} not answered"
        return self.done.pop(handle)

    def state(self, group_id: str = "g") -> GroupState | None:
        group = self.c.group(group_id)
        return None if group is None else group.state

    # --- client moves ---------------------------------------------------------------

    def join(self, member_id: str = "", *, group: str = "g", client: str = "client", instance: str | None = None,
             protos=None, session: int = SESSION, rebalance: int = REBALANCE, **kw):
        return self.send(JoinGroupRequest(
            group_id=group, member_id=member_id, group_instance_id=instance, client_id=client,
            client_host="/127.0.0.1", session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            protocol_type=kw.pop("protocol_type", "consumer"), protocols=protos or protocols("range"), **kw))

    def new_member(self, client: str = "client", group: str = "g", **kw):
        """KIP-394: the first join hands out an id, the second joins with it."""
        first = self.join(group=group, client=client, **kw)
        assert first.error_code == E.MEMBER_ID_REQUIRED
        return self.join(first.member_id, group=group, client=client, **kw)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             group: str = "g", **kw):
        return self.send(SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                                          assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                            for m, a in (assignments or {}).items()), **kw))

    def heartbeat(self, member_id: str, generation: int, group: str = "g", instance: str | None = None):
        return self.send(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                          group_instance_id=instance)).error_code

    def commit(self, offsets: dict[tuple[str, int], int], *, group: str = "g", generation: int = -1,
               member_id: str = "", metadata: str = "", **kw):
        topics: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata))
        return self.send(OffsetCommitRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()),
            **kw))

    def fetch(self, group: str = "g", topics: dict[str, tuple[int, ...]] | None = None):
        return self.send(OffsetFetchRequest(group_id=group, topics=None if topics is None else tuple(
            OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items())))

    def stable_group(self, n: int = 2, *, group: str = "g", statics: bool = False, **join):
        """n members joined and synced; returns (member ids, generation), leader first."""
        handles = []
        for i in range(n):
            if statics:
                handles.append(self.join(group=group, client=f"c{i}", instance=f"i{i}", **join))
            else:
                handles.append(self.new_member(client=f"c{i}", group=group, **join))
        self.settle(handles)
        joins = [self.result(h) for h in handles]
        generation = joins[0].generation_id
        leader = joins[0].leader
        ids = [j.member_id for j in joins]
        assert ids[0] == leader
        followers = [self.sync(m, generation, group=group) for m in ids[1:]]
        done = self.sync(leader, generation, {m: assignment("t", i) for i, m in enumerate(ids)}, group=group)
        assert done.error_code == E.NONE
        for f in followers:
            assert self.result(f).error_code == E.NONE
        assert self.state(group) is GroupState.STABLE
        return ids, generation


def fetched(response) -> dict[tuple[str, int], tuple[int, int, str]]:
    assert response.error_code == E.NONE
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in response.topics for p in t.partitions if p.error_code == E.NONE}


def commit_errors(response) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


# --- the transaction coordinator ------------------------------------------------------------

class ConsumerGroupDriver(Harness):
    """The group coordinator with one ``__consumer_offsets`` partition and topic t (3 partitions,
    id ``uuid.UUID(int=1)``), driven by KIP-848 heartbeats of group g."""

    TOPIC_ID = uuid.UUID(int=1)

    def __init__(self, **config):
        super().__init__(offsets_topic_num_partitions=1, **config)
        self.c.update_topics({"t": (self.TOPIC_ID, 3)})

    def hb(self, member_id, epoch, **kw):
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30_000)
            kw.setdefault("topic_partitions", ())
            kw.setdefault("subscribed_topic_names", ("t",))
        return self.send(ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **kw))


class TxnHarness(_HeldAppends):
    def __init__(self, *, auto_append: bool = True, auto_markers: bool = True, **config) -> None:
        settings = dict(transaction_abort_timed_out_transaction_cleanup_interval_ms=100,
                        transaction_remove_expired_transaction_cleanup_interval_ms=100,
                        transaction_max_timeout_ms=10**9)
        settings.update(config)
        ids = itertools.count(1000)
        self.c = TransactionCoordinator(TransactionConfig(**settings), allocate_producer_id=lambda: next(ids))
        self.now = 0
        self.auto_append = auto_append
        self.auto_markers = auto_markers
        self.log: dict[int, list] = defaultdict(list)
        self.held: list = []
        self.held_markers: list[WriteTxnMarkers] = []
        self.markers: list[WriteTxnMarkers] = []          # every order taken, in order
        self.written: list[tuple[WriteTxnMarkers, tuple]] = []
        self.done: dict[Pending, object] = {}

    def send(self, request):
        r = self.c.handle(request, self.now)
        self.pump()
        if isinstance(r, Pending) and r in self.done:
            return self.done.pop(r)
        return r

    def pump(self) -> None:
        while True:
            self.done.update(self.c.poll(self.now))
            appends, markers = self.c.take_appends(), self.c.take_markers()
            if not appends and not markers:
                return
            for a in appends:
                if self.auto_append:
                    self.log[a.partition].extend(a.records)
                    self.c.append_done(a.id, self.now)
                else:
                    self.held.append(a)
            for m in markers:
                self.markers.append(m)
                if self.auto_markers:
                    self.written.append((m, m.partitions))
                    self.c.markers_done(m.id, self.now)
                else:
                    self.held_markers.append(m)

    def write_markers(self, fail=lambda tp: False) -> None:
        held, self.held_markers = self.held_markers, []
        for m in held:
            failed = [tp for tp in m.partitions if fail(tp)]
            self.written.append((m, tuple(tp for tp in m.partitions if tp not in failed)))
            self.c.markers_done(m.id, self.now, failed)
        self.pump()

    def advance(self, ms: int) -> None:
        self.now += ms
        self.pump()

    def init(self, txn_id: str = "t", timeout: int = 60_000, pid: int = -1, epoch: int = -1):
        return self.send(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout,
                                               producer_id=pid, producer_epoch=epoch))

    def state(self, txn_id: str = "t") -> TransactionState | None:
        meta = self.c.transaction(txn_id)
        return None if meta is None else meta.state


def loaded_txn_record(txn_id: str, state: TransactionState, pid: int = 1000, epoch: int = 0, timeout: int = 60_000,
                  partitions=(("a", 0),), start: int = 0):
    value = TL.TransactionLogValue.build({"version": 0, "data": {
        "producer_id": pid, "producer_epoch": epoch, "transaction_timeout_ms": timeout,
        "transaction_status": state.id,
        "transaction_partitions": [{"topic": t, "partition_ids": [p]} for t, p in partitions],
        "transaction_last_update_timestamp_ms": start, "transaction_start_timestamp_ms": start}})
    return transaction_log_key(txn_id), value


# -- authorization rules, without a broker ---------------------------------------------------------

class _AllowList:
    def __init__(self, *allowed) -> None:
        self.allowed_set = set(allowed)

    def allowed(self, ctx, op, rtype, name) -> bool:
        return (op, rtype, name) in self.allowed_set

    def allowed_any(self, ctx, op, rtype) -> bool:
        return False


class AllowListBroker:
    """A broker whose authorizer allows exactly the given (operation, resource type, name)."""

    def __init__(self, *allowed) -> None:
        self.security = _AllowList(*allowed)


def authorized_call(api, version: int, body: dict, *allowed, answer=None):
    """An API's authorization rule (kproto.server.access.guarded) run on ``body`` for a
    principal allowed exactly ``allowed`` ((operation, resource type, name) each): (the
    answer, the bodies that reached the handler)."""
    import asyncio

    from construct import Container

    from kproto.server.access import guarded
    seen = []

    async def handler(broker, header, b):
        seen.append(b)
        return answer(b) if answer else {"error_code": 0}
    header = Container(request_api_key=api.API.key, request_api_version=version)
    out = asyncio.run(guarded(AllowListBroker(*allowed), header, Container(body), handler))
    return out, seen


# --- KIP-1071 streams groups ---------------------------------------------------------------

T = uuid.UUID(int=1)          # topic words
# a word count: 0 reads "words" and writes the repartition topic, 1 reads it and counts
WORD_COUNT = Topology(1, (
    Subtopology("0", source_topics=("words",), repartition_sink_topics=("app-rep",)),
    Subtopology("1", repartition_source_topics=(TopicInfo("app-rep"),),
                state_changelog_topics=(TopicInfo("app-cl", topic_configs=(("cleanup.policy", "compact"),)),))))
INTERNAL = {"app-rep": (uuid.UUID(int=2), 4), "app-cl": (uuid.UUID(int=3), 4)}


class StreamsDriver(Harness):
    """The coordinator with one ``__consumer_offsets`` partition and topic ``words`` (4 partitions),
    driven by StreamsGroupHeartbeats of group ``app``."""

    def __init__(self, internal: bool = True, **config) -> None:
        config.setdefault("streams_group_initial_rebalance_delay_ms", 0)
        super().__init__(offsets_topic_num_partitions=1, **config)
        self.c.update_topics({"words": (T, 4), **(INTERNAL if internal else {})})
        self.assigned: dict[str, dict] = {}     # member -> its last answer with tasks

    def hb(self, member_id: str, epoch: int, **kw) -> dict:
        kw.setdefault("client_id", f"client-{member_id}")
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30_000)
            kw.setdefault("topology", WORD_COUNT)
            kw.setdefault("process_id", f"process-{member_id}")
        r = self.send(StreamsGroupHeartbeatRequest(group_id="app", member_id=member_id, member_epoch=epoch, **kw))
        if r["active_tasks"] is not None:
            self.assigned[member_id] = r
        return r

    def owning(self, member_id: str, epoch: int, after: dict | None = None) -> dict:
        """A heartbeat saying the member owns what it was last assigned (as Kafka Streams does);
        ``after``: the answer it follows, written inline to read as a sequence (its tasks are
        already in ``assigned``)."""
        last = self.assigned[member_id]
        return self.hb(member_id, epoch, **{f"{k}_tasks": tuple(
            (t["subtopology_id"], tuple(t["partitions"])) for t in last[f"{k}_tasks"])
            for k in ("active", "standby", "warmup")})
