"""A voter's I/O shell (kproto/server/cluster/quorum.py): Raft's messages through
kproto's wire codecs and back, and the metadata log Raft runs on."""

from __future__ import annotations

import pytest

from kproto import protocol
from kproto.server.cluster import image as I
from kproto.server.cluster import quorum as Q
from kproto.server.cluster import raft as R
from kproto.records import iter_batches


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
