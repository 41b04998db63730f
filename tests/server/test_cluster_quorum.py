"""A voter's I/O shell (kproto/server/cluster/quorum.py): Raft's messages through
kproto's wire codecs and back, and the metadata log Raft runs on."""

from __future__ import annotations

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
    node = R.RaftNode(2, [1, 2, 3], None, 0)
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
