"""A controller's seat in the KRaft quorum: raft.py's RaftNode driven over the
metadata log, the ``quorum-state`` file and the voters' controller listeners
(Kafka's KafkaRaftClientDriver, KafkaNetworkChannel, KafkaMetadataLog,
FileQuorumStateStore).

* ``MetadataLog`` is raft.RaftLog over ``<data>/__cluster_metadata-0``: batches
  appended whole (a controller decision is one batch), the leader epoch of each
  kept in a LeaderEpochCache rebuilt from the batches at start, every append
  flushed before Raft counts it.
* ``Quorum`` persists the election state before each step's messages go out,
  sends them on one Channel per voter (a response is fed back to the node), and
  answers the voters' and brokers' Vote, BeginQuorumEpoch, EndQuorumEpoch and
  Fetch on ``__cluster_metadata`` arriving at the controller listener. An empty
  Fetch answer from the leader waits for an append (long poll) as Kafka parks it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import uuid
from pathlib import Path
from typing import Any, Callable

from kproto.common import CLUSTER_METADATA_TOPIC_NAME, now_ms
from kproto.errors import ErrorCode
from kproto.log import UnifiedLog
from kproto.log.validator import AppendOrigin
from kproto.topic_config import LogConfig
from kproto.records import RecordBatch, iter_batches
from kproto.schemas import protocol as P
from kproto.server.cluster import image as I
from kproto.server.cluster import raft as R
from kproto.server.cluster import snapshot as SN
from kproto.server.cluster.channel import Channel
from kproto.server.cluster.replica import LeaderEpochCache

log = logging.getLogger("kproto.server.quorum")

__all__ = ["MetadataLog", "Quorum", "QUORUM_STATE_FILE", "leader_change_batch", "RAFT_FETCH_VERSION",
           "KRAFT_VERSIONS", "voters_record", "voters_from_record", "write_bootstrap_checkpoint",
           "RAFT_VOTE_VERSION"]

QUORUM_STATE_FILE = "quorum-state"
#: Fetch versions with last_fetched_epoch, diverging_epoch and current_leader (KIP-595)
RAFT_FETCH_VERSION = 12
#: Vote with pre_vote (KIP-996); the controller listener answers v0 to it
RAFT_VOTE_VERSION = 2
_LEADER_CHANGE = 2      # ControlRecordType.LEADER_CHANGE


def leader_change_batch(epoch: int, leader_id: int, voters: list[int], extra: list[tuple[int, dict]] = ()) -> bytes:
    """The control batch opening a leader's epoch (MemoryRecords.withLeaderChangeMessage)."""
    return SN.control_batch([(_LEADER_CHANGE, {
        "leader_id": leader_id, "voters": [{"voter_id": v} for v in voters],
        "granting_voters": [{"voter_id": v} for v in voters]}), *extra], 0, epoch)


#: the kraft.version range kproto's controllers support (VotersRecord's KRaftVersionFeature)
KRAFT_VERSIONS = (0, 1)


def voters_record(voters: dict[int, R.Voter]) -> dict:
    """VotersRecord's fields (VoterSet.toVotersRecord), the voters by id."""
    return {"voters": [{"voter_id": v.id, "voter_directory_id": v.directory_id,
                        "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in v.endpoints],
                        "k_raft_version_feature": {"min_supported_version": KRAFT_VERSIONS[0],
                                                   "max_supported_version": KRAFT_VERSIONS[1]}}
                       for _, v in sorted(voters.items())]}


