"""Bad input in StreamsGroupHeartbeat topologies (kproto/server/handlers/streams_groups.py): a
topology that cannot be read is refused with Kafka's INVALID_REQUEST message; internal topics
it asks for that Kafka would refuse to create (2^31 - 1 partitions, a replication factor the
cluster lacks, a config value of the wrong type) are not created nor allocated, the member
hears MISSING_INTERNAL_TOPICS and the broker log says why; the broker serves on."""

from __future__ import annotations

import pytest

from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.testing import FIXTURE_DEFAULTS, Broker
from tests.helpers import create_topic, until

MISSING_INTERNAL_TOPICS = 3


def sub(subtopology_id: str = "0", source_topics=("in",), **kw) -> dict:
    return {"subtopology_id": subtopology_id, "source_topics": list(source_topics), "source_topic_regex": [],
            "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
            "copartition_groups": [], **kw}


def info(name: str, partitions: int = 0, replication_factor: int = 0, **configs: str) -> dict:
    return {"name": name, "partitions": partitions, "replication_factor": replication_factor,
            "topic_configs": [{"key": k.replace("_", "."), "value": v} for k, v in configs.items()]}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("streams-bad")
    with Broker(tmp / "data", FIXTURE_DEFAULTS, log_path=tmp / "broker.log") as b:
        create_topic(b.bootstrap_servers, "in", partitions=2)
        yield b


def join(bootstrap: str, group: str, subtopologies: list[dict]):
    """One joining heartbeat of a new member; its answer once the coordinator is loaded."""
    body = {"group_id": group, "member_id": f"{group}-m", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 0, "subtopologies": subtopologies}, "active_tasks": [], "standby_tasks": [],
            "warmup_tasks": [], "process_id": "p", "user_endpoint": None, "client_tags": [], "task_offsets": None,
            "task_end_offsets": None, "shutdown_application": False}
    with BrokerClient(bootstrap) as c:
        return until(lambda: (r := c.request(P.streams_group_heartbeat.API.key, body, version=0)).error_code
                     not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             ErrorCode.NOT_COORDINATOR) and r, what="the group coordinator ready")


def topics(bootstrap: str) -> set[str]:
    with BrokerClient(bootstrap) as c:
        r = c.request(P.metadata.API.key, {"topics": None, "allow_auto_topic_creation": False,
                                           "include_topic_authorized_operations": False}, version=12)
    return {t.name for t in r.topics}


@pytest.mark.parametrize("group, subtopologies, message", [
    ("copartition-index", [sub(copartition_groups=[{"source_topics": [5], "source_topic_regex": [],
                                                    "repartition_source_topics": [7]}])],
     "Subtopology 0 has a copartition group with an index out of range."),
    ("same-ids", [sub(), sub()], "Subtopology ids must be unique."),
])
def test_an_unreadable_topology_is_invalid_request(broker, group, subtopologies, message):
    r = join(broker.bootstrap_servers, group, subtopologies)
    assert (r.error_code, r.error_message, r.member_epoch) == (ErrorCode.INVALID_REQUEST, message, 0)


@pytest.mark.parametrize("group, subtopologies, topic, logged", [
    ("huge", [sub(repartition_sink_topics=["huge-r"]),
              sub("1", (), repartition_source_topics=[info("huge-r", 2**31 - 1)])],
     "huge-r", "Unable to perform excessively large batch operation."),
    ("rf", [sub(state_changelog_topics=[info("rf-cl", replication_factor=32767)])],
     "rf-cl", "Unable to replicate the partition 32767 time(s): The target replication factor of 32767 cannot be "
              "reached because only 1 broker(s) are registered or some brokers have all their log "
              "directories cordoned."),
    ("config", [sub(state_changelog_topics=[info("config-cl", retention_ms="abc")])],
     "config-cl", "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
])
def test_internal_topics_kafka_would_refuse_are_not_created(broker, group, subtopologies, topic, logged):
    r = join(broker.bootstrap_servers, group, subtopologies)
    assert r.error_code == 0
    assert (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {topic}") in \
        [(s.status_code, s.status_detail) for s in r.status]
    # the creation was tried (and refused) before the heartbeat answered
    assert f"could not create streams internal topic {topic}: {logged}" in broker.log_text()
    assert topic not in topics(broker.bootstrap_servers)
    assert "Traceback" not in broker.log_text()


@pytest.mark.parametrize("replication_factor", [-1, 0, 1])
def test_internal_topics_with_the_default_or_a_keepable_replication_factor_are_created(broker,
                                                                                       replication_factor):
    """Kafka Streams' replication.factor -1 (and 0, unset) is the broker's default: created."""
    topic = f"ok-rf{replication_factor + 1}-cl"
    r = join(broker.bootstrap_servers, f"ok-rf{replication_factor + 1}",
             [sub(state_changelog_topics=[info(topic, replication_factor=replication_factor)])])
    assert r.error_code == 0
    assert (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {topic}") in \
        [(s.status_code, s.status_detail) for s in r.status]       # the answer is computed before creating
    until(lambda: topic in topics(broker.bootstrap_servers), what=f"{topic} created")
