"""A voter's I/O shell (kproto/server/cluster/quorum.py): Raft's messages through
kproto's wire codecs and back, and the metadata log Raft runs on."""

from __future__ import annotations

from types import SimpleNamespace
import socket

import pytest

from kproto import protocol
from kproto.common import CLUSTER_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.framing import frame
from kproto.server.cluster import image as I
from kproto.server.cluster import quorum as Q
from kproto.server.cluster import raft as R
from kproto.records import iter_batches
from kproto.testing import Cluster
from tests.helpers import request_raw


def through_the_wire(request):
    """request -> frame -> the controller's decoding -> raft message again."""
    api, version, body = Q.to_wire(request, 1)
    header, body_decoded = protocol.decode_request(protocol.encode_request(api, version, 5, "raft-1-to-2", body))
    assert (header.request_api_key, header.request_api_version) == (api, version)
    return api, version, body_decoded


@pytest.mark.parametrize("request_, response", [
    (R.VoteRequest(7, 1, 6, 120), R.VoteResponse(0, -1, 7, True)),
    (R.VoteRequest(7, 1, 6, 120, pre_vote=True), R.VoteResponse(0, 2, 7, False)),
    (R.BeginQuorumEpochRequest(1, 7), R.BeginQuorumEpochResponse(0, 1, 7)),
    (R.EndQuorumEpochRequest(1, 7, (3, 2)), R.EndQuorumEpochResponse(0, 1, 7)),
])
def test_quorum_requests_and_answers_survive_the_wire(request_, response):
    api, version, body = through_the_wire(request_)
    assert Q.request_from_wire(api, body) == request_
    node = R.RaftNode(2, [1, 2, 3], SimpleNamespace(voter_set=lambda: None), 0)   # a log without VotersRecord
    frame = protocol.encode_response(api, version, 5, Q.response_to_wire(response, node))
    assert Q.from_wire(request_, protocol.decode_response(api, version, frame)[1]) == response


def test_vote_goes_as_v2_with_pre_vote_and_v0_reads_as_a_standard_vote():
    api, version, body = through_the_wire(R.VoteRequest(7, 1, 6, 120, pre_vote=True))
    assert (version, body.topics[0].partitions[0].pre_vote) == (2, True)
    frame = protocol.encode_request(api, 0, 5, "raft-1-to-2", Q.to_wire(R.VoteRequest(7, 1, 6, 120), 1)[2])
    assert Q.request_from_wire(api, protocol.decode_request(frame)[1]) == R.VoteRequest(7, 1, 6, 120, False)


def test_metadata_log_keeps_epochs_across_a_reopen_and_truncates(tmp_path):
    path = tmp_path / "__cluster_metadata-0"
    log = Q.MetadataLog(path)
    assert (log.end_offset, log.last_fetched_epoch, log.end_offset_for_epoch(3)) == (0, 0, (0, 0))
    assert log.append_leader_change(1, 1, [1, 2, 3]) == 0
    assert log.append_as_leader(I.records_batch([(I.FENCE_BROKER, {"id": 2, "epoch": 5})] * 2, leader_epoch=1), 1) == 1
    assert log.append_leader_change(3, 2, [1, 2, 3]) == 3
    log.log.close()
    again = Q.MetadataLog(path)
    assert (again.end_offset, again.last_fetched_epoch) == (4, 3)
    assert [again.end_offset_for_epoch(e) for e in (1, 2, 3, 9)] == [(1, 3), (1, 3), (3, 4), (3, 4)]
    # a follower's log: the leader's batches appended as they are, offsets and epochs kept
    follower = Q.MetadataLog(tmp_path / "follower" / "__cluster_metadata-0")
    follower.append_as_follower(again.read(0))
    assert follower.read(0) == again.read(0) and follower.end_offset_for_epoch(1) == (1, 3)
    follower.truncate_to(3)
    assert (follower.end_offset, follower.last_fetched_epoch) == (3, 1)
    [batch] = [b for b in iter_batches(again.read(3), verify_crc=True)]
    assert (batch.is_control, batch.partition_leader_epoch) == (True, 3)


def test_quorum_state_file_written_atomically(tmp_path):
    path = tmp_path / Q.QUORUM_STATE_FILE
    assert Q.read_quorum_state(path) is None
    Q.write_quorum_state(path, R.ElectionState(5, -1, 2), [1, 2, 3])
    assert Q.read_quorum_state(path) == R.ElectionState(5, -1, 2)
    assert [p.name for p in tmp_path.iterdir()] == [Q.QUORUM_STATE_FILE]