def write_bootstrap_checkpoint(log_dir: Path, voters: dict[int, R.Voter]) -> Path:
    """The ``00000000000000000000-0000000000.checkpoint`` ``kafka-storage.sh format
    --standalone`` / ``--initial-controllers`` writes: kraft.version 1 and the initial voters
    (StorageTool / Formatter.writeBoostrapSnapshot)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return SN.write_snapshot(log_dir, I.MetadataImage(), SN.SnapshotId(0, 0), -1, [
        (SN.KRAFT_VERSION, {"k_raft_version": 1}), (SN.KRAFT_VOTERS, voters_record(voters))])


def voters_from_record(fields: Any) -> dict[int, R.Voter]:
    return {v.voter_id: R.Voter(v.voter_id, v.voter_directory_id,
                                tuple((e.name, e.host, e.port) for e in v.endpoints)) for v in fields.voters}


class MetadataLog:
    """raft.RaftLog over the metadata partition's UnifiedLog; records are batch bytes; the
    snapshots are the ``.checkpoint`` files beside its segments (KafkaMetadataLog)."""

    def __init__(self, path: Path, segment_bytes: int | None = None) -> None:
        self.dir = path
        #: (offset, level) of each KRaftVersionRecord and (offset, voters) of each VotersRecord,
        #: from the latest snapshot (at its end offset - 1) and the log (LogHistory in Kafka's
        #: KRaftControlRecordStateMachine)
        self.kraft_versions: list[tuple[int, int]] = []
        self.voter_sets: list[tuple[int, dict[int, R.Voter]]] = []
        self._control_from = 0
        self.log = UnifiedLog.open(path, None if segment_bytes is None else LogConfig(segment_bytes=segment_bytes))
        # the log starts at the oldest snapshot (KafkaMetadataLog.apply: what was below it
        # may still be in a segment that was not wholly deleted)
        for part in path.glob("*" + SN.PART_SUFFIX):     # a copy or a write a crash cut short
            part.unlink()
        found = SN.snapshots(path)
        if found and self.log.log_start_offset < found[0].end_offset <= self.log.log_end_offset:
            self.log.update_high_watermark(found[0].end_offset)
            self.log.maybe_increment_log_start_offset(found[0].end_offset)
        self.epochs = LeaderEpochCache()
        self._note_snapshot()
        offset = self.log.log_start_offset
        while offset < self.log.log_end_offset:
            found = self.log.read(offset, 1 << 20)
            if not found.length:
                break
            for batch in iter_batches(found.read(), verify_crc=False):
                self._note(batch)
                offset = batch.last_offset + 1

    def _note(self, batch: Any) -> None:
        if isinstance(batch, RecordBatch) and batch.partition_leader_epoch >= 0:
            self.epochs.assign(batch.partition_leader_epoch, batch.base_offset)
        self._note_control(SN.batch_control_records(batch))

    def _note_control(self, records: list[tuple[int, int, Any]], at: int | None = None) -> None:
        for offset, kind, fields in records:
            if at is None and offset < self._control_from:
                continue        # the latest snapshot holds it already
            offset = offset if at is None else at
            if kind == SN.KRAFT_VERSION:
                self.kraft_versions.append((offset, fields.k_raft_version))
            else:
                self.voter_sets.append((offset, voters_from_record(fields)))

    def _note_snapshot(self) -> None:
        """The latest snapshot's control records count at its end offset - 1."""
        self.kraft_versions, self.voter_sets = [], []
        latest = SN.latest_snapshot(self.dir)
        self._control_from = 0 if latest is None else latest.end_offset
        if latest is not None:
            data = (self.dir / SN.snapshot_file_name(latest)).read_bytes()
            self._note_control(SN.control_records(data), at=latest.end_offset - 1)

    @property
    def kraft_version(self) -> int:
        return self.kraft_versions[-1][1] if self.kraft_versions else 0

    def voter_set(self) -> tuple[int, dict[int, R.Voter]] | None:
        return self.voter_sets[-1] if self.voter_sets else None

    def control_records_at(self, end_offset: int) -> list[tuple[int, dict]]:
        """The KRaftVersion and Voters records a snapshot ending at ``end_offset`` holds: the
        latest of each below it (RecordsSnapshotWriter writes them with kraft.version 1)."""
        levels = [level for offset, level in self.kraft_versions if offset < end_offset]
        voters = [v for offset, v in self.voter_sets if offset < end_offset]
        if not levels or levels[-1] < 1 or not voters:
            return []
        return [(SN.KRAFT_VERSION, {"k_raft_version": levels[-1]}), (SN.KRAFT_VOTERS, voters_record(voters[-1]))]

    def append_voters(self, voters: dict[int, R.Voter], epoch: int) -> int:
        return self._append(SN.control_batch([(SN.KRAFT_VOTERS, voters_record(voters))], 0, epoch, now_ms()),
                            AppendOrigin.COORDINATOR)

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def last_fetched_epoch(self) -> int:
        if self.epochs.latest_epoch < 0:        # nothing after the snapshot yet
            latest = self.latest_snapshot_id()
            return latest[1] if latest is not None and self.log_start_offset else 0
        return self.epochs.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        found = self.epochs.end_offset_for(epoch, self.end_offset)
        if found.end_offset < 0 or (found.leader_epoch < 0 and self.log_start_offset):
            latest = self.latest_snapshot_id()
            if latest is not None and self.log_start_offset and latest[1] <= epoch:
                return latest[1], latest[0]     # the epochs the snapshot holds end at its end
            return 0, 0
        return found.leader_epoch, found.end_offset

    # -- snapshots ---------------------------------------------------------------------------

    def latest_snapshot_id(self) -> tuple[int, int] | None:
        latest = SN.latest_snapshot(self.dir)
        return None if latest is None else (latest.end_offset, latest.epoch)

    def read_snapshot(self, snapshot_id: tuple[int, int], position: int,
                      max_bytes: int = 1 << 20) -> tuple[int, bytes] | None:
        path = self.dir / SN.snapshot_file_name(SN.SnapshotId(*snapshot_id))
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(position, 0))
                return size, f.read(max_bytes)
        except FileNotFoundError:
            return None

    def write_snapshot_chunk(self, snapshot_id: tuple[int, int], position: int, data: bytes) -> None:
        """FileRawSnapshotWriter.append into ``.checkpoint.part`` (a new copy from position 0)."""
        part = self.dir / (SN.snapshot_file_name(SN.SnapshotId(*snapshot_id))[:-len(SN.SUFFIX)] + SN.PART_SUFFIX)
        with open(part, "r+b" if position else "wb") as f:
            f.seek(position)
            f.write(data)
            f.truncate()

    def install_snapshot(self, snapshot_id: tuple[int, int]) -> None:
        """Freeze the copied snapshot (a bad one is refused before it replaces anything),
        then start the log at its end (KafkaRaftClient: log.truncateToLatestSnapshot)."""
        sid = SN.SnapshotId(*snapshot_id)
        path = self.dir / SN.snapshot_file_name(sid)
        part = path.with_name(path.name[:-len(SN.SUFFIX)] + SN.PART_SUFFIX)
        SN.read_snapshot(part.read_bytes(), sid)
        with open(part, "rb") as f:
            os.fsync(f.fileno())
        os.replace(part, path)
        self.log.truncate_fully_and_start_at(sid.end_offset)
        self.epochs = LeaderEpochCache()
        self._note_snapshot()
        log.info("installed the leader's metadata snapshot %s", path.name)

    def _append(self, data: bytes, origin: AppendOrigin) -> int:
        info = self.log.append(data, origin=origin, assign_offsets=origin is not AppendOrigin.REPLICATION)
        self.log.flush()
        for batch in iter_batches(self.log.read(info.first_offset, 1 << 30).read(), verify_crc=False):
            self._note(batch)
        return info.first_offset

    def append_as_leader(self, records: bytes, epoch: int) -> int:
        return self._append(records, AppendOrigin.COORDINATOR)

    def append_leader_change(self, epoch: int, leader_id: int, voters: list[int],
                             voter_set: dict[int, R.Voter] | None = None) -> int:
        extra = [] if voter_set is None else [(SN.KRAFT_VERSION, {"k_raft_version": self.kraft_version}),
                                              (SN.KRAFT_VOTERS, voters_record(voter_set))]
        return self._append(leader_change_batch(epoch, leader_id, voters, extra), AppendOrigin.COORDINATOR)

    def append_as_follower(self, records: bytes) -> None:
        if records:
            self._append(records, AppendOrigin.REPLICATION)

    def read(self, offset: int, max_bytes: int = 1 << 20) -> bytes:
        found = self.log.read(offset, max_bytes)
        return found.read() if found.length else b""

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)
        self.epochs.truncate_from_end(offset)
        self.kraft_versions = [e for e in self.kraft_versions if e[0] < offset]
        self.voter_sets = [e for e in self.voter_sets if e[0] < offset]

    def update_high_watermark(self, hw: int) -> None:
        if hw > self.log.high_watermark:
            self.log.update_high_watermark(hw)


