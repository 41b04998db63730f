"""KRaft's consensus (kproto/server/cluster/raft.py) on a deterministic in-memory
network of voters: messages dropped, reordered and duplicated, nodes crashed and
restarted from their quorum-state and log; the invariants are Raft's (election
safety, log matching, committed entries never lost) and the rules Kafka pins."""

from __future__ import annotations

import json
import uuid
import random
from types import SimpleNamespace

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kproto.errors import ErrorCode
from kproto.server.cluster import quorum as quorum_wire
from kproto.server.cluster import raft as R
from kproto.server.cluster.raft import (
    TRANSITIONS, EpochRule, ElectionState, FetchRequest, RaftConfig, RaftNode, StateKind, VoteRequest,
)

U, V, C, L, F, RS, P = (StateKind.UNATTACHED, StateKind.VOTED, StateKind.CANDIDATE, StateKind.LEADER,
                        StateKind.FOLLOWER, StateKind.RESIGNED, StateKind.PROSPECTIVE)


class MemoryLog:
    """A RaftLog of (epoch, payload) entries from ``start`` on; snapshots are the entries
    below their end offset (offset = start + index)."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, object]] = []
        self.start = 0
        self.snapshots: dict[tuple[int, int], list] = {}
        self.copying: dict[tuple[int, int], list] = {}
        #: as a bootstrap checkpoint's KRaftVersionRecord and VotersRecord would set them
        self.kraft_version = 0
        self.bootstrap: dict | None = None

    @property
    def log_start_offset(self) -> int:
        return self.start

    @property
    def end_offset(self) -> int:
        return self.start + len(self.entries)

    @property
    def last_fetched_epoch(self) -> int:
        if self.entries:
            return self.entries[-1][0]
        latest = self.latest_snapshot_id()
        return latest[1] if latest else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        floor = max((e for e, _ in self.entries if e <= epoch), default=None)
        latest = self.latest_snapshot_id()
        if floor is None:
            return (latest[1], latest[0]) if latest and latest[1] <= epoch else (0, 0)
        later = [i for i, (e, _) in enumerate(self.entries) if e > floor]
        return floor, self.start + (later[0] if later else len(self.entries))

    def append_as_leader(self, records: list, epoch: int) -> int:
        first = self.end_offset
        self.entries += [(epoch, r) for r in records]
        return first

    def append_leader_change(self, epoch: int, leader_id: int, voters: list[int], voter_set=None) -> int:
        return self.append_as_leader([("LeaderChange", leader_id)] + ([("Voters", voter_set)] if voter_set else []),
                                     epoch)

    def append_as_follower(self, records: list) -> None:
        self.entries += records

    def voter_set(self):
        """The latest ("Voters", {id: Voter}) entry, in the log or its snapshot."""
        found = [(k, p[1]) for k, (_, p) in enumerate(self.full()) if isinstance(p, tuple) and p[0] == "Voters"]
        return found[-1] if found else None if self.bootstrap is None else (-1, self.bootstrap)

    def append_voters(self, voters: dict, epoch: int) -> int:
        return self.append_as_leader([("Voters", dict(voters))], epoch)

    def read(self, offset: int) -> list:
        i = offset - self.start
        return self.entries[i:i + 3]      # small reads: more interleavings

    def truncate_to(self, offset: int) -> None:
        del self.entries[max(offset - self.start, 0):]

    def full(self) -> list:
        """Every entry from offset 0: the latest snapshot's, then the log's."""
        latest = self.latest_snapshot_id()
        return (self.snapshots[latest] if latest and self.start else []) + self.entries

    # snapshots: a snapshot's "bytes" are its entries, a chunk is up to two of them

    def snapshot(self, offset: int, history: list) -> None:
        """Snapshot the committed entries below ``offset`` (``history``: every entry from 0),
        then drop the log before it."""
        self.snapshots[(offset, history[offset - 1][0])] = history[:offset]
        del self.entries[:offset - self.start]
        self.start = offset

    def latest_snapshot_id(self) -> tuple[int, int] | None:
        return max(self.snapshots, default=None)

    def read_snapshot(self, snapshot_id, position: int):
        found = self.snapshots.get(snapshot_id)
        return None if found is None else (len(found), found[position:position + 2])

    def write_snapshot_chunk(self, snapshot_id, position: int, data: list) -> None:
        part = self.copying.setdefault(snapshot_id, [])
        assert len(part) == position
        part += data

    def install_snapshot(self, snapshot_id) -> None:
        self.snapshots[snapshot_id] = self.copying.pop(snapshot_id)
        self.entries, self.start = [], snapshot_id[0]


class Sim:
    """N voters on a network that holds every message until the test delivers,
    drops or duplicates it; a crash keeps a node's log and its persisted election."""

    def __init__(self, n: int = 3, seed: int = 0, config: RaftConfig = RaftConfig(), *,
                 voters: list[int] | None = None, bootstrap: dict | None = None) -> None:
        """``voters``: the static voters (all n by default; the others are observers);
        ``bootstrap``: kraft.version 1, the voters' logs with this VotersRecord in their
        bootstrap checkpoint (``storage format --standalone``), the others' without."""
        self.rng = random.Random(seed)
        self.ids = list(range(1, n + 1))
        self.voters = voters or self.ids
        self.config = config
        self.now = 0
        self.logs = {i: MemoryLog() for i in self.ids}
        if bootstrap is not None:
            for i, log in self.logs.items():
                log.kraft_version = 1
                log.bootstrap = bootstrap if i in self.voters else None
        self.stored = {i: ElectionState(0) for i in self.ids}
        self.nodes: dict[int, RaftNode | None] = {i: self._boot(i) for i in self.ids}
        self.network: list[tuple[int, int, object]] = []
        self.leaders: dict[int, int] = {}            # epoch -> the one leader it had
        self.committed: list = []
        self.commit_epoch = 0
        self.proposed = 0

    def _boot(self, i: int) -> RaftNode:
        return RaftNode(i, self.voters, self.logs[i], self.now, election=self.stored[i], config=self.config,
                        rng=self.rng.random)

    def _out(self, source: int, sends: list[R.Send]) -> None:
        node = self.nodes[source]
        self.stored[source] = node.election            # persisted before anything is sent
        self.network += [(source, s.destination, s.message) for s in sends]
        self.check()

    def tick(self, advance: int) -> None:
        self.now += advance
        for i in self.ids:
            if self.nodes[i] is not None:
                before = self.nodes[i].election
                self._out(i, self.nodes[i].tick(self.now))
                if self.nodes[i].state.kind is P:
                    # becoming Prospective is a memory transition: quorum-state is not written
                    assert self.nodes[i].election == before, (i, before, self.nodes[i].election)

    def deliver(self, index: int) -> None:
        source, dest, message = self.network.pop(index)
        node = self.nodes[dest]
        if node is not None:
            before = node.election
            self._out(dest, node.receive(source, message, self.now))
            if isinstance(message, VoteRequest) and message.pre_vote and message.candidate_epoch <= before.epoch:
                # granting or refusing a pre-vote changes nothing persisted (a greater epoch is
                # observed first, as any request's)
                assert node.election == before, (dest, message, before, node.election)

    def crash(self, i: int) -> None:
        self.nodes[i] = None
        self.network = [m for m in self.network if m[1] != i]

    def restart(self, i: int) -> None:
        self.nodes[i] = self._boot(i)

    def propose(self) -> int | None:
        for i, node in self.nodes.items():
            if node is not None and node.is_leader:
                self.proposed += 1
                offset = node.propose([self.proposed], self.now)
                self._out(i, [])
                return offset
        return None

    def run(self, until, limit_ms: int = 60_000, drop: float = 0.0) -> None:
        """Deliver in random order (dropping some), ticking time, until ``until()``."""
        deadline = self.now + limit_ms
        while not until():
            assert self.now < deadline, f"not reached by {limit_ms} ms: {self.describe()}"
            if self.network and self.rng.random() < 0.9:
                index = self.rng.randrange(len(self.network))
                if self.rng.random() < drop:
                    self.network.pop(index)
                else:
                    self.deliver(index)
            else:
                self.tick(self.rng.randint(1, 100))

    def leader(self) -> RaftNode | None:
        live = [n for n in self.nodes.values() if n is not None and n.is_leader]
        return max(live, key=lambda n: n.epoch) if live else None

    def describe(self) -> str:
        return ", ".join(f"{i}:{n.state.kind.value}@{n.epoch} leo={n.log.end_offset} hw={n.high_watermark}"
                         if n else f"{i}:down" for i, n in self.nodes.items())

    # -- Raft's invariants ---------------------------------------------------------------------

    def check(self) -> None:
        for i, node in self.nodes.items():
            if node is None:
                continue
            if node.is_leader:
                # election safety: one leader per epoch
                assert self.leaders.setdefault(node.epoch, i) == i, (node.epoch, self.leaders)
            # committed entries never vanish: every HW covers a prefix of the one committed history
            hw = node.high_watermark
            mine = node.log.full()[:hw]
            shorter, longer = sorted((mine, self.committed), key=len)
            assert longer[:len(shorter)] == shorter, f"node {i} committed {mine}, history {self.committed}"
            if len(mine) > len(self.committed):
                self.committed = list(mine)
                self.commit_epoch = max(self.commit_epoch, node.epoch)
            if node.is_leader and node.epoch >= self.commit_epoch:
                # leader completeness: what was committed is in the log of every leader since
                # (a deposed leader cut off in an older epoch may still think it leads)
                assert node.log.full()[:len(self.committed)] == self.committed
        # log matching: an (offset, epoch) in two logs means the same prefix up to it
        logs = [self.logs[i].full() for i in self.ids]
        for a in logs:
            for b in logs:
                n = min(len(a), len(b))
                for k in range(n - 1, -1, -1):
                    if a[k][0] == b[k][0]:
                        assert a[:k + 1] == b[:k + 1]
                        break


