"""One share partition: the in-flight records of a topic partition for one share
group (Kafka's core/src/main/java/kafka/server/share/SharePartition.java), sans-I/O.

The share-partition start offset (SPSO) is the first offset not yet
acknowledged or archived; ``end_offset`` the first never acquired. Between them
every offset is in flight with a ``RecordState`` and a delivery count; an
ACQUIRED one also has its member and the deadline of its acquisition lock.
Records below the SPSO are done, records from ``end_offset`` on are AVAILABLE
with no delivery yet. Kafka keeps in-flight *batches* and splits them into
per-offset state when acknowledgements differ within one; kproto keeps offsets
(bounded by ``group.share.partition.max.record.locks``) and forms batches when
it answers or persists.
"""

from __future__ import annotations

from dataclasses import dataclass

from kproto.errors import ErrorCode
from kproto.server.share.state import RecordEvent, RecordState, ack_event, transition

__all__ = ["InFlight", "StateBatch", "SharePartition"]


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock_deadline_ms: int = -1


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted run of offsets with one state and delivery count
    (WriteShareGroupState / ShareSnapshot ``StateBatch``)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


def _runs(items: list[tuple[int, tuple]]) -> list[tuple[int, int, tuple]]:
    """(offset, value) in offset order -> (first, last, value) runs of consecutive offsets, same value."""
    out: list[tuple[int, int, tuple]] = []
    for offset, value in items:
        if out and out[-1][1] == offset - 1 and out[-1][2] == value:
            out[-1] = (out[-1][0], offset, value)
        else:
            out.append((offset, offset, value))
    return out


