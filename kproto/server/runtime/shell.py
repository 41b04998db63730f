"""The event-loop shell around a sans-I/O coordinator (Kafka's coordinator-common
``CoordinatorRuntime`` event processor, on asyncio): one for the group
coordinator, one for the transaction coordinator.

The coordinator decides everything; the shell drives it. After every request
(``ask``) and every timer it loops ``poll`` (hand out ready responses) and
``take_appends`` (write the records to the state topic, report
``append_done``) until both are empty, as the coordinator's contract says,
plus whatever else the coordinator hands out (``drive_more``: the share
coordinator's released records; the transaction coordinator writes its
markers on the loop's next turn, after the answers). Appends go through the same
``UnifiedLog.append`` as Produce, under the broker's append lock, so the
coordinator's records are ordinary batches that ``kproto dump-log`` and Kafka's
tools read.

Start-up: every partition of the state topic is replayed before requests are
answered (COORDINATOR_LOAD_IN_PROGRESS meanwhile is the coordinator's own
answer); unreadable records are skipped and logged, never fatal. As in Kafka,
the topic itself is created by the first request that needs it
(``ensure_topic``), not at start-up: a fresh cluster lists no internal topic.

On a node of a cluster (``replication`` set) the state topic is the
controller's like any other: ``ensure_topic`` asks the controller for it
(AutoTopicCreationManager), the coordinator owns no partition until this node
becomes its leader (``elected``: load it, as GroupCoordinator.onElection) and
drops it when another node leads it (``resigned``: onResignation), and an
append is reported done only once the partition's high watermark passed it
(CoordinatorRuntime completes a write when the HW reaches its offset).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Iterable, Iterator, Mapping

from kproto.common import now_ms
from kproto.errors import ErrorCode, KafkaError
from kproto.log import AppendOrigin, LogManager
from kproto.log.manager import LEADER_EPOCH
from kproto.server.runtime.core import Pending
from kproto.server.runtime.state_topic import LoggedRecord, TxnMarker, append_batch, records_from_segments

__all__ = ["CoordinatorShell"]

#: How long the timer task sleeps at most between passes, in seconds.
MAX_TIMER_SLEEP = 1.0


class CoordinatorShell:
    """Drives ``coordinator`` (a ``CoordinatorRuntime``) over the state topic
    ``topic`` of ``partitions`` partitions, created with ``topic_configs``.

    ``coordinator`` must offer ``begin_load``, ``load_partition``, ``handle``,
    ``poll``, ``take_appends``, ``append_done`` and ``next_deadline``."""

    #: The coordinator's name in log lines ("group coordinator" ...).
    name = "coordinator"

    def __init__(self, coordinator: Any, logs: LogManager, topic: str, partitions: int,
                 topic_configs: Mapping[str, Any], *, append_lock: threading.Lock | None = None,
                 log: logging.Logger) -> None:
        self.coordinator = coordinator
        self.logs = logs
        self.topic = topic
        self.partitions = partitions
        self.topic_configs = dict(topic_configs)
        self.append_lock = append_lock or threading.Lock()
        self.log = log
        self._waiting: dict[Pending, asyncio.Future] = {}
        self._wake = asyncio.Event()
        self._timer: asyncio.Task | None = None
        self._closed = False
        #: the node's ReplicaManager on a node of a cluster; None standalone
        self.replication: Any = None
        #: the state topic's replication factor when the controller creates it
        self.replication_factor = 1
        #: how long an append waits for the ISR (offsets.commit.timeout.ms)
        self.append_timeout_ms = 5000
        self._replicating: set[asyncio.Task] = set()      # appends waiting for the ISR, loads
        self._sleep_until: int | None = None      # when the timer task wakes (ms); None: it is not asleep
        self._load_generation: dict[int, int] = {}        # partition -> its latest election or resignation

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Replay every partition of the state topic, then run the timers."""
        if self.replication is None and self.logs.has_topic(self.topic):
            t = now_ms()
            for p in range(self.partitions):
                self.coordinator.begin_load(p, t)
            for p in range(self.partitions):
                loaded = self.coordinator.load_partition(p, self.records(p), now_ms())
                if loaded:
                    self.log.info("loaded %d %s from %s-%d", len(loaded), self.loaded_noun, self.topic, p)
            self.drive()
        self._timer = asyncio.create_task(self._timers())

    #: What ``load_partition`` returns a list of, for the start-up log line.
    loaded_noun = "entries"

    def ensure_topic(self) -> None:
        """Create the state topic on the first request that needs it (as Kafka does)."""
        if self.replication is not None:
            self.replication.auto_create_topic(self.topic, self.partitions, self.replication_factor,
                                                   self.topic_configs)
        elif not self.logs.has_topic(self.topic):
            self.logs.create_topic(self.topic, self.partitions, self.topic_configs, internal=True)

    def elected(self, partition: int) -> None:
        """This node leads ``partition`` of the state topic now: replay it and own it
        (GroupCoordinator.onElection / TransactionCoordinator.onElection), in the
        background as CoordinatorRuntime.scheduleLoadOperation: its requests answer
        COORDINATOR_LOAD_IN_PROGRESS until the load ends (``begin_load``), while the
        records below the log end at election are read and decoded off the event loop
        (``asyncio.to_thread``: the bytes up to each segment's size then, which no
        append changes); what was appended meanwhile is read on the loop after. A
        resignation (or another election) before it ends makes that load void."""
        self.coordinator.begin_load(partition, now_ms())
        generation = self._load_generation[partition] = self._load_generation.get(partition, 0) + 1
        plog = self.logs.get_log(self.topic, partition)
        end = plog.log_end_offset if plog is not None else 0
        start = plog.log_start_offset if plog is not None else 0
        segments = [] if plog is None else [(str(seg.log.path), seg.log, seg.log.size) for seg in plog.segments]

        def read() -> list:
            return list(records_from_segments(
                (path, (b for b in file.batches(0, size) if b.next_offset > start)) for path, file, size in segments))

        async def load() -> None:
            try:
                head = await asyncio.to_thread(read)
            except (OSError, ValueError, KafkaError) as e:     # a segment cleaned or deleted meanwhile
                self.log.info("reading %s-%d off the event loop failed (%s): reading it here", self.topic,
                              partition, e)
                head, tail_from = [], None
            else:
                tail_from = end
            if self._closed or self._load_generation.get(partition) != generation:
                return          # resigned or elected again meanwhile: that one counts
            loaded = self._load(partition, head + list(self.records(partition, tail_from)))
            self.log.info("leader of %s-%d: loaded %d %s", self.topic, partition, len(loaded), self.loaded_noun)
            self.drive()

        task = asyncio.get_running_loop().create_task(load())
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)

    def _load(self, partition: int, records: Iterable[LoggedRecord | TxnMarker]) -> tuple:
        return self.coordinator.load_partition(partition, records, now_ms())

    def resigned(self, partition: int) -> None:
        """Another node leads ``partition`` now: drop its state (onResignation); its
        requests answer NOT_COORDINATOR."""
        self._load_generation[partition] = self._load_generation.get(partition, 0) + 1
        self.coordinator.unload_partition(partition, now_ms())
        self.log.info("no longer leader of %s-%d: unloaded", self.topic, partition)
        self.drive()

    async def close(self) -> None:
        # The flag as well as the cancel: Python 3.11's wait_for can swallow a
        # cancel that lands as the wake event fires, and the loop would run on.
        self._closed = True
        self._wake.set()
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        for task in list(self._replicating):
            task.cancel()
        await asyncio.gather(*self._replicating, return_exceptions=True)
        for future in self._waiting.values():
            future.cancel()

    def records(self, partition: int, from_offset: int | None = None) -> Iterator[LoggedRecord | TxnMarker]:
        """The partition's records from its log start (or the batches past
        ``from_offset``), each with where it was read (file @ byte, offset); none for
        a partition missing on disk (it is created at its first append)."""
        plog = self.logs.get_log(self.topic, partition)
        if plog is None:
            return iter(())
        start = max(plog.log_start_offset, from_offset or 0)
        return records_from_segments((str(seg.log.path), (b for b in seg.batches() if b.next_offset > start))
                                     for seg in plog.segments)

    # -- driving the coordinator ------------------------------------------------------------

    def drive(self) -> None:
        """poll + take_appends (+ ``drive_more``) until none has anything."""
        c = self.coordinator
        while True:
            for pending, response in c.poll(now_ms()):
                future = self._waiting.pop(pending, None)
                if future is not None and not future.done():
                    future.set_result(response)
            appends = c.take_appends()
            for a in appends:
                if self.replication is not None:
                    self._append_replicated(a)
                    continue
                error = ErrorCode.NONE
                try:
                    with self.append_lock:
                        # the coordinator's origin, as its manager appends (a TxnOffsetCommit
                        # batch is transactional with no sequence, which a client's may not be)
                        self.logs.get_or_create_log(self.topic, a.partition).append(
                            append_batch(a), leader_epoch=LEADER_EPOCH, origin=AppendOrigin.COORDINATOR)
                except KafkaError as e:
                    self.log.error("append to %s-%d failed: %s", self.topic, a.partition, e)
                    error = e.error_code
                c.append_done(a.id, now_ms(), error)
            if not self.drive_more() and not appends:
                break
        # the timer task recomputes its sleep only when a deadline came before its wake-up
        # (waking it after every request cost a task step and a wait_for each)
        deadline = c.next_deadline()
        if self._sleep_until is None or (deadline is not None and deadline < self._sleep_until):
            self._wake.set()

    def _append_replicated(self, a: Any) -> None:
        """An append on a node of a cluster: to the partition's log as its leader, with
        its leader epoch; done once the ISR has it (the HW passed it). Not the leader:
        NOT_LEADER_OR_FOLLOWER, which the coordinator answers as NOT_COORDINATOR."""
        r = self.replication
        part, error = r.leader_for(self.topic, a.partition)
        if error:
            self.coordinator.append_done(a.id, now_ms(), error)
            return
        try:
            with self.append_lock:
                part.log.append(append_batch(a), leader_epoch=part.leader_epoch, origin=AppendOrigin.COORDINATOR)
        except KafkaError as e:
            self.log.error("append to %s-%d failed: %s", self.topic, a.partition, e)
            self.coordinator.append_done(a.id, now_ms(), e.error_code)
            return
        required = r.on_append(self.topic, a.partition)

        async def replicated() -> None:
            error = await r.wait_acks(self.topic, a.partition, required, now_ms() + self.append_timeout_ms)
            self.coordinator.append_done(a.id, now_ms(), error)
            self.drive()

        task = asyncio.get_running_loop().create_task(replicated())
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)

    def drive_more(self) -> bool:
        """Other work the coordinator hands out, done here; True when there was some."""
        return False

    async def _timers(self) -> None:
        while not self._closed:
            deadline = self.coordinator.next_deadline()
            now = now_ms()
            delay = MAX_TIMER_SLEEP if deadline is None else min(max(0.0, (deadline - now) / 1000), MAX_TIMER_SLEEP)
            self._wake.clear()
            self._sleep_until = now + int(delay * 1000)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=delay)
                continue        # a request brought a deadline forward (or close): recompute
            except asyncio.TimeoutError:
                pass
            finally:
                self._sleep_until = None
            if self._closed:
                return
            try:
                self.drive()
            except Exception:   # a timer failure is logged; the broker serves on
                self.log.exception("%s timer pass failed", self.name)

    async def ask(self, request: Any) -> Any:
        """The coordinator's answer to ``request``, awaited when it is pending
        (a join waiting for the rebalance, an append to be written)."""
        result = self.coordinator.handle(request, now_ms())
        if isinstance(result, Pending):
            future = asyncio.get_running_loop().create_future()
            self._waiting[result] = future
            self.drive()
            return await future
        self.drive()
        return result