# -- the tables ----------------------------------------------------------------------------------

def test_transitions_table_pinned_to_quorum_state():
    """Written independently from QuorumState.transitionTo*: (from, to) -> epoch rule."""
    H, S, SH, N = EpochRule.HIGHER, EpochRule.SAME, EpochRule.SAME_OR_HIGHER, EpochRule.NEXT
    grid = {
        U: {U: H, V: SH, P: S, F: SH},
        V: {U: H, V: H, P: S, F: SH},
        P: {U: SH, V: SH, C: N, F: SH},        # KIP-996: the only way to Candidate
        C: {U: H, V: H, P: S, L: S, F: SH},
        L: {U: H, V: H, F: H, RS: S},
        F: {U: H, V: H, P: S, F: H},
        RS: {U: H, V: H, P: S, F: H},
    }
    assert TRANSITIONS == {(a, b): rule for a, row in grid.items() for b, rule in row.items()}


def _state(kind: StateKind, epoch: int) -> R.EpochState:
    return {U: lambda: R.Unattached(epoch, 0), V: lambda: R.Voted(epoch, 2, 0), C: lambda: R.Candidate(epoch, 0),
            L: lambda: R.Leader(epoch, 0, {1: 0, 2: 0, 3: 0}, {1: 0, 2: 0, 3: 0}),
            F: lambda: R.Follower(epoch, 2, 0), RS: lambda: R.Resigned(epoch, 1, 0, ()),
            P: lambda: R.Prospective(epoch, 0)}[kind]()


