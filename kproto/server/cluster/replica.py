"""One partition's replication rules, leader side and follower side: no I/O.

Theory of operation (Kafka's Partition.scala, Replica.scala, LeaderEpochFileCache):

* The **leader** appends; each follower fetches with its ``replica_id`` from
  its own log end offset (LEO), which tells the leader how far that follower
  got. ``PartitionLeader.on_follower_fetch`` records it (Replica.
  updateFetchStateOrThrow): a fetch at or past the leader's LEO makes the
  follower *caught up* now; a fetch at or past the leader's LEO of the
  follower's previous fetch makes it caught up as of that previous fetch.
* The **ISR** (in-sync replicas) is the leader and the followers caught up
  within ``replica.lag.time.max.ms``. A follower joins (``EXPAND``) once its
  LEO reaches the high watermark and the start of the leader's epoch
  (Partition.isFollowerInSync); it leaves (``SHRINK``) once it has not been
  caught up for longer than the lag time (Replica.isCaughtUp). The leader only
  *proposes* these changes: the controller decides (AlterPartition), and
  ``set_isr`` applies what it decided.
* The **high watermark** (HW) is the smallest LEO of the ISR; it never moves
  back. Consumers read below it only; followers learn it from fetches.
* **acks=all**: a write is refused before the append with
  ``NOT_ENOUGH_REPLICAS`` when the ISR is smaller than ``min.insync.replicas``;
  once appended it completes when the HW reaches its end, with
  ``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` if the ISR shrank below the minimum
  meanwhile (Partition.checkEnoughReplicasReachOffset). ``ACKS_OUTCOMES`` is
  that rule as a table.
* The **leader-epoch cache** maps each leader epoch to the first offset
  written in it. A follower of a new epoch asks the leader where its own
  latest epoch ends (OffsetForLeaderEpoch) and truncates there, so a log
  written by a deposed leader never keeps records the new leader lacks
  (``truncation_offset``, KIP-101/KIP-279).

Results are frozen slotted dataclasses; the classes hold numbers and sets
only, and take the time as an argument.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from enum import Enum

from kproto.errors import ErrorCode

__all__ = ["UNDEFINED_EPOCH", "UNDEFINED_OFFSET", "LeaderEpochCache", "EpochEndOffset", "FollowerProgress",
           "PartitionLeader", "FetchResult", "IsrChange", "ACKS_OUTCOMES", "acks_all_outcome", "truncation_offset"]

#: OffsetForLeaderEpoch's "no such epoch" answer (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    leader_epoch: int
    end_offset: int


class LeaderEpochCache:
    """(epoch, start offset) pairs, both strictly increasing (LeaderEpochFileCache);
    persisted by the caller as ``leader-epoch-checkpoint``."""

    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self.entries: list[tuple[int, int]] = []
        for epoch, start in entries or ():
            self.assign(epoch, start)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """The first batch of ``epoch`` sits at ``start_offset``. An older or equal
        epoch changes nothing; entries at or after ``start_offset`` of lower epochs
        are dropped (a truncated log wrote them), as LeaderEpochFileCache.assign."""
        if self.entries and epoch <= self.entries[-1][0]:
            return
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))

    def start_offset(self, epoch: int) -> int | None:
        return next((s for e, s in self.entries if e == epoch), None)

    def end_offset_for(self, epoch: int, log_end_offset: int) -> EpochEndOffset:
        """Where ``epoch`` ends here (LeaderEpochFileCache.endOffsetFor): the latest
        epoch ends at the LEO; another at the start of the first greater epoch,
        answered with the greatest epoch not above it; one older than every entry
        ends where the first known epoch starts, answered with the epoch asked (a
        follower holding batches of an epoch this log never had truncates them; the
        chaos test found a follower keeping such a batch while an UNDEFINED answer left
        it alone); none known is undefined."""
        if not self.entries or epoch == UNDEFINED_EPOCH:
            return EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        if epoch < self.entries[0][0]:
            return EpochEndOffset(epoch, self.entries[0][1])
        if epoch >= self.latest_epoch:
            return EpochEndOffset(self.latest_epoch, log_end_offset)
        i = bisect_right([e for e, _ in self.entries], epoch)
        return EpochEndOffset(self.entries[i - 1][0], self.entries[i][1])

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: epochs starting there or later go."""
        self.entries = [(e, s) for e, s in self.entries if s < end_offset]