def test_metadata_log_reads_kip_853_control_records_from_its_bootstrap_checkpoint_log_and_snapshots(tmp_path):
    """KRaftControlRecordStateMachine's view: the bootstrap checkpoint's voters at offset -1,
    the VotersRecords of the log after it, truncation forgetting them, and a snapshot
    carrying the latest KRaftVersion and Voters records in its header batch."""
    import uuid
    from kproto.server.cluster import snapshot as SN
    path = tmp_path / "__cluster_metadata-0"
    one = R.Voter(3000, uuid.UUID(int=1), (("CONTROLLER", "127.0.0.1", 9093),))
    two = R.Voter(3001, uuid.UUID(int=2), (("CONTROLLER", "127.0.0.1", 9094),))
    Q.write_bootstrap_checkpoint(path, {3000: one})
    log = Q.MetadataLog(path)
    assert (log.kraft_version, log.voter_set(), log.end_offset) == (1, (-1, {3000: one}), 0)
    assert log.append_leader_change(1, 3000, [3000], {3000: one}) == 0
    assert log.voter_set() == (2, {3000: one})
    [batch] = list(iter_batches(log.read(0), verify_crc=True))
    assert (batch.is_control, batch.last_offset) == (True, 2)
    assert [(o, k) for o, k, _ in SN.control_records(log.read(0))] == [(1, SN.KRAFT_VERSION), (2, SN.KRAFT_VOTERS)]
    assert log.append_voters({3000: one, 3001: two}, 1) == 3
    log.log.close()
    log = Q.MetadataLog(path)
    assert (log.kraft_version, log.voter_set()) == (1, (3, {3000: one, 3001: two}))
    # a snapshot ending after the second VotersRecord holds it; one before it, the first
    assert log.control_records_at(4)[1] == (SN.KRAFT_VOTERS, Q.voters_record({3000: one, 3001: two}))
    assert log.control_records_at(3)[1] == (SN.KRAFT_VOTERS, Q.voters_record({3000: one}))
    assert log.control_records_at(0) == [(SN.KRAFT_VERSION, {"k_raft_version": 1}),
                                         (SN.KRAFT_VOTERS, Q.voters_record({3000: one}))]
    SN.write_snapshot(path, I.MetadataImage(), SN.SnapshotId(4, 1), -1, log.control_records_at(4))
    log.log.close()
    # the latest snapshot's records count at its end offset - 1; the log's below it are its
    log = Q.MetadataLog(path)
    assert log.voter_set() == (3, {3000: one, 3001: two}) and log.voter_sets == [(3, {3000: one, 3001: two})]
    log.append_voters({3001: two}, 1)
    assert log.voter_set() == (4, {3001: two})
    log.truncate_to(4)
    assert log.voter_set() == (3, {3000: one, 3001: two})
    assert SN.read_snapshot((path / SN.snapshot_file_name(SN.SnapshotId(4, 1))).read_bytes(),
                            SN.SnapshotId(4, 1)).end_offset == 4


def _wire(api: int, version: int, body: dict):
    """A request as the controller listener decodes it."""
    return protocol.decode_request(protocol.encode_request(api, version, 7, "test", body))[1]