class SharePartition:
    """``delivery_count_limit``: group.share.delivery.count.limit; ``max_record_locks``:
    group.share.partition.max.record.locks (records ACQUIRED at once)."""

    def __init__(self, start_offset: int, batches: list[StateBatch] = (), *, delivery_count_limit: int = 5,
                 max_record_locks: int = 2000, state_epoch: int = 0, leader_epoch: int = 0) -> None:
        self.start_offset = start_offset
        self.state_epoch = state_epoch
        self.leader_epoch = leader_epoch        # the topic partition's, which its state writes carry
        self.delivery_count_limit = delivery_count_limit
        self.max_record_locks = max_record_locks
        self.in_flight: dict[int, InFlight] = {}
        for b in batches:
            for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
                # ACQUIRED is never persisted (SharePartition.maybeInitialize reads 0, 2 and 4)
                self.in_flight[offset] = InFlight(RecordState(b.delivery_state), b.delivery_count)
        self.end_offset = max([start_offset, *(o + 1 for o in self.in_flight)])
        self._advance_start()

    # -- reading ----------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where a fetch reads from: the first AVAILABLE in-flight offset, else ``end_offset``."""
        for offset in sorted(self.in_flight):
            if self.in_flight[offset].state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def acquired_count(self) -> int:
        return sum(1 for r in self.in_flight.values() if r.state is RecordState.ACQUIRED)

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.in_flight.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # -- transitions -----------------------------------------------------------------------

    def acquire(self, member_id: str, batches: list[tuple[int, int]], max_records: int, now_ms: int,
                lock_duration_ms: int) -> list[tuple[int, int, int]]:
        """Acquire AVAILABLE offsets of the fetched ``batches`` ((base, last) offsets
        from the log, in order) for ``member_id``, at most ``max_records`` and the
        record-lock limit. -> (first, last, delivery_count) runs, the ShareFetch
        ``acquired_records``."""
        budget = min(max_records, self.max_record_locks - self.acquired_count())
        taken: list[tuple[int, tuple]] = []
        for base, last in batches:
            for offset in range(max(base, self.start_offset), last + 1):
                if budget <= 0:
                    break
                record = self.in_flight.get(offset)
                if record is None:
                    if offset < self.end_offset:
                        continue        # done and dropped below... or never fetched: a gap
                    record = self.in_flight[offset] = InFlight(RecordState.AVAILABLE, 0)
                    self.end_offset = offset + 1
                target = transition(record.state, RecordEvent.ACQUIRE, record.delivery_count,
                                    self.delivery_count_limit)
                if target is None:
                    continue
                record.state, record.member_id = target, member_id
                record.delivery_count += 1
                record.lock_deadline_ms = now_ms + lock_duration_ms
                taken.append((offset, (record.delivery_count,)))
                budget -= 1
        return [(first, last, value[0]) for first, last, value in _runs(taken)]

    def acknowledge(self, member_id: str, first_offset: int, last_offset: int, types: list[int],
                    now_ms: int, lock_duration_ms: int) -> ErrorCode:
        """One acknowledgement batch. ``types`` holds one type for the whole range or one
        per offset. Every offset must be ACQUIRED by ``member_id`` or the batch is
        refused whole with INVALID_RECORD_STATE (SharePartition.acknowledge)."""
        count = last_offset - first_offset + 1
        if count <= 0 or len(types) not in (1, count):
            return ErrorCode.INVALID_REQUEST
        try:
            events = [ack_event(t) for t in types]
        except ValueError:
            return ErrorCode.INVALID_REQUEST
        plan = []
        for i, offset in enumerate(range(first_offset, last_offset + 1)):
            record = self.in_flight.get(offset)
            event = events[0] if len(events) == 1 else events[i]
            if record is None or record.member_id != member_id:
                return ErrorCode.INVALID_RECORD_STATE
            target = transition(record.state, event, record.delivery_count, self.delivery_count_limit)
            if target is None:
                return ErrorCode.INVALID_RECORD_STATE
            plan.append((record, event, target))
        for record, event, target in plan:
            self._move(record, target, now_ms + lock_duration_ms if event is RecordEvent.RENEW else -1)
        self._advance_start()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> bool:
        """The member left or its share session closed: its ACQUIRED records are
        released (SharePartition.releaseAcquiredRecords). True when any were."""
        changed = False
        for record in self.in_flight.values():
            if record.state is RecordState.ACQUIRED and record.member_id == member_id:
                self._move(record, transition(record.state, RecordEvent.RELEASE, record.delivery_count,
                                              self.delivery_count_limit))
                changed = True
        self._advance_start()
        return changed

    def expire_locks(self, now_ms: int) -> bool:
        """Acquisition locks due at ``now_ms`` run out (the timer task). True when any did."""
        changed = False
        for record in self.in_flight.values():
            if record.state is RecordState.ACQUIRED and record.lock_deadline_ms <= now_ms:
                self._move(record, transition(record.state, RecordEvent.LOCK_TIMEOUT, record.delivery_count,
                                              self.delivery_count_limit))
                changed = True
        self._advance_start()
        return changed

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: start again at ``start_offset`` with nothing in flight."""
        self.in_flight.clear()
        self.start_offset = self.end_offset = start_offset
        self.state_epoch += 1

    def _move(self, record: InFlight, target: RecordState, lock_deadline_ms: int = -1) -> None:
        record.state = target
        if target is not RecordState.ACQUIRED:
            record.member_id = ""
        record.lock_deadline_ms = lock_deadline_ms

    def _advance_start(self) -> None:
        """The SPSO moves past the acknowledged and archived prefix, which leaves the map."""
        done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
        while (record := self.in_flight.get(self.start_offset)) is not None and record.state in done:
            del self.in_flight[self.start_offset]
            self.start_offset += 1
        self.end_offset = max(self.end_offset, self.start_offset)

    # -- persistence -------------------------------------------------------------------------

    def delivery_complete_count(self) -> int:
        """Offsets from the SPSO on whose delivery is complete, acknowledged or archived
        (KIP-1226: WriteShareGroupState v1's ``delivery_complete_count``, the lag's input)."""
        return sum(1 for r in self.in_flight.values() if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))

    def state_batches(self) -> list[StateBatch]:
        """What WriteShareGroupState carries: the in-flight records as runs; an ACQUIRED
        record is written AVAILABLE with its delivery count (a restart releases it)."""
        items = []
        for offset in sorted(self.in_flight):
            r = self.in_flight[offset]
            state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            items.append((offset, (int(state), r.delivery_count)))
        return [StateBatch(first, last, v[0], v[1]) for first, last, v in _runs(items)]
