"""`kproto dump-log --share-group-state-decoder` diffed against Kafka 4.4's DumpLogSegments
on ``__share_group_state`` segments written by Kafka's broker and by kproto's.

The same workload on each broker (one state partition, so one segment holds it all):
Kafka's own KafkaShareConsumer reads and accepts three records (its share partition's
ShareSnapshot and ShareUpdates), then the state APIs write a snapshot, an update with
state batches and a delivery-complete count, and a tombstone. Each broker is stopped
before the dump.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import kproto.testing
from kproto.client.transport import BrokerClient
from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME
from kproto.schemas import protocol as P
from tests import java_client
from tests.kafka_ref import KafkaUnavailable, unavailable
from tests.parity.test_kafka_parity_share_apis import _wait_ready
from tests.parity.test_kafka_ref_dump_log import assert_same, segment_files

STATE_PARTITIONS = {"share.coordinator.state.topic.num.partitions": "1"}


def workload(kafka_ref, bs: str) -> None:
    assert java_client.run(kafka_ref, "produce", bootstrap=bs, topic="shared", count=3, partition=0).error is None
    got = java_client.run(kafka_ref, "share", bootstrap=bs, topic="shared", group="g-dump", count=3)
    assert got.error is None, got.error
    with BrokerClient(bs) as c:
        md = c.request(P.metadata.API.key, {"topics": [{"name": "shared", "topic_id": uuid.UUID(int=0)}],
                                             "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False}, version=12)
        tid = md.topics[0].topic_id
        _wait_ready(c, tid)

        def state(api, version: int, **fields) -> None:
            r = c.request(api.API.key, {"group_id": "g-state", "topics": [{"topic_id": tid, "partitions": [
                {"partition": 0, **fields}]}]}, version=version)
            assert r.results[0].partitions[0].error_code == 0, r

        state(P.initialize_share_group_state, 0, state_epoch=1, start_offset=0)
        state(P.write_share_group_state, 1, state_epoch=1, leader_epoch=0, start_offset=1, delivery_complete_count=1,
              state_batches=[{"first_offset": 1, "last_offset": 1, "delivery_state": 2, "delivery_count": 1},
                             {"first_offset": 2, "last_offset": 2, "delivery_state": 4, "delivery_count": 3}])
        state(P.delete_share_group_state, 0)


@pytest.fixture(scope="module")
def kafka_logs(kafka_ref, tmp_path_factory) -> Path:
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-broker"),
                              share_coordinator_state_topic_num_partitions="1") as b:
            workload(kafka_ref, b.bootstrap)
    except KafkaUnavailable as e:
        unavailable(e)
    return b.log_dir


@pytest.fixture(scope="module")
def kproto_logs(kafka_ref, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("kproto-broker") / "data"
    with kproto.testing.broker(config=STATE_PARTITIONS, data_dir=data) as b:
        workload(kafka_ref, b.bootstrap_servers)
    return data


@pytest.mark.parametrize("source", ["kafka_logs", "kproto_logs"])
def test_share_group_state_decoder(kafka_ref, request, source):
    files = segment_files(request.getfixturevalue(source), f"{SHARE_GROUP_STATE_TOPIC_NAME}-0", ".log")
    assert_same(kafka_ref, files, "--share-group-state-decoder")
