"""Share groups on the broker: ``ShareCoordinator`` (sans-I/O, kproto.server.share)
driven by the shared coordinator shell over ``__share_group_state``. The share
APIs (``kproto.server.handlers.share``) call it; a ShareFetch that found
nothing waits for an append or for records to become available again
(``available``: a lock ran out, a release, a member left).

On a node of a cluster (``replication`` set) the share coordinator serves the
``__share_group_state`` partitions this node leads, and the node's share
partitions reach theirs through the state APIs (``persist``: Kafka's
DefaultStatePersister / PersisterStateManager): read when a partition is first
fetched after its leadership began (``load``), written on every change.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from typing import Any

from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME, now_ms
from kproto.errors import ErrorCode
from kproto.log import LogManager
from kproto.schemas import protocol as P
from kproto.server.runtime.shell import CoordinatorShell
from kproto.server.share.config import share_config
from kproto.server.share.coordinator import ShareCoordinator, StateOp, StateRequest
from kproto.server.share.group_config import GroupConfigs
from kproto.server.share.partition import StateBatch
from kproto.server.share.persistence import ShareKey, partition_for_key

#: the errors after which a persister request goes again, to the partition's leader then
#: (PersisterStateManager's retriable errors); how long it keeps trying
_RETRIABLE = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
              ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
PERSIST_TIMEOUT_S = 30.0

log = logging.getLogger("kproto.server.share")


class LogCatalog:
    """The coordinator's view of the broker's topics (share.coordinator.Catalog)."""

    def __init__(self, logs: LogManager) -> None:
        self.logs = logs
        self.group_configs = GroupConfigs(logs.data_dir / "group-configs.json")

    def group_config(self, group_id: str) -> dict[str, str]:
        return self.group_configs.overrides(group_id)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.logs.topic_id(topic) if self.logs.has_topic(topic) else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.logs.topic_name(topic_id)

    def partition_count(self, topic: str) -> int:
        return self.logs.partition_count(topic) if self.logs.has_topic(topic) else 0

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int]:
        plog = self.logs.get_log(topic, partition)
        return (0, 0) if plog is None else (plog.log_start_offset, plog.log_end_offset)


class ImageCatalog(LogCatalog):
    """A node of a cluster's view: topics as the metadata image has them (a node need
    not hold a replica of every partition); a leader's log offsets below its HW."""

    def __init__(self, logs: LogManager, replication: Any) -> None:
        super().__init__(logs)
        self.image = replication.image

    def topic_id(self, topic: str) -> uuid.UUID | None:
        t = self.image.topics.get(topic)
        return None if t is None else t.topic_id

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.image.names.get(topic_id)

    def partition_count(self, topic: str) -> int:
        t = self.image.topics.get(topic)
        return 0 if t is None else len(t.partitions)

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int]:
        plog = self.logs.get_log(topic, partition)
        return (0, 0) if plog is None else (plog.log_start_offset, plog.high_watermark)


