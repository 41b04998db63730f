"""What the coordinator needs instead of threads, purgatories and a log:
a timer queue, a queue of ready responses, and an outbox of log appends.

Nothing here reads a clock: every entry point is given ``now_ms``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable

from kproto.errors import ErrorCode
from kproto.server.coordinator.config import CoordinatorConfig
from kproto.server.coordinator.events import Append, Pending, Response

__all__ = ["TimerQueue", "CoordinatorRuntime", "store_group_error", "commit_error"]

Action = Callable[[int], None]


class TimerQueue:
    """Deadlines keyed by what they watch; scheduling a key again replaces its
    deadline (Kafka completes the old delayed operation and watches a new one)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, Action]] = {}
        self._seq = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, action: Action) -> None:
        seq = next(self._seq)
        self._live[key] = (deadline_ms, seq, action)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        if len(self._heap) > 2 * len(self._live) + 64:
            # heartbeats replace deadlines all the time: drop the replaced ones
            self._heap = [(d, q, k) for k, (d, q, _) in self._live.items()]
            heapq.heapify(self._heap)

    def cancel(self, key: Hashable) -> None:
        self._live.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            live = self._live.get(key)
            if live is not None and live[1] == seq:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> tuple[int, Action] | None:
        """The earliest timer due at ``now_ms``, as (deadline, action), removed."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        deadline, _, key = heapq.heappop(self._heap)
        return deadline, self._live.pop(key)[2]


class CoordinatorRuntime:
    """Responses, appends and timers shared by the coordinator's handlers."""

    def __init__(self, config: CoordinatorConfig) -> None:
        self.config = config
        self._timers = TimerQueue()
        self._ready: dict[Pending, Response] = {}
        self._outbox: list[Append] = []
        self._append_callbacks: dict[int, Callable[[ErrorCode, int], None]] = {}
        self._ids = itertools.count(1)
        self._clock = 0                  # the latest now_ms seen: time never runs backwards

    def _observe(self, now_ms: int) -> int:
        self._clock = max(self._clock, now_ms)
        return self._clock

    # --- responses --------------------------------------------------------------------

    def _new_handle(self, api: str) -> Pending:
        return Pending(next(self._ids), api)

    def _reply(self, handle: Pending, response: Response) -> None:
        if handle in self._ready:
            raise AssertionError(f"{handle} answered twice")
        self._ready[handle] = response

    # --- the log ----------------------------------------------------------------------

    def _append(self, partition: int, records: list[tuple[bytes, bytes | None]], now_ms: int,
                on_done: Callable[[ErrorCode, int], None] | None = None, *,
                producer: tuple[int, int] = (-1, -1)) -> int:
        """Queue records for the log; ``on_done(error, now_ms)`` runs once the
        caller reports the append (Kafka's appendForGroup callback).
        ``producer``: (id, epoch) of a transactional append."""
        append = Append(next(self._ids), partition, tuple(records), now_ms, *producer)
        self._outbox.append(append)
        if on_done is not None:
            self._append_callbacks[append.id] = on_done
        return append.id

    def take_appends(self) -> list[Append]:
        """Records to append to ``__consumer_offsets``, oldest first. Append them
        in this order, then call ``append_done`` for each."""
        out, self._outbox = self._outbox, []
        return out

    def append_done(self, append_id: int, now_ms: int, error: ErrorCode = ErrorCode.NONE) -> None:
        """The append ``append_id`` reached the log (``error`` NONE) or failed
        with a produce error (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, ...).
        Responses it held are released to ``poll``."""
        now_ms = self._observe(now_ms)
        callback = self._append_callbacks.pop(append_id, None)
        if callback is not None:
            callback(ErrorCode(error), now_ms)

    # --- time -------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When ``poll`` next has work, in the caller's clock; None: no timer.
        Call ``poll`` sooner after anything else (a response may be ready)."""
        return self._timers.next_deadline()

    def poll(self, now_ms: int) -> list[tuple[Pending, Response]]:
        """Fire every timer due at ``now_ms`` and hand out every response that
        became ready since the last poll, in the order they became ready.

        Timers fire in deadline order, each at its own deadline (or at the
        latest time already seen, if later): a late poll gives the result a
        timely one would have, so the outcome does not depend on how often
        the caller polls."""
        self._on_poll(now_ms)
        while (due := self._timers.pop_due(now_ms)) is not None:
            deadline, action = due
            action(self._observe(deadline))
        self._observe(now_ms)
        out = list(self._ready.items())
        self._ready.clear()
        return out

    def _on_poll(self, now_ms: int) -> None:
        pass


def store_group_error(error: ErrorCode) -> ErrorCode:
    """A failed GroupMetadata append as the SyncGroup/JoinGroup error (GroupMetadataManager.storeGroup)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error is ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


def commit_error(error: ErrorCode) -> ErrorCode:
    """A failed OffsetCommit append or TxnOffsetCommit verification as the partition's error
    (maybeConvertOffsetCommitError)."""
    if error is ErrorCode.NETWORK_EXCEPTION:     # retried by every client, without a coordinator lookup
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error
