"""The group coordinator wired to the broker: its appends to
``__consumer_offsets``, its timers on the event loop. The ten group APIs
(``kproto.server.handlers.groups``) translate wire bodies into its requests
and hand them to ``GroupService.ask``.

``GroupCoordinator`` (sans-I/O) decides everything; this module only
drives it: after every request and every timer it loops
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
import logging
import threading
from typing import Any

from kproto.errors import ErrorCode, KafkaError
from kproto.log import AppendOrigin, LogManager
from kproto.log.manager import LEADER_EPOCH
from kproto.server.coordinator import (
    CoordinatorConfig, GroupCoordinator, Pending, append_batch, records_from_segments,
)
from kproto.server.network import now_ms

log = logging.getLogger("kproto.server.groups")

OFFSETS_TOPIC = "__consumer_offsets"


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


class GroupService:
    """The broker's group coordinator: replayed at start, driven after every
    request (``ask``) and timer."""

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
        self._closed = False

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

    def ensure_offsets_topic(self) -> None:
        """Kafka creates __consumer_offsets on the first group request, not at
        startup (a fresh cluster lists no internal topic)."""
        if not self.logs.has_topic(OFFSETS_TOPIC):
            self.logs.create_topic(OFFSETS_TOPIC, self.partitions, {
                "cleanup.policy": "compact", "compression.type": "producer",
                "segment.bytes": self.values["offsets.topic.segment.bytes"]}, internal=True)

    async def close(self) -> None:
        # The flag as well as the cancel: Python 3.11's wait_for can swallow a
        # cancel that lands as the wake event fires, and the loop would run on.
        self._closed = True
        self._wake.set()
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
                        # the coordinator's origin, as GroupMetadataManager appends (a TxnOffsetCommit
                        # batch is transactional with no sequence, which a client's may not be)
                        self.logs.get_or_create_log(OFFSETS_TOPIC, a.partition).append(
                            append_batch(a), leader_epoch=LEADER_EPOCH, origin=AppendOrigin.COORDINATOR)
                except KafkaError as e:
                    log.error("append to %s-%d failed: %s", OFFSETS_TOPIC, a.partition, e)
                    error = e.error_code
                self.coordinator.append_done(a.id, now_ms(), error)
        self._wake.set()

    async def _timers(self) -> None:
        while not self._closed:
            deadline = self.coordinator.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=min(delay, 1.0))
                continue        # a request changed the timers (or close): recompute
            except asyncio.TimeoutError:
                pass
            try:
                self._drive()
            except Exception:   # a timer failure is logged; the broker serves on
                log.exception("group coordinator timer pass failed")

    async def ask(self, request) -> Any:
        """The coordinator's answer to ``request``, awaited when it is pending
        (a join waiting for the rebalance, an append to be written)."""
        result = self.coordinator.handle(request, now_ms())
        if isinstance(result, Pending):
            future = asyncio.get_running_loop().create_future()
            self._waiting[result] = future
            self._drive()
            return await future
        self._drive()
        return result