def read_quorum_state(path: Path) -> R.ElectionState | None:
    try:
        return R.parse_quorum_state(path.read_text())
    except FileNotFoundError:
        return None


def write_quorum_state(path: Path, state: R.ElectionState, voters: list[int]) -> None:
    """FileQuorumStateStore.writeElectionStateToFile: a temp file, synced, moved in place."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(R.quorum_state_json(state, voters))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Quorum:
    """This controller's RaftNode, its timers, its peers and its persisted state."""

    def __init__(self, data_dir: Path, node_id: int, voters: dict[int, tuple[str, int]],
                 config: R.RaftConfig = R.RaftConfig(), *, segment_bytes: int | None = None) -> None:
        self.node_id = node_id
        self.addresses = dict(voters)
        self.log = MetadataLog(data_dir / "__cluster_metadata-0", segment_bytes)
        self.state_path = data_dir / "__cluster_metadata-0" / QUORUM_STATE_FILE
        stored = read_quorum_state(self.state_path)
        self._persisted = stored
        self.node = R.RaftNode(node_id, sorted(voters), self.log, now_ms(), election=stored, config=config,
                               rng=random.Random().random)
        self._channels: dict[tuple[str, int], Channel] = {}
        #: the bootstrap servers (ids < -1: controller.quorum.bootstrap.servers), asked in turn
        #: for a leader whose endpoint this node does not know yet
        self._bootstrap = [a for v, a in sorted(voters.items(), reverse=True) if v < R.NO_ID]
        self._turn = 0
        self._in_flight: set[tuple[int, type]] = set()
        self._tasks: set[asyncio.Task] = set()
        self._changed = asyncio.Event()
        self._view: tuple | None = None
        self._ticker: asyncio.Task | None = None
        #: called after every step (the controller follows leadership and the HW)
        self.on_step: Callable[[], None] = lambda: None
        #: replica -> when it last fetched, and when it last fetched up to the log end
        #: (DescribeQuorum's last_fetch_timestamp / last_caught_up_timestamp)
        self.last_fetch: dict[int, int] = {}
        self.last_caught_up: dict[int, int] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._ticker = asyncio.create_task(self._tick_loop())

    async def close(self) -> None:
        tasks = [t for t in (self._ticker, *self._tasks) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for c in self._channels.values():
            c.close()
        self.log.log.close()

    async def resign(self) -> None:
        """A leader shutting down tells the voters (EndQuorumEpoch), best effort."""
        sends = self.node.resign(now_ms())
        self._emit(sends)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1)

    def poll(self) -> None:
        """Run the node's timers now (a single voter elects itself on its first poll)."""
        self._emit(self.node.tick(now_ms()))

    async def _tick_loop(self) -> None:
        while True:
            self.poll()
            await asyncio.sleep(0.05)

    # -- steps -------------------------------------------------------------------------------

    def _emit(self, sends: list[R.Send]) -> None:
        election = self.node.election
        if election != self._persisted:      # before anything of this step leaves the node
            write_quorum_state(self.state_path, election, self.node.voters)
            self._persisted = election
        self.log.update_high_watermark(self.node.high_watermark)
        for s in sends:
            key = (s.destination, type(s.message))
            if key in self._in_flight:
                continue            # one request of a kind per peer (Kafka's RequestManager)
            self._in_flight.add(key)
            task = asyncio.create_task(self._send(s.destination, s.message, key))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        # waiters (long-polled fetches, commits) wake on a change only: a parked fetch that
        # re-checks emits a step too, and two of them must not wake each other forever
        view = (election, self.node.state.kind, self.node.high_watermark, self.log.end_offset)
        if view != self._view:
            self._view = view
            self._changed.set()
            self._changed = asyncio.Event()
        self.on_step()

    def propose(self, batch: bytes) -> int:
        offset = self.node.propose(batch, now_ms())
        self._emit([])
        return offset

    async def wait_for_change(self, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(self._changed.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass

    async def wait_committed(self, offset: int, timeout_s: float) -> bool:
        """Until the high watermark passes ``offset`` while this node leads."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while self.node.high_watermark <= offset:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0 or not self.node.is_leader:
                return False
            await self.wait_for_change(left)
        return True

    def address(self, replica: int) -> tuple[str, int] | None:
        """A voter's controller listener: its VotersRecord's first endpoint (kraft.version 1),
        else controller.quorum.voters' or where it answered as the leader; None if unknown."""
        node = self.node.voter_nodes.get(replica)
        if node is not None and node.endpoints:
            return node.endpoints[0][1], node.endpoints[0][2]
        return self.addresses.get(replica)

    def _channel(self, address: tuple[str, int]) -> Channel:
        if address not in self._channels:
            self._channels[address] = Channel(*address, f"raft-{self.node_id}-to-{address[0]}:{address[1]}",
                                              timeout=5)
        return self._channels[address]

    async def _send(self, voter: int, message: Any, key: tuple) -> None:
        try:
            api, version, body = to_wire(message, self.node_id)
            try:
                address = self.address(voter)
                if address is None and self._bootstrap:
                    # a leader named by an answer, its endpoint not known yet: the bootstrap
                    # servers in turn, until the leader itself answers
                    self._turn += 1
                    address = self._bootstrap[self._turn % len(self._bootstrap)]
                if address is None:
                    return
                response = await self._channel(address).request(api, version, body)
            except ConnectionError:
                await asyncio.sleep(0.1)
                return
            answer = from_wire(message, response)
            if isinstance(answer, R.FetchResponse) and not answer.error_code and answer.leader_id == voter \
                    and self.address(voter) is None:
                self.addresses[voter] = address     # the leader answered there
        finally:
            self._in_flight.discard(key)
        if answer is not None:
            self._emit(self.node.receive(voter, answer, now_ms()))

    # -- voter changes (KIP-853) ---------------------------------------------------------------

    async def change_voters(self, api_key: int, body: Any) -> dict:
        """AddRaftVoter / RemoveRaftVoter on the controller listener (KafkaRaftClient.handleAddVoterRequest,
        handleRemoveVoterRequest): the leader appends the VotersRecord and answers once it is
        committed (AddRaftVoter v1 ``ack_when_committed`` false: once appended), else
        REQUEST_TIMED_OUT after the request's timeout."""
        def answer(error: int, message: str | None = None) -> dict:
            return {"throttle_time_ms": 0, "error_code": error, "error_message": message}

        if not self.node.is_leader:
            return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        now = now_ms()
        if api_key == P.add_raft_voter.API.key:
            if body.voter_directory_id == uuid.UUID(int=0):
                return answer(ErrorCode.INVALID_REQUEST, "Invalid voter directory id")
            endpoints = tuple((ln.name, ln.host, ln.port) for ln in body.listeners)
            if not endpoints:
                return answer(ErrorCode.INVALID_REQUEST, "Invalid listeners: none")
            error, message, offset = self.node.add_voter(R.Voter(body.voter_id, body.voter_directory_id, endpoints),
                                                         now)
            wait = getattr(body, "ack_when_committed", True)
            timeout_ms = body.timeout_ms
        else:
            error, message, offset = self.node.remove_voter(body.voter_id, body.voter_directory_id, now)
            wait, timeout_ms = True, self.node.config.request_timeout_ms
        self._emit([])
        if error:
            return answer(error, message)
        if wait and not await self.wait_committed(offset, max(timeout_ms, 0) / 1000):
            return answer(ErrorCode.REQUEST_TIMED_OUT)
        return answer(0)

    # -- requests from the controller listener ------------------------------------------------

    async def handle(self, api_key: int, body: Any) -> dict:
        if len(body.topics) != 1 or len(body.topics[0].partitions) != 1:
            # KafkaRaftClient (handleVoteRequest, handleFetchRequest...): one raft partition,
            # a request naming none or several is INVALID_REQUEST
            return {"error_code": ErrorCode.INVALID_REQUEST}
        if api_key == P.fetch.API.key:
            return await self._fetch(body)
        if api_key == P.fetch_snapshot.API.key:
            return self._fetch_snapshot(body)
        message = request_from_wire(api_key, body)
        source = message.candidate_id if isinstance(message, R.VoteRequest) else message.leader_id
        sends = self.node.receive(source, message, now_ms())
        answer = [s.message for s in sends if s.destination == source and type(s.message).__name__.endswith("Response")]
        self._emit([s for s in sends if s.message not in answer])
        return response_to_wire(answer[-1], self.node)

    async def _fetch(self, body: Any) -> dict:
        t = body.topics[0]
        p = t.partitions[0]
        request = R.FetchRequest(body.replica_id, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(body.max_wait_ms, 0) / 1000
        while True:
            [answer] = [s.message for s in self.node.receive(body.replica_id, request, now_ms())]
            if self.node.is_leader and not answer.error_code:
                self.last_fetch[body.replica_id] = now_ms()
                if p.fetch_offset >= self.log.end_offset:
                    self.last_caught_up[body.replica_id] = now_ms()
            self._emit([])
            left = deadline - loop.time()
            # an observer applies committed records only: it waits for the high watermark
            # to pass its fetch offset, not for any append
            useful = answer.records and (body.replica_id in self.node.voters
                                         or answer.high_watermark > p.fetch_offset)
            if answer.error_code or answer.diverging_epoch or answer.snapshot_id or useful or left <= 0:
                break
            await self.wait_for_change(left)
        leader = self.node.leader_id
        out = {"partition_index": 0, "error_code": answer.error_code, "high_watermark": answer.high_watermark,
               "last_stable_offset": answer.high_watermark, "log_start_offset": self.log.log.log_start_offset,
               "aborted_transactions": None, "preferred_read_replica": -1, "records": answer.records or b"",
               "current_leader": {"leader_id": leader, "leader_epoch": self.node.epoch}}
        if answer.diverging_epoch is not None:
            out["diverging_epoch"] = {"epoch": answer.diverging_epoch[0], "end_offset": answer.diverging_epoch[1]}
        if answer.snapshot_id is not None:
            out["snapshot_id"] = {"end_offset": answer.snapshot_id[0], "epoch": answer.snapshot_id[1]}
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
                "responses": [{"topic": t.topic, "partitions": [out]}]}


    def _fetch_snapshot(self, body: Any) -> dict:
        """FetchSnapshot (59) on ``__cluster_metadata`` (KafkaRaftClient.handleFetchSnapshotRequest):
        another partition than ``__cluster_metadata-0`` is UNKNOWN_TOPIC_OR_PARTITION."""
        t, p = body.topics[0], body.topics[0].partitions[0]
        if (t.name, p.partition) != (CLUSTER_METADATA_TOPIC_NAME, 0):
            return {"throttle_time_ms": 0, "error_code": 0, "topics": [{"name": t.name, "partitions": [{
                "index": p.partition, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "snapshot_id": {"end_offset": -1, "epoch": -1}, "size": 0, "position": 0,
                "unaligned_records": b""}]}]}
        request = R.FetchSnapshotRequest(body.replica_id, p.current_leader_epoch,
                                         (p.snapshot_id.end_offset, p.snapshot_id.epoch), p.position)
        [answer] = [s.message for s in self.node.receive(body.replica_id, request, now_ms())]
        self._emit([])
        return {"throttle_time_ms": 0, "error_code": 0, "topics": [{"name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{
            "index": 0, "error_code": answer.error_code,
            "snapshot_id": {"end_offset": answer.snapshot_id[0], "epoch": answer.snapshot_id[1]},
            "current_leader": {"leader_id": answer.leader_id, "leader_epoch": answer.leader_epoch},
            "size": answer.size, "position": answer.position, "unaligned_records": answer.data}]}]}

    def describe(self) -> dict:
        """DescribeQuorum's partition answer (LeaderState.describeQuorum): the leader's view
        of every voter's and observer's log end offset; NOT_LEADER_OR_FOLLOWER elsewhere."""
        s = self.node.state
        out = {"partition_index": 0, "error_code": 0, "error_message": None, "leader_id": self.node.leader_id,
               "leader_epoch": self.node.epoch, "high_watermark": self.node.high_watermark,
               "current_voters": [], "observers": []}
        if not isinstance(s, R.Leader):
            out["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            return out
        now = now_ms()
        self.last_fetch[self.node_id] = self.last_caught_up[self.node_id] = now     # the leader itself

        def replica(r: int, end: int) -> dict:
            node = self.node.voter_nodes.get(r)
            directory = node.directory_id if node is not None else uuid.UUID(int=0)
            return {"replica_id": r, "replica_directory_id": directory, "log_end_offset": end,
                    "last_fetch_timestamp": self.last_fetch.get(r, -1),
                    "last_caught_up_timestamp": self.last_caught_up.get(r, -1)}

        out["current_voters"] = [replica(v, s.end_offsets.get(v, -1)) for v in self.node.voters]
        out["observers"] = [replica(o, end) for o, end in sorted(s.observers.items())]
        return out


# -- the wire (Vote 52, BeginQuorumEpoch 53, EndQuorumEpoch 54, Fetch 1 on __cluster_metadata) ------

def _topic(partition: dict) -> list[dict]:
    return [{"topic_name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{"partition_index": 0, **partition}]}]


def to_wire(m: Any, node_id: int) -> tuple[int, int, dict]:
    if isinstance(m, R.VoteRequest):
        return P.vote.API.key, RAFT_VOTE_VERSION, {"cluster_id": None, "topics": _topic({
            "replica_epoch": m.candidate_epoch, "replica_id": m.candidate_id,
            "last_offset_epoch": m.last_offset_epoch, "last_offset": m.last_offset, "pre_vote": m.pre_vote})}
    if isinstance(m, R.BeginQuorumEpochRequest):
        return P.begin_quorum_epoch.API.key, 0, {"cluster_id": None, "topics": _topic({
            "leader_id": m.leader_id, "leader_epoch": m.leader_epoch})}
    if isinstance(m, R.EndQuorumEpochRequest):
        return P.end_quorum_epoch.API.key, 0, {"cluster_id": None, "topics": _topic({
            "leader_id": m.leader_id, "leader_epoch": m.leader_epoch,
            "preferred_successors": list(m.preferred_successors)})}
    if isinstance(m, R.FetchRequest):
        return P.fetch.API.key, RAFT_FETCH_VERSION, {
            "replica_id": m.replica_id, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 24,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{
                "partition": 0, "current_leader_epoch": m.current_leader_epoch, "fetch_offset": m.fetch_offset,
                "last_fetched_epoch": m.last_fetched_epoch, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    if isinstance(m, R.FetchSnapshotRequest):
        return P.fetch_snapshot.API.key, 0, {
            "cluster_id": None, "replica_id": m.replica_id, "max_bytes": 1 << 20,
            "topics": [{"name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{
                "partition": 0, "current_leader_epoch": m.current_leader_epoch,
                "snapshot_id": {"end_offset": m.snapshot_id[0], "epoch": m.snapshot_id[1]},
                "position": m.position}]}]}
    raise TypeError(type(m))


def from_wire(request: Any, body: Any) -> Any:
    """The raft response a wire answer to ``request`` stands for."""
    if isinstance(request, R.FetchRequest):
        p = body.responses[0].partitions[0]
        diverging = getattr(p, "diverging_epoch", None)
        leader = getattr(p, "current_leader", None)
        return R.FetchResponse(
            p.error_code, leader.leader_id if leader else R.NO_ID, leader.leader_epoch if leader else -1,
            p.high_watermark, request.fetch_offset,
            (diverging.epoch, diverging.end_offset) if diverging is not None and diverging.epoch >= 0 else None,
            bytes(p.records) if p.records else None, snapshot_id_from_wire(getattr(p, "snapshot_id", None)))
    if isinstance(request, R.FetchSnapshotRequest):
        if body.error_code:
            return None
        p = body.topics[0].partitions[0]
        leader = getattr(p, "current_leader", None)
        return R.FetchSnapshotResponse(
            p.error_code, leader.leader_id if leader else R.NO_ID, leader.leader_epoch if leader else -1,
            request.snapshot_id, p.size, p.position, bytes(p.unaligned_records or b""))
    if isinstance(request, R.VoteRequest) and body.error_code == ErrorCode.UNSUPPORTED_VERSION:
        # the voter refused the Vote version (one without pre_vote, KIP-996): KafkaNetworkChannel
        # hands this top-level error to handleVoteResponse
        return R.VoteResponse(ErrorCode.UNSUPPORTED_VERSION, R.NO_ID, -1, False)
    if body.error_code:
        return None
    p = body.topics[0].partitions[0]
    if isinstance(request, R.VoteRequest):
        return R.VoteResponse(p.error_code, p.leader_id, p.leader_epoch, p.vote_granted)
    cls = R.BeginQuorumEpochResponse if isinstance(request, R.BeginQuorumEpochRequest) else R.EndQuorumEpochResponse
    return cls(p.error_code, p.leader_id, p.leader_epoch)


def snapshot_id_from_wire(sid: Any) -> tuple[int, int] | None:
    """A Fetch answer's snapshot_id; (-1, -1) (its default) is none."""
    return None if sid is None or sid.end_offset < 0 or sid.epoch < 0 else (sid.end_offset, sid.epoch)


def request_from_wire(api_key: int, body: Any) -> Any:
    p = body.topics[0].partitions[0]
    if api_key == P.vote.API.key:
        return R.VoteRequest(p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset,
                             bool(getattr(p, "pre_vote", False)))      # v0-1: a standard vote
    if api_key == P.begin_quorum_epoch.API.key:
        return R.BeginQuorumEpochRequest(p.leader_id, p.leader_epoch)
    return R.EndQuorumEpochRequest(p.leader_id, p.leader_epoch, tuple(p.preferred_successors))


def response_to_wire(m: Any, node: R.RaftNode) -> dict:
    partition = {"error_code": m.error_code, "leader_id": m.leader_id, "leader_epoch": m.leader_epoch}
    if isinstance(m, R.VoteResponse):
        partition["vote_granted"] = m.vote_granted
    return {"error_code": 0, "topics": _topic(partition)}