class ShareService(CoordinatorShell):
    name = "share coordinator"
    loaded_noun = "share partition state(s)"

    def __init__(self, logs: LogManager, values: dict, *, append_lock: threading.Lock | None = None,
                 replication: Any = None, replication_factor: int = 1) -> None:
        """``replication``: the node's ReplicaManager on a node of a cluster, where
        ``__share_group_state`` is the controller's, of ``replication_factor``."""
        config = share_config(values)
        self.catalog = LogCatalog(logs) if replication is None else ImageCatalog(logs, replication)
        self.group_configs = self.catalog.group_configs
        self.available = asyncio.Event()
        self.sessions: dict = {}        # (group id, member id) -> handlers.share.ShareSession
        super().__init__(ShareCoordinator(config, self.catalog, clustered=replication is not None), logs,
                         SHARE_GROUP_STATE_TOPIC_NAME, config.state_topic_num_partitions,
                         {"cleanup.policy": "delete", "compression.type": "producer",
                          "segment.bytes": values["share.coordinator.state.topic.segment.bytes"],
                          "retention.ms": -1}, append_lock=append_lock, log=log)
        self.replication, self.replication_factor = replication, replication_factor
        self._loading: dict[ShareKey, asyncio.Future] = {}

    def drive_more(self) -> bool:
        if self.coordinator.take_released():
            self.available.set()
        writes = self.coordinator.take_state_writes()
        for append_id, op in writes:
            self._spawn(self._write(append_id, op))
        return bool(writes)

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)

    async def _write(self, append_id: int, op: StateOp) -> None:
        answer = await self.persist(op)
        self.coordinator.append_done(append_id, now_ms(), answer["error_code"])
        self.drive()

    # -- the persister (a node of a cluster) ------------------------------------------------

    def leadership_moved(self, topic: str, partition: int) -> None:
        """This node began or stopped leading a topic partition: its share partitions are
        read again from the share coordinator when next fetched (SharePartitionManager
        removes them on a leader change)."""
        topic_id = self.catalog.topic_id(topic)
        if topic_id is not None:
            self.coordinator.drop_share_partitions(topic_id, partition)

    async def load(self, key: ShareKey, topic: str, leader_epoch: int) -> ErrorCode:
        """The share partition of ``key`` on its leader, read from the share coordinator
        (SharePartition.maybeInitialize: ReadShareGroupState at the leader epoch); never
        initialized, it is, at share.auto.offset.reset (InitializeShareGroupState). One
        load per key at a time; NONE once installed."""
        if key in self.coordinator.partitions:
            return ErrorCode.NONE
        pending = self._loading.get(key)
        if pending is None:
            pending = self._loading[key] = asyncio.ensure_future(self._read(key, topic, leader_epoch))
            pending.add_done_callback(lambda _: self._loading.pop(key, None))
        return await asyncio.shield(pending)

    async def _read(self, key: ShareKey, topic: str, leader_epoch: int) -> ErrorCode:
        answer = await self.persist(StateOp("read", key, leader_epoch=leader_epoch))
        state_epoch = answer.get("state_epoch", 0)
        if answer["error_code"] == ErrorCode.INVALID_REQUEST or \
                (answer["error_code"] == ErrorCode.NONE and answer["start_offset"] < 0):
            log_start, log_end = self.catalog.log_offsets(topic, key[2])
            reset = self.group_configs.overrides(key[0]).get("share.auto.offset.reset",
                                                            self.coordinator.config.auto_offset_reset)
            start = log_start if reset == "earliest" else log_end
            init = await self.persist(StateOp("initialize", key, state_epoch=state_epoch, start_offset=start))
            if init["error_code"]:
                return ErrorCode(init["error_code"])
            answer = await self.persist(StateOp("read", key, leader_epoch=leader_epoch))
        if answer["error_code"]:
            return ErrorCode(answer["error_code"])
        part = self.replication.leading(topic, key[2])
        if part is None or part.leader_epoch != leader_epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER      # leadership moved while reading
        if key not in self.coordinator.partitions:
            self.coordinator.install(key, answer["state_epoch"], leader_epoch, answer["start_offset"], [
                StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                for b in answer["state_batches"]])
        return ErrorCode.NONE

    async def state(self, ops: tuple[StateOp, ...]) -> list[dict]:
        """The share coordinators' answers to ``ops`` (one node: its own, at once)."""
        if self.replication is None:
            return await self.ask(StateRequest(ops))
        return list(await asyncio.gather(*(self.persist(op) for op in ops)))

    async def persist(self, op: StateOp) -> dict:
        """One state op answered by the share coordinator of its key, the leader of its
        ``__share_group_state`` partition: this node's own coordinator, or another node's
        over the state APIs; retried while that coordinator moves (PersisterStateManager)."""
        r = self.replication
        deadline = asyncio.get_running_loop().time() + PERSIST_TIMEOUT_S
        backoff = 0.05
        while True:
            self.ensure_topic()
            reg = r.image.partition(self.topic, partition_for_key(op.key, self.partitions))
            answer = {"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "error_message": None}
            if reg is not None and reg.leader == r.node_id:
                answer = (await self.ask(StateRequest((op,))))[0]
            elif reg is not None and reg.leader in r.image.alive():
                try:
                    answer = _answer(op, await r.request_broker(reg.leader, *_state_request(op)))
                except ConnectionError as e:
                    log.info("share coordinator %d unreachable (%s): retrying", reg.leader, e)
            if answer["error_code"] not in _RETRIABLE or asyncio.get_running_loop().time() >= deadline:
                return answer
            await r.wait_for_metadata(lambda: False, backoff)       # a new leader, or the backoff
            backoff = min(backoff * 2, 1.0)


_STATE_APIS = {"initialize": P.initialize_share_group_state, "read": P.read_share_group_state,
               "write": P.write_share_group_state, "delete": P.delete_share_group_state,
               "summary": P.read_share_group_state_summary}


def _state_request(op: StateOp) -> tuple[int, int, dict]:
    """(api key, version, body) of one op's state API request (the newest version served)."""
    api = _STATE_APIS[op.kind].API
    part: dict = {"partition": op.key[2]}
    if op.kind == "initialize":
        part.update(state_epoch=op.state_epoch, start_offset=op.start_offset)
    elif op.kind in ("read", "summary"):
        part.update(leader_epoch=op.leader_epoch)
    elif op.kind == "write":
        part.update(state_epoch=op.state_epoch, leader_epoch=op.leader_epoch, start_offset=op.start_offset,
                    delivery_complete_count=op.delivery_complete_count, state_batches=[
                        {"first_offset": b.first_offset, "last_offset": b.last_offset,
                         "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                        for b in op.batches])
    return api.key, api.served[1], {"group_id": op.key[0], "topics": [{"topic_id": op.key[1], "partitions": [part]}]}


def _answer(op: StateOp, response) -> dict:
    """The one partition result of a state API response, as the coordinator's answer dict."""
    for t in response.results:
        for p in t.partitions:
            out = {"error_code": ErrorCode(p.error_code), "error_message": p.error_message}
            if op.kind == "summary":
                out.update(state_epoch=p.state_epoch, leader_epoch=p.leader_epoch, start_offset=p.start_offset,
                           delivery_complete_count=p.get("delivery_complete_count", -1))
            if op.kind == "read":
                out.update(state_epoch=p.state_epoch, start_offset=p.start_offset, state_batches=[
                    {"first_offset": b.first_offset, "last_offset": b.last_offset,
                     "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                    for b in p.state_batches])
            return out
    return {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": "no partition in the answer"}