def test_add_and_remove_raft_voter_through_the_leaders_quorum(tmp_path):
    """AddRaftVoter / RemoveRaftVoter as the controller listener hands them to the quorum
    (KafkaRaftClient.handleAddVoterRequest / handleRemoveVoterRequest): a 1-voter quorum
    formatted --standalone adds an observer that has caught up, answers once the new
    pair committed the VotersRecord, DescribeQuorum shows both with their directory ids;
    then removes it again. Fetches are driven by the test (no second process)."""
    import asyncio
    import uuid
    from kproto.errors import ErrorCode
    from kproto.schemas import protocol as P
    first = R.Voter(3000, uuid.UUID(int=30), (("CONTROLLER", "127.0.0.1", 1),))
    Q.write_bootstrap_checkpoint(tmp_path / "__cluster_metadata-0", {3000: first})
    new_dir = uuid.UUID(int=31)
    add = {"cluster_id": None, "timeout_ms": 30_000, "voter_id": 3001, "voter_directory_id": new_dir,
           "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 2}], "ack_when_committed": True}

    async def fetch(q: Q.Quorum) -> dict:
        api, version, body = Q.to_wire(R.FetchRequest(3001, q.node.epoch, q.log.end_offset,
                                                      q.log.last_fetched_epoch), 3001)
        return await q.handle(api, _wire(api, version, body))

    async def change(q: Q.Quorum, api: int, version: int, body: dict) -> dict:
        """The request, with node 3001 fetching (as a caught-up replica would) until answered."""
        task = asyncio.create_task(q.change_voters(api, _wire(api, version, body)))
        while not task.done():
            await fetch(q)
            await asyncio.sleep(0)
        return task.result()

    async def run() -> None:
        q = Q.Quorum(tmp_path, 3000, {3000: ("127.0.0.1", 1)})
        try:
            q.poll()
            assert q.node.is_leader and q.node.voters == [3000] and q.log.kraft_version == 1
            await q.wait_committed(0, 30)
            # not caught up yet: never fetched
            answer = await q.change_voters(P.add_raft_voter.API.key, _wire(P.add_raft_voter.API.key, 1, add))
            assert answer["error_code"] == ErrorCode.REQUEST_TIMED_OUT
            assert answer["error_message"].endswith("since it is lagging behind")
            await fetch(q)          # at the log end: caught up
            answer = await change(q, P.add_raft_voter.API.key, 1, add)
            assert answer == {"throttle_time_ms": 0, "error_code": 0, "error_message": None}
            assert q.node.voters == [3000, 3001] and q.log.voter_set()[0] < q.node.high_watermark
            d = q.describe()
            assert [(v["replica_id"], v["replica_directory_id"]) for v in d["current_voters"]] == [
                (3000, first.directory_id), (3001, new_dir)]
            assert q.address(3001) == ("127.0.0.1", 2)
            answer = await change(q, P.add_raft_voter.API.key, 1, add)
            assert answer["error_code"] == ErrorCode.DUPLICATE_VOTER
            remove = {"cluster_id": None, "voter_id": 3001, "voter_directory_id": uuid.UUID(int=99)}
            assert (await change(q, P.remove_raft_voter.API.key, 0, remove))["error_code"] == ErrorCode.VOTER_NOT_FOUND
            answer = await change(q, P.remove_raft_voter.API.key, 0, {**remove, "voter_directory_id": new_dir})
            assert answer["error_code"] == 0 and q.node.voters == [3000]
            assert [o["replica_id"] for o in q.describe()["observers"]] == [3001]
        finally:
            await q.close()

    asyncio.run(run())


def test_malformed_quorum_requests_close_or_refuse_only_themselves(tmp_path):
    """Bad input on the controller listener: FetchSnapshot (and the other raft requests)
    naming no partition or several is INVALID_REQUEST, a partition other than
    __cluster_metadata-0 UNKNOWN_TOPIC_OR_PARTITION (KafkaRaftClient.handleFetchSnapshotRequest);
    a frame cut short or claiming more entries than it carries closes that connection only,
    and a well-formed FetchSnapshot on another connection is answered throughout."""
    with Cluster(brokers=1, data_dir=tmp_path / "c") as c:
        host, port = c.controller_address
        bootstrap = f"{host}:{port}"
        key = protocol.fetch_snapshot.API.key

        def fetch_snapshot(topics: list) -> object:
            return request_raw(bootstrap, key, 0, {"cluster_id": None, "replica_id": 9, "max_bytes": 1 << 20,
                                                   "topics": topics})

        def one(name: str = CLUSTER_METADATA_TOPIC_NAME, partition: int = 0) -> dict:
            return {"name": name, "partitions": [{"partition": partition, "current_leader_epoch": 1,
                                                  "snapshot_id": {"end_offset": 7, "epoch": 1}, "position": 0}]}

        def answered() -> None:       # the listener serves a well-formed request: no such snapshot
            r = fetch_snapshot([one()])
            assert (r.error_code, [(p.index, p.error_code) for t in r.topics for p in t.partitions]) == \
                (0, [(0, ErrorCode.SNAPSHOT_NOT_FOUND)])

        answered()
        for topics in ([], [{"name": CLUSTER_METADATA_TOPIC_NAME, "partitions": []}], [one(), one()]):
            r = fetch_snapshot(topics)
            assert (r.error_code, r.topics) == (ErrorCode.INVALID_REQUEST, []), topics
        for name, partition in (("other", 0), (CLUSTER_METADATA_TOPIC_NAME, 3)):
            r = fetch_snapshot([one(name, partition)])
            assert [(t.name, p.index, p.error_code, p.size, p.unaligned_records) for t in r.topics
                    for p in t.partitions] == [(name, partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0, b"")]
        for api, version in ((protocol.vote, 0), (protocol.begin_quorum_epoch, 0), (protocol.end_quorum_epoch, 0)):
            assert request_raw(bootstrap, api.API.key, version, {"topics": []}).error_code == ErrorCode.INVALID_REQUEST
        whole = protocol.encode_request(key, 0, 1, "raw", {"cluster_id": None, "replica_id": 9, "max_bytes": 1 << 20,
                                                    "topics": [one()]})
        # cut short; then a topics count of 2^31 - 1 with no entries after it (nothing allocated for them)
        count_at = whole.index(CLUSTER_METADATA_TOPIC_NAME.encode()) - 2      # the count, the name's length
        for bad in (whole[:-6], whole[:count_at] + b"\xff\xff\xff\xff\x07"):
            with socket.create_connection((host, port), timeout=30) as s:
                s.sendall(frame(bad))
                assert s.recv(1) == b""             # closed, unanswered
            answered()
        assert "Traceback" not in c.nodes[1].log_text()