@pytest.mark.parametrize("source", list(StateKind))
@pytest.mark.parametrize("target", list(StateKind))
def test_every_transition_allowed_or_refused_as_the_table_says(source, target):
    rule = TRANSITIONS.get((source, target))
    for delta in (-1, 0, 1, 2):
        node = RaftNode(1, [1, 2, 3], MemoryLog(), 0)
        node.state = _state(source, 5)
        allowed = rule is not None and R.epoch_allowed(rule, 5, 5 + delta)
        if allowed:
            node._transition(_state(target, 5 + delta))
            assert node.state.kind is target and node.epoch == 5 + delta
        else:
            with pytest.raises(R.IllegalTransition):
                node._transition(_state(target, 5 + delta))


@pytest.mark.parametrize("offsets, start, current, expected", [
    ([10, 10, 10], 0, None, 10),
    ([10, 7, 3], 0, None, 7),              # the majority's offset, leader counted
    ([10, 7, 3], 7, None, None),           # not past the epoch start: nothing of older epochs commits
    ([10, 8, 3], 7, None, 8),
    ([10, 8, 3], 0, 9, None),              # never backwards
    ([10, 10, 3, 3, 3], 0, None, 3),
    ([10], 5, None, 10),
])
def test_high_watermark_rule(offsets, start, current, expected):
    assert R.high_watermark_update(offsets, start, current) == expected


def test_quorum_state_file_is_kafkas():
    text = R.quorum_state_json(ElectionState(7, 2, -1), [3, 1, 2])
    assert text == ('{"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":-1,"appliedOffset":0,'
                    '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    assert R.parse_quorum_state(text) == ElectionState(7, 2, -1)
    v1 = json.dumps({"leaderId": -1, "leaderEpoch": 3, "votedId": 2,
                     "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1})
    assert R.parse_quorum_state(v1) == ElectionState(3, -1, 2)
    with pytest.raises(ValueError):
        R.parse_quorum_state('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":9}')


# -- single steps --------------------------------------------------------------------------------

def test_single_voter_leads_at_once_and_commits_alone():
    log = MemoryLog()
    node = RaftNode(1, [1], log, 0)
    assert node.tick(0) == []
    assert node.is_leader and node.epoch == 1 and log.entries == [(1, ("LeaderChange", 1))]
    assert node.high_watermark == 1
    assert node.propose(["a"], 1) == 1 and node.high_watermark == 2


def test_vote_granted_once_per_epoch_and_only_to_an_up_to_date_log():
    log = MemoryLog()
    log.append_as_leader(["x", "y"], 2)
    node = RaftNode(1, [1, 2, 3], log, 0, election=ElectionState(2))
    [no] = node.receive(2, VoteRequest(3, 2, 2, 1), 0)           # shorter log
    assert no.message == R.VoteResponse(0, -1, 3, False) and node.state.kind is U
    [no] = node.receive(2, VoteRequest(3, 2, 1, 9), 0)           # older last epoch
    assert not no.message.vote_granted
    [yes] = node.receive(2, VoteRequest(3, 2, 2, 2), 0)
    assert yes.message.vote_granted and node.election == ElectionState(3, -1, 2)
    [again] = node.receive(2, VoteRequest(3, 2, 2, 2), 0)        # the same candidate: granted again
    assert again.message.vote_granted
    [other] = node.receive(3, VoteRequest(3, 3, 5, 50), 0)       # another candidate, same epoch
    assert not other.message.vote_granted
    [fenced] = node.receive(3, VoteRequest(2, 3, 5, 50), 0)
    assert fenced.message.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_pre_vote_granted_to_an_up_to_date_log_unless_a_leader_is_heard_and_recorded_nowhere():
    log = MemoryLog()
    log.append_as_leader(["x", "y"], 2)
    unattached = RaftNode(1, [1, 2, 3], log, 0, election=ElectionState(2))
    [yes] = unattached.receive(2, VoteRequest(2, 2, 2, 2, pre_vote=True), 0)
    assert yes.message == R.VoteResponse(0, -1, 2, True)
    assert unattached.state.kind is U and unattached.election == ElectionState(2)
    [no] = unattached.receive(2, VoteRequest(2, 2, 2, 1, pre_vote=True), 0)       # shorter log
    assert not no.message.vote_granted
    # a pre-vote is no vote: the real vote of the epoch is still free, then others still get pre-votes
    [vote] = unattached.receive(3, VoteRequest(2, 3, 2, 2), 0)
    [pre] = unattached.receive(2, VoteRequest(2, 2, 2, 2, pre_vote=True), 0)
    assert vote.message.vote_granted and pre.message.vote_granted
    assert unattached.election == ElectionState(2, -1, 3)
    # a follower grants only until a fetch from its leader succeeded (hasFetchedFromLeader)
    follower = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 3))
    [yes] = follower.receive(2, VoteRequest(4, 2, 0, 0, pre_vote=True), 0)
    assert yes.message == R.VoteResponse(0, 3, 4, True)
    follower.receive(3, R.FetchResponse(0, 3, 4, 0, 0), 0)
    [no] = follower.receive(2, VoteRequest(4, 2, 0, 0, pre_vote=True), 0)
    assert no.message == R.VoteResponse(0, 3, 4, False)
    assert follower.state.kind is F and follower.election == ElectionState(4, 3)
    assert R.CAN_GRANT_PRE_VOTE == {U: True, V: True, P: True, C: True, L: False, F: True, RS: True}


def test_a_prospective_stands_on_a_majority_of_pre_votes_and_falls_back_on_refusals():
    node = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 3))
    sends = node.tick(RaftConfig().fetch_timeout_ms)           # its leader went quiet
    assert node.state.kind is P and node.election == ElectionState(4, 3)
    assert [(s.destination, s.message) for s in sends] == [
        (2, VoteRequest(4, 1, 0, 0, pre_vote=True)), (3, VoteRequest(4, 1, 0, 0, pre_vote=True))]
    # refused by both (they still hear the leader): back to following it, same epoch
    node.receive(2, R.VoteResponse(0, 3, 4, False), 0)
    [fetch] = node.receive(3, R.VoteResponse(0, 3, 4, False), 0)
    assert node.state.kind is F and node.election == ElectionState(4, 3) and fetch.message.current_leader_epoch == 4
    # the next time one grants: a candidate of epoch 5, asking real votes
    node.tick(2 * RaftConfig().fetch_timeout_ms)
    sends = node.receive(2, R.VoteResponse(0, 3, 4, True), 0)
    assert node.state.kind is C and node.election == ElectionState(5, -1, 1)
    assert {s.message for s in sends} == {VoteRequest(5, 1, 0, 0)}
    # an unattached one that times out its pre-votes keeps the vote it had cast
    voted = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(6, -1, 2))
    voted.tick(10_000)
    assert voted.state.kind is P
    voted.tick(20_000)
    assert voted.state.kind is V and voted.election == ElectionState(6, -1, 2)


