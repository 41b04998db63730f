"""The share-group state APIs (83-87) and the share-group offsets APIs (90-92): the
same frames sent to Apache Kafka 4.4's broker and to kproto's, the answers compared
whole (topic ids masked), and the facts that matter pinned on top so the pair cannot
agree on a wrong answer unnoticed.

Kafka's broker needs its coordinators ready first: FindCoordinator creates
``__consumer_offsets`` and ``__share_group_state``, and the frames are retried until
neither answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import kproto.testing
from kproto.client.transport import BrokerClient
from kproto.log.manager import format_topic_id
from kproto.schemas import protocol as P
from tests.kafka_ref import KafkaUnavailable, unavailable

NOT_READY = (14, 15, 16)        # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR
DEADLINE_S = 120                # a safety net: the loop ends when the coordinators answer


def plain(x):
    """A response as plain data; a topic id as "id" (the brokers make their own), the zero id as "zero"."""
    if hasattr(x, "items"):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, uuid.UUID):
        return "id" if x.int else "zero"
    return x


def _state(topic_id, *partitions) -> list[dict]:
    return [{"topic_id": topic_id, "partitions": list(partitions)}]


def _wait_ready(c: BrokerClient, topic_id: uuid.UUID) -> None:
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        for key_type, key in ((0, "warm"), (2, f"warm:{format_topic_id(topic_id)}:0")):
            c.request(P.find_coordinator.API.key, {"key_type": key_type, "coordinator_keys": [key]}, version=6)
        summary = c.request(P.read_share_group_state_summary.API.key, {"group_id": "warm", "topics": _state(
            topic_id, {"partition": 0, "leader_epoch": 0})}, version=1)
        offsets = c.request(P.describe_share_group_offsets.API.key,
                            {"groups": [{"group_id": "warm", "topics": None}]}, version=1)
        if summary.results[0].partitions[0].error_code not in NOT_READY and \
                offsets.groups[0].error_code not in NOT_READY:
            return
        time.sleep(0.2)
    raise AssertionError("the coordinators never became ready")


def scenario(bs: str) -> list:
    """(api, version, answer) for each frame, in order."""
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("st", 2, 1)])["st"].result()
    out = []
    with BrokerClient(bs) as c:
        end = time.monotonic() + DEADLINE_S
        while not (md := c.request(P.metadata.API.key, {"topics": [{"name": "st", "topic_id": uuid.UUID(int=0)}],
                                                         "allow_auto_topic_creation": False,
                                                         "include_topic_authorized_operations": False},
                                    version=12)).topics[0].topic_id.int and time.monotonic() < end:
            time.sleep(0.1)
        tid = md.topics[0].topic_id
        _wait_ready(c, tid)

        def send(api, version: int, body: dict) -> None:
            answer = plain(c.request(api.API.key, body, version=version))
            if "results" in answer:         # Kafka answers the topics in its hash map's order
                answer["results"].sort(key=json.dumps)
            out.append((api.API.name, version, answer))

        def p(partition: int, **fields) -> dict:
            return {"partition": partition, **fields}

        g, summary, read = "sg", P.read_share_group_state_summary, P.read_share_group_state
        write, init = P.write_share_group_state, P.initialize_share_group_state
        send(summary, 1, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0))})
        send(write, 1, {"group_id": g, "topics": _state(tid, p(0, state_epoch=0, leader_epoch=0, start_offset=5,
                                                                delivery_complete_count=1, state_batches=[]))})
        send(init, 0, {"group_id": g, "topics": _state(tid, p(0, state_epoch=3, start_offset=10),
                                                       p(5, state_epoch=0, start_offset=0))
                       + _state(uuid.uuid4(), p(0, state_epoch=0, start_offset=0))})
        send(init, 0, {"group_id": g, "topics": _state(tid, p(0, state_epoch=2, start_offset=10))})
        send(init, 0, {"group_id": "", "topics": _state(tid, p(0, state_epoch=2, start_offset=10))})
        send(summary, 1, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0))})
        send(summary, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=2))})
        batches = [{"first_offset": 12, "last_offset": 14, "delivery_state": 2, "delivery_count": 1},
                   {"first_offset": 15, "last_offset": 15, "delivery_state": 0, "delivery_count": 2}]
        for state_epoch, leader_epoch, state_batches in ((3, 2, batches), (3, 1, []), (2, 3, []), (3, -1, [])):
            send(write, 1, {"group_id": g, "topics": _state(tid, p(
                0, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=12, delivery_complete_count=1,
                state_batches=state_batches))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=-1))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=1))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=2))})
        send(summary, 1, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0), p(1, leader_epoch=0))})
        describe, alter, delete = P.describe_share_group_offsets, P.alter_share_group_offsets, \
            P.delete_share_group_offsets
        send(describe, 1, {"groups": [{"group_id": g, "topics": None},
                                      {"group_id": g, "topics": [{"topic_name": "st", "partitions": [0, 1]},
                                                                 {"topic_name": "nope", "partitions": [0]}]},
                                      {"group_id": "nogroup", "topics": [{"topic_name": "st", "partitions": [0]}]}]})
        send(alter, 0, {"group_id": "ag", "topics": [
            {"topic_name": "st", "partitions": [{"partition_index": 0, "start_offset": 0},
                                                {"partition_index": 7, "start_offset": 0}]},
            {"topic_name": "nope", "partitions": [{"partition_index": 0, "start_offset": 0}]}]})
        send(describe, 1, {"groups": [{"group_id": "ag", "topics": None}]})
        send(summary, 1, {"group_id": "ag", "topics": _state(tid, p(0, leader_epoch=0))})
        send(delete, 0, {"group_id": "ag", "topics": [{"topic_name": "st"}, {"topic_name": "nope"}]})
        send(delete, 0, {"group_id": "ag", "topics": [{"topic_name": "st"}]})
        send(delete, 0, {"group_id": "ghost", "topics": [{"topic_name": "st"}]})
        send(delete, 0, {"group_id": "ag", "topics": []})
        send(alter, 0, {"group_id": "", "topics": []})
        send(P.delete_share_group_state, 0, {"group_id": g, "topics": _state(tid, p(0), p(1))})
        send(read, 0, {"group_id": g, "topics": _state(tid, p(0, leader_epoch=0))})
        send(describe, 0, {"groups": [{"group_id": g, "topics": None}]})
    return out


@pytest.fixture(scope="module")
def answers(kafka_ref, tmp_path_factory) -> dict:
    out = {}
    with kproto.testing.broker(config={"share.coordinator.state.topic.num.partitions": "1"}) as b:
        out["kproto"] = scenario(b.bootstrap_servers)
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka"), share_coordinator_state_topic_num_partitions="1") as b:
            out["kafka"] = scenario(b.bootstrap)
    except KafkaUnavailable as e:
        unavailable(e)
    return out


def test_state_and_offsets_apis_answer_as_kafka(answers):
    kafka, ours = answers["kafka"], answers["kproto"]
    for i, (k, p) in enumerate(zip(kafka, ours)):
        assert p == k, f"frame {i} ({k[0]} v{k[1]})"
    assert len(ours) == len(kafka)


def _partitions(answer: dict) -> list[dict]:
    return [p for r in answer["results"] for p in r["partitions"]]


def test_pinned_facts(answers):
    """What the comparison above rests on, spelled out against kproto's answers."""
    a = [answer for _, _, answer in answers["kproto"]]
    assert _partitions(a[0])[0]["start_offset"] == -1              # never initialized: summary says -1
    assert _partitions(a[1])[0]["error_message"] == "Read operation on uninitialized share partition not allowed."
    assert _partitions(a[2])[0]["error_code"] == 42                 # write before initialize
    assert sorted(p["error_code"] for p in _partitions(a[3])) == [0, 3, 3]
    assert _partitions(a[4])[0]["error_code"] == 124                 # a lower state epoch is fenced
    assert a[5] == {"results": []}                                   # no group id: nothing answered
    assert {k: _partitions(a[6])[0][k] for k in ("state_epoch", "leader_epoch", "start_offset",
                                                  "delivery_complete_count")} == \
        {"state_epoch": 3, "leader_epoch": 0, "start_offset": 10, "delivery_complete_count": 0}
    assert [_partitions(a[i])[0]["error_code"] for i in (9, 10, 11, 12, 13, 14)] == [0, 74, 124, 42, 42, 74]
    state = _partitions(a[15])[0]
    assert (state["start_offset"], state["state_batches"]) == (12, [
        {"first_offset": 12, "last_offset": 14, "delivery_state": 2, "delivery_count": 1},
        {"first_offset": 15, "last_offset": 15, "delivery_state": 0, "delivery_count": 2}])
    # lag = log end (0) - start offset (12) - delivery-complete count (1)
    assert a[17]["groups"][1]["topics"][0]["partitions"][0]["lag"] == -13
    assert a[19]["groups"][0]["topics"][0]["partitions"][0] == {
        "partition_index": 0, "start_offset": 0, "leader_epoch": 0, "lag": 0, "error_code": 0, "error_message": None}
    assert a[22]["responses"][0]["error_message"] == "There is no offset information to delete."
    assert (a[23]["error_code"], a[23]["error_message"]) == (69, "Group ghost not found.")
