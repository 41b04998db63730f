"""KRaft's consensus on ``__cluster_metadata`` as a state machine: no sockets, no clock.

Theory of operation (KIP-595; Kafka's KafkaRaftClient, QuorumState, the
EpochState classes, LeaderState, ReplicatedLog):

* Every node is in one epoch state. Voters move through ``Unattached`` (an
  epoch, no leader known, no vote cast), ``Voted`` (voted for a candidate in
  this epoch), ``Candidate`` (asked for votes in a new epoch), ``Leader``,
  ``Follower`` (fetching from the epoch's leader) and ``Resigned`` (a leader
  that stepped down; it keeps its epoch until another leader is known, then
  its election timeout moves it to Unattached of the next epoch), and
  ``Prospective`` (asking for pre-votes before standing for election).
  ``TRANSITIONS`` is the table of legal moves and the epoch each may go to
  (QuorumState.transitionTo*); ``RaftNode._transition`` enforces it.
* ``(epoch, leader id, voted id)`` is the election state a node must not forget:
  ``RaftNode.election`` after every step, written by the driver (as Kafka's
  ``quorum-state`` file, ``quorum_state_json``) *before* it sends that step's
  messages, so a restarted voter never votes twice in an epoch.
* **Pre-vote** (KIP-996): a voter that hears from no leader for ``fetch_timeout_ms``
  (follower) or ``election_timeout_ms`` (unattached, voted; randomised by up to
  itself, as Kafka does) first becomes ``Prospective`` in the *same* epoch and
  sends Vote with ``pre_vote`` set. A pre-vote changes nothing anyone persists:
  a voter grants it to a log at least as up to date as its own unless it leads
  or follows a leader it has fetched from (``CAN_GRANT_PRE_VOTE``). A majority
  makes the prospective a candidate; a majority of refusals or the election
  timeout sends it back (Follower of the leader it knew, else Unattached/Voted),
  so a voter cut off from the quorum never bumps the epoch and, back, does not
  depose a healthy leader (KafkaRaftClient.pollProspective,
  prospectiveTransitionAfterElectionLoss). A voter answering UNSUPPORTED_VERSION
  (no Vote v2) makes it a candidate at once, a standard election (handleVoteResponse).
* **Election**: a prospective that won its pre-votes becomes a candidate of
  epoch + 1, votes for itself and sends Vote to the other voters; a lost or
  split election backs off and goes back to Prospective. A voter grants a vote
  in an epoch it has no leader for, once per epoch (``CAN_GRANT_VOTE``), to a
  candidate whose log is at least as up to date as its own (last epoch, then
  last offset). A majority makes the candidate leader; it appends a
  LeaderChange control record at ``epoch_start_offset`` and announces itself
  with BeginQuorumEpoch. A request or response of a greater epoch moves every
  node to that epoch first (Unattached, or Follower when it names the leader).
* **Replication is pull**: followers (and observers, the brokers) send Fetch with
  their log end offset and the epoch of their last record. The leader checks
  them against its own log (ReplicatedLog.validateOffsetAndEpoch): a log that
  diverged gets ``diverging_epoch`` instead of records and truncates to where
  the two agree (truncateToEndOffset), then fetches again.
* **Snapshots** (KIP-630): a node's log starts at its oldest snapshot's end offset
  once the older records went. A Fetch below the leader's log start is answered
  with ``snapshot_id`` (the leader's latest snapshot); the follower copies it with
  FetchSnapshot, chunk by chunk from a byte position, installs it in place of its
  whole log (the snapshot is committed: the high watermark moves to its end) and
  fetches on from its end offset (KafkaRaftClient.handleFetchSnapshotRequest /
  handleFetchSnapshotResponse).
* **Commit** (LeaderState.maybeUpdateHighWatermark): the high watermark is the
  greatest offset a majority of voters has fetched up to (the leader counts
  with its log end), and moves only past ``epoch_start_offset``: a leader
  commits records of older epochs only together with a record of its own,
  so whatever is committed is in every future leader's log. It never goes back.
  Followers take the leader's high watermark, capped by their own log end.
* **Voter changes** (KIP-853, kraft.version 1): the voters are the latest VotersRecord in
  the log (or its snapshot), committed or not, else the static ``voters`` the node was
  built with; every append and truncation re-reads them (KRaftControlRecordStateMachine).
  The leader changes them one voter at a time (``add_voter`` / ``remove_voter``, Kafka's
  AddVoterHandler / RemoveVoterHandler): the high watermark must be known, kraft.version
  1, the previous VotersRecord committed, no change pending; an added voter must be an
  observer that has caught up with the log end. The new set counts at once, its
  majority commits the record; a leader that removed itself resigns once it is committed.
* **Resign**: a leader shutting down (or one that lost the majority's fetches
  for ``1.5 * fetch_timeout_ms``, Kafka's check-quorum) becomes Resigned and
  sends EndQuorumEpoch naming the voters that fetched furthest; each of them
  starts an election after a backoff by its place in that list.

The log itself is the driver's (``RaftLog``): the metadata partition's
UnifiedLog in a node, a list in the tests. Messages are frozen dataclasses with
the wire fields they stand for; ``Send`` pairs one with its destination.
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Protocol

from kproto.errors import ErrorCode
from kproto.log.manager import format_topic_id

__all__ = [
    "StateKind", "EpochRule", "TRANSITIONS", "CAN_GRANT_VOTE", "ElectionState", "RaftConfig", "RaftLog",
    "CAN_GRANT_PRE_VOTE", "Unattached", "Voted", "Prospective", "Candidate", "Leader", "Follower", "Resigned",
    "VoteRequest", "VoteResponse", "BeginQuorumEpochRequest", "BeginQuorumEpochResponse",
    "EndQuorumEpochRequest", "EndQuorumEpochResponse", "FetchRequest", "FetchResponse", "Send",
    "FetchSnapshotRequest", "FetchSnapshotResponse",
    "RaftNode", "Voter", "VoterChange", "quorum_state_json", "parse_quorum_state", "high_watermark_update", "NO_ID",
]

#: Kafka's sentinel for "no leader" / "not voted" (-1 on the wire and in quorum-state).
NO_ID = -1


class StateKind(Enum):
    """The value is Kafka's name for the state (DescribeQuorum, logs)."""

    UNATTACHED = "Unattached"
    VOTED = "Voted"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"
    PROSPECTIVE = "Prospective"