def test_a_prospective_answered_unsupported_version_stands_for_election_at_once():
    """KIP-996's fallback (KafkaRaftClient.handleVoteResponse): a voter that cannot read Vote
    v2 answers the pre-vote UNSUPPORTED_VERSION; the Prospective becomes a candidate of the
    next epoch without waiting for a majority and asks standard votes (pre_vote unset)."""
    node = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 3))
    node.tick(RaftConfig().fetch_timeout_ms)
    assert node.state.kind is P
    sends = node.receive(2, quorum_wire.from_wire(VoteRequest(4, 1, 0, 0, pre_vote=True), wire_error(
        ErrorCode.UNSUPPORTED_VERSION)), 0)
    assert node.state.kind is C and node.election == ElectionState(5, -1, 1)
    assert [(s.destination, s.message) for s in sends] == [(2, VoteRequest(5, 1, 0, 0)), (3, VoteRequest(5, 1, 0, 0))]
    # a candidate already (or any other state) ignores it: nothing changes
    assert node.receive(3, R.VoteResponse(ErrorCode.UNSUPPORTED_VERSION, R.NO_ID, -1, False), 0) == []
    assert node.state.kind is C and node.election == ElectionState(5, -1, 1)
    # any other top-level error is still dropped on the wire
    assert quorum_wire.from_wire(VoteRequest(4, 1, 0, 0, pre_vote=True), wire_error(ErrorCode.UNKNOWN_SERVER_ERROR)) \
        is None


def wire_error(error: int):
    """A VoteResponse body with only a top-level error (as the client side makes of a refused version)."""
    return SimpleNamespace(error_code=error, topics=[])


def test_a_restarted_voter_remembers_its_vote():
    node = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, -1, 2))
    assert node.state.kind is V
    [no] = node.receive(3, VoteRequest(4, 3, 0, 0), 0)
    assert not no.message.vote_granted
    resigned = RaftNode(1, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 1, -1))
    assert resigned.state.kind is RS and resigned.leader_id == 1