def truncation_offset(local: LeaderEpochCache, local_end: int, leader_answer: EpochEndOffset) -> int:
    """Where a follower truncates, given the leader's answer to OffsetForLeaderEpoch
    for the follower's latest epoch (AbstractFetcherThread.getOffsetTruncationState):
    the leader's end offset, or, when the leader answered an older epoch, the lesser
    of that and where this log has that epoch end; never past the local LEO. An
    undefined answer (the leader knows no such epoch) keeps the log as it is."""
    if leader_answer.end_offset == UNDEFINED_OFFSET:
        return local_end
    if leader_answer.leader_epoch == local.latest_epoch:
        return min(leader_answer.end_offset, local_end)
    mine = local.end_offset_for(leader_answer.leader_epoch, local_end)
    if mine.end_offset == UNDEFINED_OFFSET:
        return min(leader_answer.end_offset, local_end)
    return min(leader_answer.end_offset, mine.end_offset, local_end)


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower (Kafka's ReplicaState)."""

    log_end_offset: int = UNDEFINED_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = UNDEFINED_OFFSET
    last_fetch_ms: int = 0

    def caught_up(self, leader_leo: int, now: int, max_lag_ms: int) -> bool:
        """Replica.isCaughtUp."""
        return self.log_end_offset == leader_leo or now - self.last_caught_up_ms <= max_lag_ms


class IsrChange(Enum):
    EXPAND = "expand"
    SHRINK = "shrink"


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What a follower's fetch changed: the HW moved, and the follower should join the ISR."""

    high_watermark_advanced: bool
    expand: int | None


# acks=all once appended: (HW reached the write's end, ISR >= min.insync.replicas)
# -> (done, error) (Partition.checkEnoughReplicasReachOffset).
ACKS_OUTCOMES: dict[tuple[bool, bool], tuple[bool, ErrorCode]] = {
    (True, True): (True, ErrorCode.NONE),
    (True, False): (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    (False, True): (False, ErrorCode.NONE),      # keep waiting
    (False, False): (False, ErrorCode.NONE),     # keep waiting: the ISR may grow back, else the timeout
}


def acks_all_outcome(high_watermark: int, required_offset: int, isr_size: int,
                     min_insync: int) -> tuple[bool, ErrorCode]:
    return ACKS_OUTCOMES[(high_watermark >= required_offset, isr_size >= min_insync)]


@dataclass
class PartitionLeader:
    """The leader's view of one partition (Partition.scala, leader side)."""

    local_id: int
    replicas: tuple[int, ...]
    isr: frozenset[int]
    leader_epoch: int
    log_end_offset: int
    high_watermark: int
    epoch_start_offset: int
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    followers: dict[int, FollowerProgress] = field(default_factory=dict)

    @classmethod
    def become_leader(cls, local_id: int, replicas: tuple[int, ...], isr: frozenset[int], leader_epoch: int,
                      log_end_offset: int, high_watermark: int, now: int, **settings) -> "PartitionLeader":
        """Partition.makeLeader: followers in the ISR count as caught up now (they get a
        full lag time to fetch), the others never were; the new epoch starts at the LEO."""
        followers = {r: FollowerProgress(last_caught_up_ms=now if r in isr else 0)
                     for r in replicas if r != local_id}
        return cls(local_id, tuple(replicas), frozenset(isr) | {local_id}, leader_epoch, log_end_offset,
                   min(high_watermark, log_end_offset), log_end_offset, followers=followers, **settings)

    def append_error(self, acks: int) -> ErrorCode:
        """Checked before an append (Partition.appendRecordsToLeader)."""
        if acks == -1 and len(self.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    def on_append(self, log_end_offset: int) -> bool:
        """The leader's log grew; True if the HW moved (a single-replica ISR)."""
        self.log_end_offset = log_end_offset
        return self._maybe_advance_hw()

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, now: int) -> FetchResult:
        """A follower fetched from ``fetch_offset`` (its LEO). A replica not assigned
        here is the caller's NOT_LEADER_OR_FOLLOWER; ``KeyError`` here."""
        f = self.followers[replica_id]
        leo = self.log_end_offset
        if fetch_offset >= leo:
            f.last_caught_up_ms = max(f.last_caught_up_ms, now)
        elif fetch_offset >= f.last_fetch_leader_leo:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.log_end_offset = fetch_offset
        f.last_fetch_leader_leo, f.last_fetch_ms = leo, now
        expand = replica_id if replica_id not in self.isr and self.in_sync(replica_id) else None
        return FetchResult(self._maybe_advance_hw(), expand)

    def in_sync(self, replica_id: int) -> bool:
        """Partition.isFollowerInSync: at the HW and past the start of this epoch."""
        end = self.followers[replica_id].log_end_offset
        return end >= self.high_watermark and end >= self.epoch_start_offset

    def out_of_sync(self, now: int) -> frozenset[int]:
        """The followers of the ISR to drop (Partition.getOutOfSyncReplicas)."""
        return frozenset(r for r in self.isr if r != self.local_id
                         and not self.followers[r].caught_up(self.log_end_offset, now,
                                                             self.replica_lag_time_max_ms))

    def set_replicas(self, replicas: tuple[int, ...]) -> None:
        """The replica set changed at the same leader epoch (a reassignment adding replicas,
        Partition.makeLeader's updateAssignmentAndIsr): new followers start never caught up."""
        self.replicas = tuple(replicas)
        self.followers = {r: self.followers.get(r) or FollowerProgress(last_caught_up_ms=0)
                          for r in replicas if r != self.local_id}

    def set_isr(self, isr: frozenset[int]) -> bool:
        """The controller's decided ISR; True if the HW moved (a shrink can free it)."""
        self.isr = frozenset(isr) | {self.local_id}
        return self._maybe_advance_hw()

    def _maybe_advance_hw(self) -> bool:
        # Partition.maybeIncrementLeaderHW (KIP-966): the HW stays while the ISR is under the
        # effective min ISR (effectiveMinIsr: min.insync.replicas capped at the replica count)
        if len(self.isr) < min(self.min_insync_replicas, len(self.replicas)):
            return False
        ends = [self.log_end_offset] + [self.followers[r].log_end_offset for r in self.isr if r != self.local_id]
        new = min(ends)
        if new > self.high_watermark:
            self.high_watermark = new
            return True
        return False

    def acks_all(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """A write ending before ``required_offset``, appended with acks=all: done yet?"""
        return acks_all_outcome(self.high_watermark, required_offset, len(self.isr), self.min_insync_replicas)
