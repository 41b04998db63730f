"""Authorization of the transactional APIs (KafkaApis: handleEndTxnRequest,
handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest, handleTxnOffsetCommitRequest,
handleWriteTxnMarkersRequest, handleDescribeProducersRequest,
handleDescribeTransactionsRequest, handleListTransactionsRequest): what a
principal without the right ACL gets, and that denied entries never reach the handler."""

from __future__ import annotations

from construct import Container

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from tests.server.helpers import authorized_call as call

E = ErrorCode


def test_end_txn_needs_write_on_the_transactional_id():
    out, seen = call(P.end_txn, 3, {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "committed": True})
    assert (out, seen) == ({"error_code": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}, [])
    out, seen = call(P.end_txn, 3, {"transactional_id": "t"}, (O.WRITE, R.TRANSACTIONAL_ID, "t"))
    assert out == {"error_code": 0} and len(seen) == 1


def test_add_offsets_needs_the_group_too():
    body = {"transactional_id": "t", "group_id": "g"}
    out, _ = call(P.add_offsets_to_txn, 3, body, (O.WRITE, R.TRANSACTIONAL_ID, "t"))
    assert out == {"error_code": E.GROUP_AUTHORIZATION_FAILED}


def test_add_partitions_denied_topic_leaves_the_others_not_attempted():
    topics = [Container(name="a", partitions=[0, 1]), Container(name="b", partitions=[0])]
    out, seen = call(P.add_partitions_to_txn, 3, {"v3_and_below_transactional_id": "t", "v3_and_below_topics": topics},
                     (O.WRITE, R.TRANSACTIONAL_ID, "t"), (O.WRITE, R.TOPIC, "b"))
    assert seen == []
    assert [(t["name"], [(p["partition_index"], p["partition_error_code"]) for p in t["results_by_partition"]])
            for t in out["results_by_topic_v3_and_below"]] == [
        ("a", [(0, E.TOPIC_AUTHORIZATION_FAILED), (1, E.TOPIC_AUTHORIZATION_FAILED)]),
        ("b", [(0, E.OPERATION_NOT_ATTEMPTED)])]
    out, _ = call(P.add_partitions_to_txn, 4, {"transactions": []})
    assert out == {"error_code": E.CLUSTER_AUTHORIZATION_FAILED, "results_by_transaction": []}


def test_write_txn_markers_is_a_cluster_action():
    markers = [Container(producer_id=5, topics=[Container(name="a", partition_indexes=[2])])]
    out, seen = call(P.write_txn_markers, 1, {"markers": markers})
    assert seen == [] and out == {"markers": [{"producer_id": 5, "topics": [
        {"name": "a", "partitions": [{"partition_index": 2, "error_code": E.CLUSTER_AUTHORIZATION_FAILED}]}]}]}
    out, seen = call(P.write_txn_markers, 1, {"markers": markers}, (O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME))
    assert len(seen) == 1


def test_txn_offset_commit_checks_id_group_and_topics():
    topics = [Container(name="a", partitions=[Container(partition_index=0)]),
              Container(name="b", partitions=[Container(partition_index=3)])]
    body = {"transactional_id": "t", "group_id": "g", "topics": topics}
    out, seen = call(P.txn_offset_commit, 3, dict(body), (O.WRITE, R.TRANSACTIONAL_ID, "t"), (O.READ, R.GROUP, "g"),
                     (O.READ, R.TOPIC, "b"), answer=lambda b: {"topics": [{"name": t.name} for t in b.topics]})
    assert [t.name for t in seen[0].topics] == ["b"]
    assert out["topics"] == [{"name": "b"}, {"name": "a", "partitions": [
        {"partition_index": 0, "error_code": E.TOPIC_AUTHORIZATION_FAILED}]}]
    out, seen = call(P.txn_offset_commit, 3, dict(body), (O.WRITE, R.TRANSACTIONAL_ID, "t"))
    assert seen == [] and {p["error_code"] for t in out["topics"] for p in t["partitions"]} == {
        E.GROUP_AUTHORIZATION_FAILED}


def test_describe_and_list_show_only_what_may_be_described():
    out, seen = call(P.describe_transactions, 0, {"transactional_ids": ["mine", "theirs"]},
                     (O.DESCRIBE, R.TRANSACTIONAL_ID, "mine"),
                     answer=lambda b: {"transaction_states": [{"transactional_id": i, "error_code": 0}
                                                              for i in b.transactional_ids]})
    assert seen[0].transactional_ids == ["mine"]
    assert [(s["transactional_id"], s["error_code"]) for s in out["transaction_states"]] == [
        ("mine", 0), ("theirs", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]
    out, _ = call(P.list_transactions, 1, {}, (O.DESCRIBE, R.TRANSACTIONAL_ID, "mine"),
                  answer=lambda b: {"error_code": 0, "transaction_states": [
                      {"transactional_id": "mine"}, {"transactional_id": "theirs"}]})
    assert out["transaction_states"] == [{"transactional_id": "mine"}]
    out, seen = call(P.describe_producers, 0, {"topics": [Container(name="a", partition_indexes=[0, 1])]},
                     answer=lambda b: {"topics": []})
    assert out["topics"][0]["partitions"][1] == {"partition_index": 1, "error_code": E.TOPIC_AUTHORIZATION_FAILED,
                                                 "error_message": None, "active_producers": []}