def test_leader_answers_a_diverging_fetch_and_the_follower_truncates():
    leader_log, follower_log = MemoryLog(), MemoryLog()
    leader_log.entries = [(1, "a"), (1, "b"), (3, "c"), (3, "d")]
    follower_log.entries = [(1, "a"), (1, "b"), (2, "x"), (2, "y"), (2, "z")]
    leader = RaftNode(1, [1, 2, 3], leader_log, 0, election=ElectionState(3))
    leader.state = R.Leader(3, 2, {1: 4, 2: -1, 3: -1}, {1: 0, 2: 0, 3: 0})
    follower = RaftNode(2, [1, 2, 3], follower_log, 0, election=ElectionState(3, 1))
    [fetch] = follower.tick(0)
    assert fetch.message == FetchRequest(2, 3, 5, 2)
    [answer] = leader.receive(2, fetch.message, 0)
    assert answer.message.diverging_epoch == (1, 2) and answer.message.records is None
    [refetch] = follower.receive(1, answer.message, 0)
    assert follower_log.entries == [(1, "a"), (1, "b")]
    assert refetch.message == FetchRequest(2, 3, 2, 1)
    [answer] = leader.receive(2, refetch.message, 0)
    follower.receive(1, answer.message, 0)
    assert follower_log.entries == leader_log.entries
    # the leader counted the follower's fetch offset (2), not past the epoch start: no HW yet
    assert leader.state.high_watermark is None


def test_fetch_to_a_non_leader_names_the_leader():
    node = RaftNode(2, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 1))
    [answer] = node.receive(9, FetchRequest(9, 4, 0, 0), 0)
    assert (answer.message.error_code, answer.message.leader_id, answer.message.leader_epoch) == \
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 4)
    [answer] = node.receive(9, FetchRequest(9, 3, 0, 0), 0)
    assert answer.message.error_code == ErrorCode.FENCED_LEADER_EPOCH


# -- the simulation ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_three_voters_elect_commit_and_fail_over(seed):
    sim = Sim(3, seed)
    sim.run(lambda: sim.leader() is not None)
    offsets = [sim.propose() for _ in range(5)]
    sim.run(lambda: all(n.high_watermark > offsets[-1] for n in sim.nodes.values()), drop=0.1)
    committed = list(sim.committed)
    sim.run(lambda: sim.leader() is not None)
    first = sim.leader()
    sim.crash(first.node_id)
    sim.run(lambda: sim.leader() is not None and sim.leader().node_id != first.node_id, drop=0.1)
    second = sim.leader()
    assert second.epoch > first.epoch
    after = sim.propose()
    sim.run(lambda: second.high_watermark > after)
    assert sim.committed[:len(committed)] == committed
    sim.restart(first.node_id)
    rejoined = sim.nodes[first.node_id]
    sim.run(lambda: rejoined.state.kind is F and rejoined.high_watermark > after
            or rejoined.is_leader and rejoined.high_watermark > after)
    assert sim.logs[first.node_id].entries[:after + 1] == sim.logs[second.node_id].entries[:after + 1]


@pytest.mark.parametrize("seed", range(4))
def test_a_voter_partitioned_away_and_back_neither_bumps_the_epoch_nor_deposes_the_leader(seed):
    """KIP-996's motivation: without pre-vote the cut-off voter stands in epoch after epoch
    and, back, its Vote of a greater epoch makes the healthy leader step down."""
    sim = Sim(3, seed)
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    epoch = leader.epoch
    cut = next(i for i in sim.ids if i != leader.node_id)
    sim.run(lambda: sim.nodes[cut].state.kind is F and sim.nodes[cut].high_watermark > 0)
    stored = sim.stored[cut]
    seen = set()
    for step in range(10_000):      # 30 s away (many fetch and election timeouts), back as it asks
        sim.network = [m for m in sim.network if cut not in m[:2]]
        was = sim.nodes[cut].state.kind
        sim.tick(10)
        seen.add(sim.nodes[cut].state.kind)
        if step >= 3000 and was is not P and sim.nodes[cut].state.kind is P:
            break               # its pre-votes are on the way
        for _ in range(len(sim.network)):
            sim.network = [m for m in sim.network if cut not in m[:2]]
            if sim.network:
                sim.deliver(0)
        assert sim.stored[cut] == stored and sim.nodes[cut].epoch == epoch
    assert P in seen and C not in seen
    offset = sim.propose()
    sim.run(lambda: sim.nodes[cut].state.kind is F and sim.nodes[cut].high_watermark > offset)
    assert sim.leader() is leader and leader.epoch == epoch and sim.leaders == {epoch: leader.node_id}


def test_a_restarted_voter_that_knows_no_leader_does_not_bump_the_epoch():
    sim = Sim(3, 5)
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    epoch = leader.epoch
    other = next(i for i in sim.ids if i != leader.node_id)
    sim.crash(other)
    sim.stored[other] = ElectionState(0)              # it lost its quorum-state: knows nothing
    sim.restart(other)
    offset = sim.propose()
    sim.run(lambda: sim.nodes[other].state.kind is F and sim.nodes[other].high_watermark > offset)
    assert sim.leader() is leader and leader.epoch == epoch and sim.nodes[other].epoch == epoch


def test_resign_hands_over_to_the_furthest_voter():
    sim = Sim(3, 1)
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    sim.propose()
    sim.run(lambda: all(n.high_watermark == leader.log.end_offset for n in sim.nodes.values()))
    sends = leader.resign(sim.now)
    assert leader.state.kind is RS and {s.destination for s in sends} == set(sim.ids) - {leader.node_id}
    sim._out(leader.node_id, sends)
    epoch = leader.epoch
    sim.run(lambda: sim.leader() is not None and sim.leader().epoch > epoch)
    # the successors stood at once (their backoff by place), not after a fetch timeout
    assert sim.leader().node_id in sends[0].message.preferred_successors