class EpochRule(Enum):
    """Which epoch a transition may go to, relative to the current one."""

    SAME = "same"
    HIGHER = "higher"
    SAME_OR_HIGHER = "same or higher"
    NEXT = "current + 1"


U, V, C, L, F, R, P = (StateKind.UNATTACHED, StateKind.VOTED, StateKind.CANDIDATE, StateKind.LEADER,
                       StateKind.FOLLOWER, StateKind.RESIGNED, StateKind.PROSPECTIVE)

# (from, to) -> the epochs allowed; a pair not here is illegal (QuorumState.transitionTo*)
TRANSITIONS: dict[tuple[StateKind, StateKind], EpochRule] = {
    # a greater epoch seen anywhere, no leader known for it
    **{(s, U): EpochRule.HIGHER for s in StateKind},
    # a vote is cast only by a voter without a vote or leader in that epoch
    (U, V): EpochRule.SAME_OR_HIGHER,
    **{(s, V): EpochRule.HIGHER for s in (V, C, L, F, R)},
    # a timeout: pre-votes first, in the same epoch (transitionToProspective: not from a leader)
    **{(s, P): EpochRule.SAME for s in (U, V, C, F, R)},
    # pre-votes lost: back to the epoch's leader or to no leader, the vote kept (transitionToUnattached
    # takes the same epoch from Prospective only)
    (P, U): EpochRule.SAME_OR_HIGHER,
    (P, V): EpochRule.SAME_OR_HIGHER,
    # a majority of pre-votes: the next epoch (checkValidTransitionToCandidate: from Prospective only)
    (P, C): EpochRule.NEXT,
    # a majority of votes
    (C, L): EpochRule.SAME,
    # the epoch's leader is known: the same epoch if it was not known yet
    **{(s, F): EpochRule.SAME_OR_HIGHER for s in (U, V, C, P)},
    **{(s, F): EpochRule.HIGHER for s in (L, F, R)},
    # shutdown or check-quorum
    (L, R): EpochRule.SAME,
}

#: Whether a voter in this state may grant a Vote of its own epoch (the candidate's
#: log must also be up to date); Voted grants only to the candidate it voted for.
CAN_GRANT_VOTE: dict[StateKind, bool] = {U: True, V: True, P: True, C: False, L: False, F: False, R: False}
#: Prospective grants as Unattached or Voted would, by the vote it keeps (none if it knows a leader)
#: (QuorumState.unattachedOrProspectiveCanGrantVote).

#: The same for a pre-vote (the ``canGrantVote(..., isPreVote)`` of each EpochState): nothing is
#: recorded, so anyone but a leader may grant it; a follower only until a fetch from its leader
#: succeeded (FollowerState.hasFetchedFromLeader): then the leader is alive.
CAN_GRANT_PRE_VOTE: dict[StateKind, bool] = {U: True, V: True, P: True, C: True, L: False, F: True, R: True}


def epoch_allowed(rule: EpochRule, current: int, target: int) -> bool:
    return {EpochRule.SAME: target == current, EpochRule.HIGHER: target > current,
            EpochRule.SAME_OR_HIGHER: target >= current, EpochRule.NEXT: target == current + 1}[rule]


# -- the persisted election state (Kafka's quorum-state file) ------------------------------------

@dataclass(frozen=True, slots=True)
class ElectionState:
    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID


def quorum_state_json(state: ElectionState, voters: list[int]) -> str:
    """The ``quorum-state`` file as FileQuorumStateStore writes it for static voters
    (QuorumStateData version 0, kraft.version 0)."""
    return json.dumps({"clusterId": "", "leaderId": state.leader_id, "leaderEpoch": state.epoch,
                       "votedId": state.voted_id, "appliedOffset": 0,
                       "currentVoters": [{"voterId": v} for v in sorted(voters)], "data_version": 0},
                      separators=(",", ":"))


def parse_quorum_state(text: str) -> ElectionState:
    """Either version of the file (0 static voters, 1 KIP-853's) -> its election state."""
    data = json.loads(text)
    if data.get("data_version") not in (0, 1):
        raise ValueError(f"quorum-state: unknown data_version {data.get('data_version')!r}")
    return ElectionState(int(data["leaderEpoch"]), int(data["leaderId"]), int(data["votedId"]))


@dataclass(frozen=True, slots=True)
class Voter:
    """A VotersRecord voter (VoterSet.VoterNode): its replica key and its controller endpoints
    ((listener name, host, port), the first the default)."""

    id: int
    directory_id: uuid.UUID = uuid.UUID(int=0)
    endpoints: tuple[tuple[str, str, int], ...] = ()


# -- configuration and the log -------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Kafka's QuorumConfig defaults (controller.quorum.*)."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000


class RaftLog(Protocol):
    """What Raft needs of the metadata partition's log (Kafka's ReplicatedLog)."""

    @property
    def end_offset(self) -> int: ...

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last record, 0 for an empty log."""

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(the greatest epoch <= ``epoch`` in the log, where it ends); (0, 0) if none."""

    def append_as_leader(self, records: Any, epoch: int) -> int:
        """Append ``records`` (driver-defined) in ``epoch``; -> the offset of the first."""

    def append_leader_change(self, epoch: int, leader_id: int, voters: list[int],
                             voter_set: dict[int, Voter] | None = None) -> int:
        """The LeaderChange control record opening ``epoch``; -> its offset. With ``voter_set``
        the batch also holds a KRaftVersionRecord and that VotersRecord."""

    def append_as_follower(self, records: Any) -> None: ...

    def read(self, offset: int) -> Any:
        """Records from ``offset`` (possibly none: driver-defined), for a Fetch response."""

    def truncate_to(self, offset: int) -> None: ...

    # snapshots (Kafka's ReplicatedLog snapshot methods): ids are (end offset, epoch)

    @property
    def log_start_offset(self) -> int: ...

    def latest_snapshot_id(self) -> tuple[int, int] | None: ...

    def read_snapshot(self, snapshot_id: tuple[int, int], position: int) -> tuple[int, bytes] | None:
        """(the snapshot's size, a chunk from ``position``); None if there is no such snapshot."""

    def write_snapshot_chunk(self, snapshot_id: tuple[int, int], position: int, data: bytes) -> None: ...

    def install_snapshot(self, snapshot_id: tuple[int, int]) -> None:
        """The copied snapshot replaces the whole log: it starts and ends at its end offset."""

    # KIP-853's control records (KRaftControlRecordStateMachine)

    @property
    def kraft_version(self) -> int:
        """The latest KRaftVersionRecord's level in the log or its snapshot, 0 without one."""

    def voter_set(self) -> tuple[int, dict[int, Voter]] | None:
        """(the offset of the latest VotersRecord, its voters); a snapshot's counts at its end
        offset - 1; None without one (static voters)."""

    def append_voters(self, voters: dict[int, Voter], epoch: int) -> int:
        """A VotersRecord control batch in ``epoch``; -> its offset."""