def test_check_quorum_leader_cut_off_resigns():
    sim = Sim(3, 2)
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    # cut the leader off: everything to and from it is lost
    others = [i for i in sim.ids if i != leader.node_id]
    while leader.state.kind is L:
        sim.network = [m for m in sim.network if leader.node_id not in m[:2]]
        sim.tick(100)
        for _ in range(len(sim.network)):
            sim.deliver(0) if sim.network and leader.node_id not in sim.network[0][:2] else None
    assert leader.state.kind is RS
    epoch = leader.epoch
    assert any(sim.nodes[i].epoch > epoch for i in others)


class RaftMachine(RuleBasedStateMachine):
    """Any interleaving of delivery, loss, duplication, ticks, proposals, crashes and
    restarts keeps Raft's invariants (Sim.check after every step)."""

    def __init__(self) -> None:
        super().__init__()
        self.sim = Sim(3, 0)

    @precondition(lambda self: self.sim.network)
    @rule(data=st.data())
    def deliver(self, data):
        self.sim.deliver(data.draw(st.integers(0, len(self.sim.network) - 1)))

    @precondition(lambda self: self.sim.network)
    @rule(data=st.data())
    def drop(self, data):
        self.sim.network.pop(data.draw(st.integers(0, len(self.sim.network) - 1)))

    @precondition(lambda self: self.sim.network)
    @rule(data=st.data())
    def duplicate(self, data):
        self.sim.network.append(self.sim.network[data.draw(st.integers(0, len(self.sim.network) - 1))])

    @rule(ms=st.integers(1, 1500))
    def tick(self, ms):
        self.sim.tick(ms)

    @rule()
    def propose(self):
        self.sim.propose()

    @rule(node=st.integers(1, 3))
    def crash_or_restart(self, node):
        if self.sim.nodes[node] is None:
            self.sim.restart(node)
        elif sum(n is not None for n in self.sim.nodes.values()) > 1:
            self.sim.crash(node)

    @invariant()
    def raft_invariants(self):
        self.sim.check()


TestRaftMachine = RaftMachine.TestCase
TestRaftMachine.settings = settings(max_examples=150, stateful_step_count=80, deadline=None)


def test_older_epochs_commit_only_with_a_record_of_the_leaders_epoch():
    """LeaderState's extra rule: a majority holding an epoch-1 record is not enough for the
    epoch-3 leader to commit it; the follower must also hold the leader's LeaderChange."""
    log = MemoryLog()
    log.entries = [(1, "a")]
    leader = RaftNode(1, [1, 2, 3], log, 0, election=ElectionState(2))
    leader.state = R.Candidate(3, 10**9, {1, 2})
    leader._maybe_elected(0)
    assert leader.is_leader and log.entries == [(1, "a"), (3, ("LeaderChange", 1))]
    assert leader.state.epoch_start_offset == 1
    [answer] = leader.receive(2, FetchRequest(2, 3, 1, 1), 0)      # node 2 holds (1, "a") only
    assert answer.message.records == [(3, ("LeaderChange", 1))] and leader.state.high_watermark is None
    leader.receive(2, FetchRequest(2, 3, 2, 3), 0)                  # now it holds the LeaderChange too
    assert leader.high_watermark == 2


def test_a_voter_behind_the_leaders_log_start_copies_its_snapshot_and_fetches_on():
    """KIP-630: the leader's log starts at its snapshot; a voter that was down answers its
    Fetch from below with the snapshot id, copies the snapshot with FetchSnapshot (chunk
    by chunk), installs it and fetches the rest of the log after it."""
    sim = Sim(3, seed=7)
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    behind = next(i for i in sim.ids if i != leader.node_id)
    sim.crash(behind)
    for _ in range(12):
        sim.propose()
    sim.run(lambda: leader.high_watermark == leader.log.end_offset)
    cut = leader.high_watermark - 2             # two committed entries stay in the log
    leader.log.snapshot(cut, leader.log.full())
    sim.propose()
    sent: list = []
    sim.restart(behind)
    original = sim._out

    def spy(source, sends):
        sent.extend(type(s.message).__name__ for s in sends if source == behind)
        original(source, sends)

    sim._out = spy
    sim.run(lambda: sim.nodes[behind].log.end_offset == leader.log.end_offset
            and sim.nodes[behind].high_watermark == leader.high_watermark)
    log = sim.logs[behind]
    assert (log.start, log.latest_snapshot_id()) == (cut, leader.log.latest_snapshot_id())
    assert log.full() == leader.log.full()
    # the snapshot's entries two at a time: a FetchSnapshot request per chunk at least
    assert sent.count("FetchSnapshotRequest") >= -(-cut // 2) and "FetchRequest" in sent


def test_a_snapshot_fetch_is_answered_below_the_log_start_only():
    log = MemoryLog()
    log.append_as_leader(list(range(5)), 1)
    log.append_as_leader(list(range(5)), 2)
    log.snapshot(6, log.full())
    assert R.snapshot_to_fetch(log, 5, 1) == (6, 2)
    assert R.snapshot_to_fetch(log, 6, 2) is None
    # at the snapshot's end with its epoch: the log agrees (a follower that just installed it)
    assert R.validate_offset_and_epoch(log, 6, 2) is None
    node = RaftNode(1, [1], log, 0)
    node.tick(0)
    assert node.is_leader
    [answer] = node.receive(2, R.FetchSnapshotRequest(2, node.epoch, (6, 2), 4), 0)
    assert (answer.message.error_code, answer.message.size, answer.message.data) == (0, 6, [(1, 4), (2, 0)])
    [gone] = node.receive(2, R.FetchSnapshotRequest(2, node.epoch, (5, 2), 0), 0)
    assert gone.message.error_code == ErrorCode.SNAPSHOT_NOT_FOUND
    [far] = node.receive(2, R.FetchSnapshotRequest(2, node.epoch, (6, 2), 7), 0)
    assert far.message.error_code == ErrorCode.POSITION_OUT_OF_RANGE
    [fenced] = node.receive(2, R.FetchSnapshotRequest(2, node.epoch - 1, (6, 2), 0), 0)
    assert fenced.message.error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_an_observer_finds_the_leader_through_any_voter():
    observer = RaftNode(9, [1, 2, 3], MemoryLog(), 0)
    [ask] = observer.tick(0)
    assert isinstance(ask.message, FetchRequest) and ask.destination in (1, 2, 3)
    follower = RaftNode(ask.destination, [1, 2, 3], MemoryLog(), 0, election=ElectionState(4, 3))
    [answer] = follower.receive(9, ask.message, 0)
    assert (answer.message.error_code, answer.message.leader_id) == (ErrorCode.FENCED_LEADER_EPOCH, 3)
    [fetch] = observer.receive(ask.destination, answer.message, 0)
    assert observer.state.kind is F and observer.leader_id == 3 and fetch.destination == 3
    assert observer.tick(10**9) != [] and observer.state.kind is F     # an observer never stands for election


# -- KIP-853: voter changes ----------------------------------------------------------------------

def _caught_up(sim: Sim, leader: RaftNode, ids) -> bool:
    return all(sim.nodes[i].log.end_offset == leader.log.end_offset and i in leader.state.observer_caught_up
               for i in ids)


def _commit(sim: Sim, leader: RaftNode, offset: int) -> None:
    """Until ``offset`` is committed and every live node holds the leader's log."""
    sim.run(lambda: leader.high_watermark > offset and all(
        n.log.end_offset == leader.log.end_offset for n in sim.nodes.values() if n is not None))


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_a_one_voter_quorum_grows_to_three_one_voter_at_a_time_and_shrinks(seed):
    """AddVoterHandler / RemoveVoterHandler: each change is a VotersRecord counted at once,
    committed by the new set's majority; a second change waits for the first to commit."""
    sim = Sim(3, seed=seed, voters=[1], bootstrap={1: R.Voter(1)})
    sim.run(lambda: sim.leader() is not None and sim.leader().high_watermark > 0)
    leader = sim.leader()
    assert leader.node_id == 1 and [sim.nodes[i].is_voter for i in (2, 3)] == [False, False]
    # the bootstrap voters go into the log with the first LeaderChange (appendStartOfEpochControlRecords)
    assert leader.log.entries[:2] == [(1, ("LeaderChange", 1)), (1, ("Voters", {1: R.Voter(1)}))]
    sim.run(lambda: _caught_up(sim, leader, (2, 3)))

    error, message, offset = leader.add_voter(R.Voter(2), sim.now)
    assert (error, message) == (0, None) and leader.voters == [1, 2]
    assert leader.log.entries[-1] == (leader.epoch, ("Voters", {1: R.Voter(1), 2: R.Voter(2)}))
    # one change at a time: the first is not committed yet
    assert leader.add_voter(R.Voter(3), sim.now) == (
        ErrorCode.REQUEST_TIMED_OUT, "Request timed out waiting for leader to handle previous add voter request", -1)
    # the new set's majority (both) commits it: node 2 fetched it and counts
    _commit(sim, leader, offset)
    assert sim.nodes[2].voters == [1, 2] and sim.nodes[2].is_voter and sim.nodes[3].voters == [1, 2]
    assert leader.state.voter_change is None and 2 in leader.state.end_offsets and 2 not in leader.state.observers

    error, _, offset = leader.add_voter(R.Voter(3), sim.now)
    assert error == 0 and leader.voters == [1, 2, 3]
    _commit(sim, leader, offset)
    assert all(sim.nodes[i].voters == [1, 2, 3] for i in (1, 2, 3))
    error, message, _ = leader.add_voter(R.Voter(3), sim.now)
    assert error == ErrorCode.DUPLICATE_VOTER and message.startswith(
        "The voter id for ReplicaKey(id=3, directoryId=Optional[AAAAAAAAAAAAAAAAAAAAAA]) is already part of")
    # the metadata still commits, on a majority of three
    offset = sim.propose()
    _commit(sim, leader, offset)

    # shrink: a wrong directory id is not the voter; the leader removing itself resigns
    # once the record is committed and one of the two left leads
    other = uuid.UUID(int=7)
    error, message, _ = leader.remove_voter(3, other, sim.now)
    assert error == ErrorCode.VOTER_NOT_FOUND and message.startswith("Cannot remove voter ReplicaKey(id=3")
    error, _, offset = leader.remove_voter(1, uuid.UUID(int=0), sim.now)
    assert error == 0 and leader.voters == [2, 3] and not leader.is_voter and leader.is_leader
    # a removal pending: another removal waits for it; an add fails on the uncommitted record
    assert leader.remove_voter(2, uuid.UUID(int=0), sim.now)[:2] == (
        ErrorCode.REQUEST_TIMED_OUT, "Request timed out waiting for leader to handle previous add or remove voter request")
    assert leader.add_voter(R.Voter(1), sim.now)[1].startswith(
        "Request timed out waiting for voters to commit the latest voter change at Optional[")
    sim.run(lambda: sim.leader() is not None and sim.leader().node_id in (2, 3))
    assert all(sim.logs[i].voter_set()[1].keys() == {2, 3} for i in (2, 3))
    second = sim.leader()
    sim.run(lambda: second.high_watermark > offset)        # its own epoch's LeaderChange commits it
    offset = sim.propose()
    sim.run(lambda: second.high_watermark > offset and sim.nodes[1].log.end_offset > offset)
    # node 1 is an observer now: it follows and never stands for election
    assert sim.nodes[1].voters == [2, 3] and sim.nodes[1].state.kind is F
    sim.nodes[1].tick(sim.now + 10**6)
    assert sim.nodes[1].state.kind is F


def test_voter_changes_are_refused_as_kafka_refuses_them():
    # kraft.version 0 (static voters)
    sim = Sim(2, seed=1, voters=[1])
    sim.run(lambda: sim.leader() is not None and sim.leader().high_watermark > 0)
    leader = sim.leader()
    assert leader.add_voter(R.Voter(2), sim.now) == (
        ErrorCode.UNSUPPORTED_VERSION, "Cluster doesn't support adding voter because the kraft.version feature is 0",
        -1)
    assert leader.remove_voter(1, uuid.UUID(int=0), sim.now)[0] == ErrorCode.UNSUPPORTED_VERSION

    sim = Sim(2, seed=1, voters=[1], bootstrap={1: R.Voter(1)})
    sim.run(lambda: sim.leader() is not None)
    leader = sim.leader()
    # an observer that never fetched is not caught up
    error, message, _ = leader.add_voter(R.Voter(2), sim.now)
    assert (error, message) == (ErrorCode.REQUEST_TIMED_OUT, "Aborted add voter operation for ReplicaKey(id=2, "
                                "directoryId=Optional[AAAAAAAAAAAAAAAAAAAAAA]) since it is lagging behind")
    assert leader.voters == [1] and leader.log.voter_set() == (1, {1: R.Voter(1)})
    # the last voter stays
    assert leader.remove_voter(1, uuid.UUID(int=0), sim.now)[0] == ErrorCode.INVALID_REQUEST
    # only the leader changes voters
    assert sim.nodes[2].add_voter(R.Voter(2), sim.now)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_leader_without_a_high_watermark_or_with_an_uncommitted_voters_record_times_out():
    log = MemoryLog()
    log.kraft_version = 1
    log.append_voters({1: R.Voter(1), 2: R.Voter(2), 3: R.Voter(3)}, 0)
    leader = RaftNode(1, [1], log, 0)
    assert leader.voters == [1, 2, 3]           # the log's VotersRecord, not the static voters
    leader.state = R.Candidate(1, 10**9, {1, 2})
    leader._maybe_elected(0)
    assert leader.add_voter(R.Voter(4), 0) == (
        ErrorCode.REQUEST_TIMED_OUT,
        "Request timed out waiting for leader to establish HWM and fence previous voter changes", -1)
    leader.receive(2, FetchRequest(2, 1, 2, 1), 0)
    assert leader.high_watermark == 2
    # a VotersRecord at or past the high watermark is not committed
    log.append_voters({1: R.Voter(1), 2: R.Voter(2)}, 1)
    leader._refresh_voters(0)
    assert leader.remove_voter(2, uuid.UUID(int=0), 0) == (
        ErrorCode.REQUEST_TIMED_OUT,
        "Request timed out waiting for voters to commit the latest voter change at Optional[2] with HWM 2", -1)


def test_a_follower_truncating_an_uncommitted_voters_record_goes_back_to_the_voters_before():
    log = MemoryLog()
    log.kraft_version = 1
    log.append_voters({1: R.Voter(1), 2: R.Voter(2), 3: R.Voter(3)}, 0)
    log.append_voters({1: R.Voter(1), 2: R.Voter(2)}, 1)       # from a deposed leader, never committed
    node = RaftNode(3, [1], log, 0, election=ElectionState(2, 2))
    assert node.voters == [1, 2] and not node.is_voter
    [fetch] = node.tick(0)
    assert fetch.message == FetchRequest(3, 2, 2, 1)
    node.receive(2, R.FetchResponse(0, 2, 2, 1, 2, diverging_epoch=(0, 1)), 0)
    assert log.entries == [(0, ("Voters", {1: R.Voter(1), 2: R.Voter(2), 3: R.Voter(3)}))]
    assert node.voters == [1, 2, 3] and node.is_voter