def snapshot_to_fetch(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
    """The leader's latest snapshot id when a Fetch is below its log start; None otherwise
    (KafkaMetadataLog.validateOffsetAndEpoch)."""
    return log.latest_snapshot_id() if fetch_offset < log.log_start_offset else None


def validate_offset_and_epoch(log: RaftLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
    """None if ``fetch_offset`` / ``last_fetched_epoch`` agree with ``log``; else the
    (epoch, end offset) to truncate to (ReplicatedLog.validateOffsetAndEpoch)."""
    if fetch_offset == 0:
        return None
    latest = log.latest_snapshot_id() if log.log_start_offset else None
    if latest is not None and (fetch_offset, last_fetched_epoch) == latest:
        return None             # a follower that just installed the leader's snapshot
    epoch, end = log.end_offset_for_epoch(last_fetched_epoch)
    if epoch != last_fetched_epoch or end < fetch_offset:
        return epoch, end
    return None


def truncation_point(log: RaftLog, epoch: int, end_offset: int) -> int:
    """Where a follower truncates on a diverging epoch (ReplicatedLog.truncateToEndOffset)."""
    if epoch == 0:
        return min(end_offset, log.end_offset)
    local_epoch, local_end = log.end_offset_for_epoch(epoch)
    return min(local_end, end_offset) if local_epoch == epoch else local_end


def high_watermark_update(voter_end_offsets: list[int], epoch_start_offset: int, current: int | None) -> int | None:
    """LeaderState.maybeUpdateHighWatermark: the offset a majority has reached (the
    ``len // 2``-th greatest), if it is past ``epoch_start_offset`` and ahead of ``current``."""
    candidate = sorted(voter_end_offsets, reverse=True)[len(voter_end_offsets) // 2]
    if candidate > epoch_start_offset and (current is None or candidate > current):
        return candidate
    return None


# -- messages ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class VoteRequest:
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    #: KIP-996 (Vote v2): asked by a Prospective in its current epoch; granting it records nothing
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class QuorumEpochAck:
    """What a voter answers to Begin- and EndQuorumEpoch alike (both schemas' partition data)."""
    error_code: int
    leader_id: int
    leader_epoch: int


class BeginQuorumEpochResponse(QuorumEpochAck):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...]


class EndQuorumEpochResponse(QuorumEpochAck):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class FetchRequest:
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    #: the request's fetch offset (the driver knows which request this answers)
    fetch_offset: int
    diverging_epoch: tuple[int, int] | None = None
    records: Any = None
    #: the leader's latest snapshot, for a fetch below its log start
    snapshot_id: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    replica_id: int
    current_leader_epoch: int
    snapshot_id: tuple[int, int]
    position: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    snapshot_id: tuple[int, int]
    size: int = 0
    position: int = 0
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class Send:
    destination: int
    message: Any


# -- the epoch states ----------------------------------------------------------------------------

@dataclass(slots=True)
class Unattached:
    epoch: int
    election_deadline: int
    kind = StateKind.UNATTACHED


@dataclass(slots=True)
class Voted:
    epoch: int
    voted_id: int
    election_deadline: int
    kind = StateKind.VOTED


@dataclass(slots=True)
class Prospective:
    """ProspectiveState: the leader and the vote of the state it came from are kept (its
    election is theirs: nothing to persist); pre-votes granted and refused."""

    epoch: int
    election_deadline: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    high_watermark: int | None = None
    kind = StateKind.PROSPECTIVE


@dataclass(slots=True)
class Candidate:
    epoch: int
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    #: the election timed out: waiting a random backoff before the next epoch
    backing_off: bool = False
    kind = StateKind.CANDIDATE


@dataclass(slots=True)
class Leader:
    epoch: int
    epoch_start_offset: int
    #: voter -> the end offset of its last Fetch (the leader's own: its log end)
    end_offsets: dict[int, int]
    #: voter -> when it last fetched (check-quorum)
    last_fetch: dict[int, int]
    #: observer (broker) -> the end offset of its last Fetch (DescribeQuorum)
    observers: dict[int, int] = field(default_factory=dict)
    high_watermark: int | None = None
    #: voters that have not acknowledged BeginQuorumEpoch, and when to ask again
    unacknowledged: set[int] = field(default_factory=set)
    resend_at: int = 0
    #: observer -> when it last fetched up to the log end (LeaderState's lastCaughtUpTimestamp)
    observer_caught_up: dict[int, int] = field(default_factory=dict)
    observer_fetched: dict[int, int] = field(default_factory=dict)
    #: the voter change waiting for its VotersRecord to commit (one at a time)
    voter_change: VoterChange | None = None
    #: the committed voter set left this leader out: it resigns (LeaderState.requestResign)
    resign_requested: bool = False
    kind = StateKind.LEADER


@dataclass(slots=True)
class Follower:
    epoch: int
    leader_id: int
    fetch_deadline: int
    high_watermark: int | None = None
    #: when the Fetch in flight was sent (None: none in flight)
    fetch_sent: int | None = None
    #: the leader's snapshot being copied, and the bytes copied so far (FollowerState.fetchingSnapshot)
    fetching_snapshot: tuple[int, int] | None = None
    snapshot_position: int = 0
    #: a fetch from the leader succeeded in this epoch: pre-votes are refused (hasFetchedFromLeader)
    fetched: bool = False
    kind = StateKind.FOLLOWER


@dataclass(slots=True)
class Resigned:
    epoch: int
    leader_id: int
    election_deadline: int
    preferred_successors: tuple[int, ...]
    unacknowledged: set[int] = field(default_factory=set)
    resend_at: int = 0
    kind = StateKind.RESIGNED


@dataclass(slots=True)
class VoterChange:
    """An AddRaftVoter or RemoveRaftVoter in progress (AddVoterHandlerState /
    RemoveVoterHandlerState): its VotersRecord's offset, and when it expires."""

    voter_id: int
    added: bool
    offset: int
    deadline: int


EpochState = Unattached | Voted | Prospective | Candidate | Leader | Follower | Resigned


class IllegalTransition(Exception):
    """A transition ``TRANSITIONS`` does not allow: a bug in the caller, never input."""


class RaftNode:
    """One node of the quorum. Drive it with ``tick(now)`` and ``receive(source, message, now)``
    (a leader also with ``propose``); each returns the messages to send. Persist
    ``election`` before sending them; apply the log up to ``high_watermark``."""

    def __init__(self, node_id: int, voters: list[int], log: RaftLog, now: int, *,
                 election: ElectionState | None = None, config: RaftConfig = RaftConfig(),
                 rng: Callable[[], float] = random.random) -> None:
        self.node_id = node_id
        #: the static voters (controller.quorum.voters), until the log holds a VotersRecord
        self.static_voters = sorted(voters)
        self.voters = sorted(voters)
        self.voter_nodes: dict[int, Voter] = {v: Voter(v) for v in voters}
        self.log = log
        self.config = config
        self.rng = rng
        stored = election or ElectionState(0)
        # QuorumState.initialize: a remembered leadership resumes resigned; a known leader
        # is followed; a vote stays cast
        if stored.leader_id == node_id:
            self.state: EpochState = Resigned(stored.epoch, node_id, self._election_deadline(now), ())
        elif stored.leader_id != NO_ID:
            self.state = Follower(stored.epoch, stored.leader_id, now + config.fetch_timeout_ms)
        elif stored.voted_id != NO_ID:
            self.state = Voted(stored.epoch, stored.voted_id, self._election_deadline(now))
        else:
            self.state = Unattached(stored.epoch, self._election_deadline(now))
        self._refresh_voters(now)
        if self.voters == [node_id] and hasattr(self.state, "election_deadline"):
            self.state.election_deadline = now     # the only voter: no one to wait for
        self._bootstrap_at = now

    # -- what the driver reads ---------------------------------------------------------------

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        s = self.state
        if isinstance(s, Leader):
            return self.node_id
        if isinstance(s, (Follower, Resigned, Prospective)):
            return s.leader_id
        return NO_ID

    @property
    def election(self) -> ElectionState:
        s = self.state
        voted = s.voted_id if isinstance(s, (Voted, Prospective)) else self.node_id if isinstance(s, Candidate) \
            else NO_ID
        return ElectionState(s.epoch, self.leader_id, voted)

    @property
    def high_watermark(self) -> int:
        hw = getattr(self.state, "high_watermark", None)
        return 0 if hw is None else hw

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, Leader)

    # -- the voter set (KIP-853) ---------------------------------------------------------------

    def _refresh_voters(self, now: int) -> None:
        """The voters are the log's latest VotersRecord, committed or not, else the static
        ones (KRaftControlRecordStateMachine.lastVoterSet); a leader's replica states
        follow: an added voter brings its observer state, a removed one turns observer
        (LeaderState.updateVoterAndObserverStates)."""
        found = self.log.voter_set()
        self.voter_nodes = found[1] if found is not None else {v: Voter(v) for v in self.static_voters}
        ids = sorted(self.voter_nodes)
        if ids == self.voters:
            return
        self.voters = ids
        s = self.state
        if not isinstance(s, Leader):
            return
        for v in ids:
            if v not in s.end_offsets:
                s.end_offsets[v] = s.observers.pop(v, -1)
                s.last_fetch[v] = s.observer_fetched.get(v, now)
        for v in [v for v in s.end_offsets if v not in ids]:
            end = s.end_offsets.pop(v)
            del s.last_fetch[v]
            s.unacknowledged.discard(v)
            if v != self.node_id:
                s.observers[v] = end

    def _voter_change_refused(self, s: Leader, action: str, pending: str, now: int) -> tuple[int, str] | None:
        """The checks AddVoterHandler and RemoveVoterHandler share, in their order (an add waits
        for a pending add only: a pending removal fails the uncommitted-record check next)."""
        if s.voter_change is not None and now >= s.voter_change.deadline:
            s.voter_change = None           # maybeExpirePendingOperation
        if s.voter_change is not None and (action == "removing" or s.voter_change.added):
            return ErrorCode.REQUEST_TIMED_OUT, f"Request timed out waiting for leader to handle previous {pending}"
        if s.high_watermark is None:
            return ErrorCode.REQUEST_TIMED_OUT, ("Request timed out waiting for leader to establish HWM and fence "
                                                 "previous voter changes")
        if self.log.kraft_version < 1:
            return ErrorCode.UNSUPPORTED_VERSION, (f"Cluster doesn't support {action} voter because the "
                                                   f"kraft.version feature is {self.log.kraft_version}")
        found = self.log.voter_set()
        if found is None or found[0] >= s.high_watermark:
            at = f"Optional[{found[0]}]" if found is not None else "Optional.empty"
            return ErrorCode.REQUEST_TIMED_OUT, (f"Request timed out waiting for voters to commit the latest voter "
                                                 f"change at {at} with HWM {s.high_watermark}")
        return None

    def _change_voters(self, s: Leader, voters: dict[int, Voter], change: int, added: bool, now: int) -> int:
        offset = self.log.append_voters(voters, s.epoch)
        s.voter_change = VoterChange(change, added, offset, now + self.config.request_timeout_ms)
        self._refresh_voters(now)
        self._leader_progress(now)
        return offset

    def add_voter(self, voter: Voter, now: int) -> tuple[int, str | None, int]:
        """AddRaftVoter on the leader (AddVoterHandler): -> (error, message, the offset of the
        VotersRecord, -1 if refused); the change is done when the high watermark passes it.
        (Kafka first asks the new voter's ApiVersions for its kraft.version range; kproto's
        controllers all support 0-1.)"""
        s = self.state
        if not isinstance(s, Leader):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None, -1
        refused = self._voter_change_refused(s, "adding", "add voter request", now)
        if refused is not None:
            return *refused, -1
        voters = self.voter_nodes
        if voter.id in voters:
            return ErrorCode.DUPLICATE_VOTER, (f"The voter id for {_replica_key(voter)} is already part of the set "
                                               f"of voters {_replica_keys(voters)}."), -1
        # LeaderState.isReplicaCaughtUp: an observer that reached the log end and fetched
        # within the hour
        caught_up = s.observer_caught_up.get(voter.id, 0) > 0 and s.observer_fetched.get(voter.id, -1) > now - 3_600_000
        if not caught_up:
            return ErrorCode.REQUEST_TIMED_OUT, (f"Aborted add voter operation for {_replica_key(voter)} since it is "
                                                 f"lagging behind"), -1
        return 0, None, self._change_voters(s, {**voters, voter.id: voter}, voter.id, True, now)

    def remove_voter(self, voter_id: int, directory_id: uuid.UUID, now: int) -> tuple[int, str | None, int]:
        """RemoveRaftVoter on the leader (RemoveVoterHandler), as ``add_voter``; the replica key
        must match the voter's, directory id included (VoterSet.removeVoter)."""
        s = self.state
        if not isinstance(s, Leader):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, None, -1
        refused = self._voter_change_refused(s, "removing", "add or remove voter request", now)
        if refused is not None:
            return *refused, -1
        voters = self.voter_nodes
        old = voters.get(voter_id)
        if old is None or old.directory_id != directory_id:
            return ErrorCode.VOTER_NOT_FOUND, (f"Cannot remove voter {_replica_key(Voter(voter_id, directory_id))} "
                                               f"from the set of voters {_replica_keys(voters)}"), -1
        if len(voters) == 1:
            # VoterSet refuses an empty set (an IllegalArgumentException in Kafka): one line here
            return ErrorCode.INVALID_REQUEST, "Voters cannot be empty", -1
        rest = {v: n for v, n in voters.items() if v != voter_id}
        return 0, None, self._change_voters(s, rest, voter_id, False, now)

    # -- transitions -------------------------------------------------------------------------

    def _transition(self, new: EpochState) -> None:
        rule = TRANSITIONS.get((self.state.kind, new.kind))
        if rule is None or not epoch_allowed(rule, self.state.epoch, new.epoch):
            raise IllegalTransition(f"node {self.node_id}: {self.state.kind.value}@{self.state.epoch} -> "
                                    f"{new.kind.value}@{new.epoch}")
        # the follower keeps what it knew committed across epochs (it never goes back)
        if isinstance(new, (Follower, Prospective)) and new.high_watermark is None:
            new.high_watermark = getattr(self.state, "high_watermark", None)
        self.state = new

    def _election_deadline(self, now: int) -> int:
        t = self.config.election_timeout_ms
        return now + t + int(self.rng() * t)

    def _to_unattached(self, epoch: int, now: int) -> None:
        self._transition(Unattached(epoch, self._election_deadline(now)))

    def _to_follower(self, epoch: int, leader_id: int, now: int) -> list[Send]:
        self._transition(Follower(epoch, leader_id, now + self.config.fetch_timeout_ms))
        return self._fetch(now)

    def _to_prospective(self, now: int) -> list[Send]:
        """QuorumState.transitionToProspective: a memory transition (the election stays)."""
        s = self.state
        self._transition(Prospective(s.epoch, self._election_deadline(now), self.leader_id, self.election.voted_id,
                                     {self.node_id}))
        return self._maybe_pre_elected(now) or self._ask_votes(s.epoch, pre_vote=True)

    def _maybe_pre_elected(self, now: int) -> list[Send]:
        """KafkaRaftClient.maybeTransitionToCandidate / maybeHandleElectionLoss for a Prospective."""
        s = self.state
        if not isinstance(s, Prospective):
            return []
        if len(s.granted) * 2 > len(self.voters):
            return self._to_candidate(now)
        if len(s.rejected) * 2 >= len(self.voters):
            return self._after_pre_vote_loss(now)
        return []

    def _after_pre_vote_loss(self, now: int) -> list[Send]:
        """prospectiveTransitionAfterElectionLoss: back to the leader it knew, else to no
        leader with the vote it had cast in this epoch."""
        s = self.state
        assert isinstance(s, Prospective)
        if s.leader_id != NO_ID:
            return self._to_follower(s.epoch, s.leader_id, now)
        if s.voted_id != NO_ID:
            self._transition(Voted(s.epoch, s.voted_id, self._election_deadline(now)))
        else:
            self._to_unattached(s.epoch, now)
        return []

    def _to_candidate(self, now: int) -> list[Send]:
        self._transition(Candidate(self.state.epoch + 1, self._election_deadline(now), {self.node_id}))
        return self._maybe_elected(now) or self._ask_votes(self.state.epoch, pre_vote=False)

    def _ask_votes(self, epoch: int, *, pre_vote: bool) -> list[Send]:
        """A Vote (or KIP-996 pre-vote) to every other voter, with this node's log end
        (KafkaRaftClient.buildVoteRequest)."""
        return [Send(v, VoteRequest(epoch, self.node_id, self.log.last_fetched_epoch, self.log.end_offset, pre_vote))
                for v in self.voters if v != self.node_id]

    def _maybe_elected(self, now: int) -> list[Send]:
        s = self.state
        if not isinstance(s, Candidate) or len(s.granted) * 2 <= len(self.voters):
            return []
        start = self.log.end_offset
        self._transition(Leader(s.epoch, start, {v: -1 for v in self.voters}, {v: now for v in self.voters},
                                unacknowledged=set(self.voters) - {self.node_id}, resend_at=now))
        # kraft.version 1 voters known from the bootstrap checkpoint only (offset -1) go into
        # the log with the epoch's LeaderChange, for replicas formatted without them
        # (LeaderState.appendStartOfEpochControlRecords)
        found = self.log.voter_set()
        bootstrap = self.voter_nodes if self.log.kraft_version >= 1 and found is not None and found[0] < 0 else None
        self.log.append_leader_change(s.epoch, self.node_id, self.voters, bootstrap)
        self._refresh_voters(now)
        self._leader_progress(now)
        return self._begin_quorum_epoch(now)

    def _begin_quorum_epoch(self, now: int) -> list[Send]:
        s = self.state
        assert isinstance(s, Leader)
        s.resend_at = now + self.config.request_timeout_ms
        return [Send(v, BeginQuorumEpochRequest(self.node_id, s.epoch)) for v in sorted(s.unacknowledged)]

    def _leader_progress(self, now: int) -> None:
        s = self.state
        assert isinstance(s, Leader)
        if self.is_voter:           # a leader removing itself counts no more (LeaderState.voterStates)
            s.end_offsets[self.node_id] = self.log.end_offset
            s.last_fetch[self.node_id] = now
        hw = high_watermark_update(list(s.end_offsets.values()), s.epoch_start_offset, s.high_watermark)
        if hw is not None:
            s.high_watermark = hw
        change = s.voter_change
        if change is not None and s.high_watermark is not None and s.high_watermark > change.offset:
            # the VotersRecord committed (Add/RemoveVoterHandler.highWatermarkUpdated)
            s.voter_change = None
            if not self.is_voter:
                s.resign_requested = True

    def _fetch(self, now: int) -> list[Send]:
        s = self.state
        assert isinstance(s, Follower)
        s.fetch_sent = now
        if s.fetching_snapshot is not None:
            return [Send(s.leader_id, FetchSnapshotRequest(self.node_id, s.epoch, s.fetching_snapshot,
                                                           s.snapshot_position))]
        return [Send(s.leader_id, FetchRequest(self.node_id, s.epoch, self.log.end_offset,
                                               self.log.last_fetched_epoch))]

    def _observe_epoch(self, epoch: int, leader_id: int, now: int) -> list[Send] | None:
        """KafkaRaftClient.maybeHandleCommonResponse / handle*Request's first step: a greater
        epoch moves this node there (following its leader when named); a leader named for
        the current epoch we did not know is followed. None when nothing changed."""
        s = self.state
        if epoch > s.epoch:
            if leader_id not in (NO_ID, self.node_id):
                return self._to_follower(epoch, leader_id, now)
            self._to_unattached(epoch, now)
            return []
        # (a Prospective that knows its epoch's leader keeps asking: maybeHandleCommonResponse's !hasLeader)
        if epoch == s.epoch and leader_id not in (NO_ID, self.node_id) and self.leader_id == NO_ID \
                and isinstance(s, (Unattached, Voted, Candidate, Prospective)):
            return self._to_follower(epoch, leader_id, now)
        return None

    # -- inputs ------------------------------------------------------------------------------

    def propose(self, records: Any, now: int) -> int:
        """Append ``records`` as the leader; -> the offset of the first (committed once the
        high watermark passes it)."""
        s = self.state
        if not isinstance(s, Leader):
            raise IllegalTransition(f"node {self.node_id} is not the leader")
        offset = self.log.append_as_leader(records, s.epoch)
        self._leader_progress(now)
        return offset

    def resign(self, now: int) -> list[Send]:
        """A graceful shutdown of the leader (KafkaRaftClient.shutdown -> Resigned):
        EndQuorumEpoch to the voters, the furthest fetched first."""
        s = self.state
        if not isinstance(s, Leader):
            return []
        successors = tuple(sorted((v for v in self.voters if v != self.node_id),
                                  key=lambda v: (-s.end_offsets.get(v, -1), v)))
        self._transition(Resigned(s.epoch, self.node_id, self._election_deadline(now), successors,
                                  set(successors), now + self.config.request_timeout_ms))
        return [Send(v, EndQuorumEpochRequest(self.node_id, s.epoch, successors)) for v in successors]

    def tick(self, now: int) -> list[Send]:
        """Timers: elections, fetch timeouts, check-quorum, retries."""
        s = self.state
        if isinstance(s, Leader):
            if s.resign_requested:
                return self.resign(now)
            out: list[Send] = []
            if s.unacknowledged and now >= s.resend_at:
                out = self._begin_quorum_epoch(now)
            # check-quorum: a leader the majority stopped fetching from steps down
            window = self.config.fetch_timeout_ms * 3 // 2
            recent = sum(1 for v in self.voters if v == self.node_id or now - s.last_fetch[v] <= window)
            if recent * 2 <= len(self.voters):
                return self.resign(now)
            return out
        if isinstance(s, Follower):
            if now >= s.fetch_deadline:
                if self.is_voter:
                    return self._to_prospective(now)
                s.fetch_deadline = now + self.config.fetch_timeout_ms   # observers keep asking
            if s.fetch_sent is None or now >= s.fetch_sent + self.config.request_timeout_ms:
                return self._fetch(now)
            return []
        out = []
        if isinstance(s, Resigned) and s.unacknowledged and now >= s.resend_at:
            s.resend_at = now + self.config.request_timeout_ms
            out = [Send(v, EndQuorumEpochRequest(self.node_id, s.epoch, s.preferred_successors))
                   for v in sorted(s.unacknowledged)]
        if not self.is_voter:
            # an observer that knows no leader asks the voters in turn (Kafka's observers
            # fetch from controller.quorum.bootstrap.servers); the answer names the leader
            if now >= self._bootstrap_at:
                self._bootstrap_at = now + self.config.request_timeout_ms
                voter = self.voters[(now // max(self.config.request_timeout_ms, 1)) % len(self.voters)]
                out.append(Send(voter, FetchRequest(self.node_id, s.epoch, self.log.end_offset,
                                                    self.log.last_fetched_epoch)))
            return out
        if now < s.election_deadline:
            return out
        if isinstance(s, Candidate) and not s.backing_off:
            # a lost or split election: a random backoff, then pre-votes for a new epoch
            s.backing_off = True
            s.election_deadline = now + 1 + int(self.rng() * self.config.election_backoff_max_ms)
            return out
        if isinstance(s, Prospective):
            return out + self._after_pre_vote_loss(now)        # pollProspective: timed out
        if isinstance(s, Resigned) and self.voters != [self.node_id]:
            self._to_unattached(s.epoch + 1, now)               # pollResigned
            return out
        # (the only voter stands at once, whatever it was: KafkaRaftClient.initialize)
        return out + self._to_prospective(now)

    def receive(self, source: int, message: Any, now: int) -> list[Send]:
        handler = {
            VoteRequest: self._on_vote_request, VoteResponse: self._on_vote_response,
            BeginQuorumEpochRequest: self._on_begin_quorum_epoch, BeginQuorumEpochResponse: self._on_ack,
            EndQuorumEpochRequest: self._on_end_quorum_epoch, EndQuorumEpochResponse: self._on_ack,
            FetchRequest: self._on_fetch_request, FetchResponse: self._on_fetch_response,
            FetchSnapshotRequest: self._on_fetch_snapshot_request,
            FetchSnapshotResponse: self._on_fetch_snapshot_response,
        }[type(message)]
        return handler(source, message, now)

    def _on_vote_request(self, source: int, m: VoteRequest, now: int) -> list[Send]:
        """KafkaRaftClient.handleVoteRequest."""
        def answer(error: int = 0, granted: bool = False) -> list[Send]:
            return out + [Send(source, VoteResponse(error, self.leader_id, self.state.epoch, granted))]

        out: list[Send] = []
        if not self.is_voter:
            return answer(ErrorCode.INCONSISTENT_VOTER_SET)
        if m.candidate_epoch < self.state.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if m.candidate_epoch > self.state.epoch:
            out = self._observe_epoch(m.candidate_epoch, NO_ID, now) or []
        s = self.state
        up_to_date = (m.last_offset_epoch, m.last_offset) >= (self.log.last_fetched_epoch, self.log.end_offset)
        if m.pre_vote:
            granted = up_to_date and CAN_GRANT_PRE_VOTE[s.kind] and not (isinstance(s, Follower) and s.fetched)
            return answer(granted=granted)
        voted = s.voted_id if isinstance(s, (Voted, Prospective)) else NO_ID
        granted = up_to_date and CAN_GRANT_VOTE[s.kind] and voted in (NO_ID, m.candidate_id) \
            and self.leader_id == NO_ID
        if granted and isinstance(s, Unattached):
            self._transition(Voted(s.epoch, m.candidate_id, self._election_deadline(now)))
        elif granted and isinstance(s, Prospective):
            s.voted_id = m.candidate_id         # prospectiveAddVotedState: a real vote, persisted
        return answer(granted=granted)

    def _on_vote_response(self, source: int, m: VoteResponse, now: int) -> list[Send]:
        if m.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # KIP-996 (KafkaRaftClient.handleVoteResponse): a voter that cannot read a pre-vote
            # (no Vote v2) would never grant one, so a Prospective stands for election at once
            return self._to_candidate(now) if isinstance(self.state, Prospective) else []
        moved = self._observe_epoch(m.leader_epoch, m.leader_id, now)
        if moved is not None:
            return moved
        s = self.state
        if not isinstance(s, (Candidate, Prospective)) or m.leader_epoch != s.epoch or m.error_code:
            return []
        (s.granted if m.vote_granted else s.rejected).add(source)
        return self._maybe_elected(now) if isinstance(s, Candidate) else self._maybe_pre_elected(now)

    def _on_begin_quorum_epoch(self, source: int, m: BeginQuorumEpochRequest, now: int) -> list[Send]:
        """KafkaRaftClient.handleBeginQuorumEpochRequest."""
        if m.leader_epoch < self.state.epoch:
            return [Send(source, BeginQuorumEpochResponse(ErrorCode.FENCED_LEADER_EPOCH, self.leader_id,
                                                          self.state.epoch))]
        out = self._observe_epoch(m.leader_epoch, m.leader_id, now) or []
        return out + [Send(source, BeginQuorumEpochResponse(0, self.leader_id, self.state.epoch))]

    def _on_ack(self, source: int, m: QuorumEpochAck, now: int) -> list[Send]:
        moved = self._observe_epoch(m.leader_epoch, m.leader_id, now)
        if moved is not None:
            return moved
        s = self.state
        if isinstance(s, (Leader, Resigned)) and m.leader_epoch == s.epoch and not m.error_code:
            s.unacknowledged.discard(source)
        return []

    def _on_end_quorum_epoch(self, source: int, m: EndQuorumEpochRequest, now: int) -> list[Send]:
        """KafkaRaftClient.handleEndQuorumEpochRequest: the named successors stand for
        election after a backoff by their place (strictExponentialElectionBackoffMs)."""
        if m.leader_epoch < self.state.epoch:
            return [Send(source, EndQuorumEpochResponse(ErrorCode.FENCED_LEADER_EPOCH, self.leader_id,
                                                        self.state.epoch))]
        out = self._observe_epoch(m.leader_epoch, m.leader_id, now) or []
        s = self.state
        if isinstance(s, Follower) and s.leader_id == m.leader_id and self.node_id in m.preferred_successors:
            n = len(m.preferred_successors)
            position = m.preferred_successors.index(self.node_id)
            base = self.config.election_backoff_max_ms >> (n - 1) if n > 1 else 0
            s.fetch_deadline = min(s.fetch_deadline, now + min(self.config.election_backoff_max_ms, base << position))
        return out + [Send(source, EndQuorumEpochResponse(0, self.leader_id, self.state.epoch))]

    def _on_fetch_request(self, source: int, m: FetchRequest, now: int) -> list[Send]:
        """KafkaRaftClient.tryCompleteFetchRequest (the driver long-polls an empty answer)."""
        s = self.state

        def answer(error: int, diverging: tuple[int, int] | None = None, records: Any = None,
                   snapshot: tuple[int, int] | None = None) -> list[Send]:
            return [Send(source, FetchResponse(error, self.leader_id, self.state.epoch, self.high_watermark,
                                               m.fetch_offset, diverging, records, snapshot))]

        # validateLeaderOnlyRequest
        if m.current_leader_epoch < s.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if m.current_leader_epoch > s.epoch:
            return answer(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if not isinstance(s, Leader):
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if m.fetch_offset < 0:
            return answer(ErrorCode.OFFSET_OUT_OF_RANGE)
        snapshot = snapshot_to_fetch(self.log, m.fetch_offset, m.last_fetched_epoch)
        if snapshot is not None:
            return answer(0, snapshot=snapshot)
        diverging = validate_offset_and_epoch(self.log, m.fetch_offset, m.last_fetched_epoch)
        if diverging is not None:
            return answer(0, diverging)
        if m.replica_id in self.voters:
            s.end_offsets[m.replica_id] = m.fetch_offset
            s.last_fetch[m.replica_id] = now
            self._leader_progress(now)
        elif m.replica_id >= 0:
            s.observers[m.replica_id] = m.fetch_offset
            s.observer_fetched[m.replica_id] = now
            if m.fetch_offset >= self.log.end_offset:
                s.observer_caught_up[m.replica_id] = now
        return answer(0, None, self.log.read(m.fetch_offset))

    def _on_fetch_response(self, source: int, m: FetchResponse, now: int) -> list[Send]:
        """KafkaRaftClient.handleFetchResponse."""
        moved = self._observe_epoch(m.leader_epoch, m.leader_id, now)
        if moved is not None:
            return moved
        s = self.state
        # a late answer to an older request, or from a node that is not our leader: dropped
        if not isinstance(s, Follower) or source != s.leader_id or m.fetch_offset != self.log.end_offset \
                or m.leader_epoch != s.epoch:
            return []
        s.fetch_sent = None
        if m.error_code:
            return []       # retried by tick after the request timeout (Kafka: retry backoff)
        s.fetch_deadline = now + self.config.fetch_timeout_ms
        s.fetched = True
        if m.snapshot_id is not None:
            s.fetching_snapshot, s.snapshot_position = m.snapshot_id, 0
            return self._fetch(now)
        if m.diverging_epoch is not None:
            epoch, end = m.diverging_epoch
            point = truncation_point(self.log, epoch, end)
            if s.high_watermark is not None and point < s.high_watermark:
                raise AssertionError(f"node {self.node_id}: truncation to {point} below the high watermark "
                                     f"{s.high_watermark}")
            self.log.truncate_to(point)
        elif m.records is not None:
            self.log.append_as_follower(m.records)
        self._refresh_voters(now)
        hw = min(m.high_watermark, self.log.end_offset)
        if s.high_watermark is None or hw > s.high_watermark:
            s.high_watermark = hw
        return self._fetch(now)

    def _on_fetch_snapshot_request(self, source: int, m: FetchSnapshotRequest, now: int) -> list[Send]:
        """KafkaRaftClient.handleFetchSnapshotRequest: a chunk of the named snapshot from
        ``position``; SNAPSHOT_NOT_FOUND once it is not the leader's any more."""
        s = self.state

        def answer(error: int, size: int = 0, data: bytes = b"") -> list[Send]:
            return [Send(source, FetchSnapshotResponse(error, self.leader_id, self.state.epoch, m.snapshot_id,
                                                       size, m.position, data))]

        if m.current_leader_epoch < s.epoch:
            return answer(ErrorCode.FENCED_LEADER_EPOCH)
        if m.current_leader_epoch > s.epoch:
            return answer(ErrorCode.UNKNOWN_LEADER_EPOCH)
        if not isinstance(s, Leader):
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        found = self.log.read_snapshot(m.snapshot_id, m.position)
        if found is None:
            return answer(ErrorCode.SNAPSHOT_NOT_FOUND)
        size, data = found
        if m.position < 0 or m.position > size:
            return answer(ErrorCode.POSITION_OUT_OF_RANGE)
        if m.replica_id in self.voters:
            s.last_fetch[m.replica_id] = now          # a voter copying a snapshot is alive
        return answer(0, size, data)

    def _on_fetch_snapshot_response(self, source: int, m: FetchSnapshotResponse, now: int) -> list[Send]:
        """KafkaRaftClient.handleFetchSnapshotResponse: write the chunk at its position; the
        last one installs the snapshot, then fetching goes on from its end offset."""
        moved = self._observe_epoch(m.leader_epoch, m.leader_id, now)
        if moved is not None:
            return moved
        s = self.state
        if not isinstance(s, Follower) or source != s.leader_id or m.leader_epoch != s.epoch \
                or s.fetching_snapshot != m.snapshot_id or m.position != s.snapshot_position:
            return []
        s.fetch_sent = None
        if m.error_code:
            if m.error_code in (ErrorCode.SNAPSHOT_NOT_FOUND, ErrorCode.POSITION_OUT_OF_RANGE):
                s.fetching_snapshot, s.snapshot_position = None, 0      # ask again which one
                return self._fetch(now)
            return []
        s.fetch_deadline = now + self.config.fetch_timeout_ms
        self.log.write_snapshot_chunk(m.snapshot_id, m.position, m.data)
        s.snapshot_position += len(m.data)
        if s.snapshot_position >= m.size:
            self.log.install_snapshot(m.snapshot_id)
            self._refresh_voters(now)
            s.fetching_snapshot, s.snapshot_position = None, 0
            # a snapshot holds committed records only
            s.high_watermark = max(s.high_watermark or 0, m.snapshot_id[0])
        return self._fetch(now)


def _replica_key(voter: Voter) -> str:
    """ReplicaKey.toString."""
    return f"ReplicaKey(id={voter.id}, directoryId=Optional[{format_topic_id(voter.directory_id)}])"


def _replica_keys(voters: dict[int, Voter]) -> str:
    return "[" + ", ".join(_replica_key(v) for v in voters.values()) + "]"

