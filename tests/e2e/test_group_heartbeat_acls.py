"""Topic authorization of the KIP-848 and share group APIs, raw frames through kproto's codecs
on a broker with ACLs (Kafka 4.4's KafkaApis.handleConsumerGroupHeartbeat,
handleConsumerGroupDescribe, handleShareGroupHeartbeat, handleShareGroupDescribe; KAFKA-18813):

* a heartbeat needs READ on the group (GROUP_AUTHORIZATION_FAILED, 30), then DESCRIBE on every
  topic it names (else TOPIC_AUTHORIZATION_FAILED, 29, and nothing else);
* a regex subscription resolves only to topics the member may DESCRIBE;
* a describe needs DESCRIBE on each group (30), then on every topic of its members'
  assignments, else that group is answered 29 with Kafka's message and no members.

alice may READ groups ``g-*`` and topic ``acl-a``; ``acl-secret`` is not hers."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
)

from kproto.client.transport import BrokerClient
from kproto.schemas import protocol as P
from tests.helpers import until, until_served
from tests.kafka_ref import KafkaUnavailable, unavailable
from tests.security_fixtures import ALICE_PW, JAAS, secure_broker

pytestmark = pytest.mark.slow

DENIED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _seed(c) -> None:
    admin = AdminClient({"bootstrap.servers": c.bootstrap("PLAINTEXT")})
    for f in admin.create_topics([NewTopic(t, 2) for t in ("acl-a", "acl-secret")]).values():
        f.result(timeout=30)
    acls = [AclBinding(ResourceType.TOPIC, "acl-a", ResourcePatternType.LITERAL, "User:alice", "*",
                       AclOperation.READ, AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:alice", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)]
    for f in admin.create_acls(acls).values():
        f.result(timeout=30)
    # Kafka's brokers apply ACLs from the metadata log after CreateAcls answers
    every = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
    until(lambda: len(admin.describe_acls(every).result(timeout=30)) >= len(acls), what="the ACLs applied")
    until_served(c.bootstrap("PLAINTEXT"), "acl-a")
    until_served(c.bootstrap("PLAINTEXT"), "acl-secret")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with secure_broker(tmp_path_factory.mktemp("group-acls")) as c:
        _seed(c)
        yield c


class _KafkaCluster:
    """Apache Kafka 4.4's broker with StandardAuthorizer and a SASL/PLAIN listener, as ``cluster``."""

    def __init__(self, broker) -> None:
        self.ports = {"PLAINTEXT": broker.ports["PLAINTEXT"], "SASL_PLAINTEXT": broker.ports["SASL"]}

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture(scope="module", params=["kproto", "kafka"])
def clusters(request, tmp_path_factory):
    """``cluster``, then the same seeding on Apache Kafka's broker (the operators' PLAINTEXT
    listener a super user there too)."""
    if request.param == "kproto":
        yield request.getfixturevalue("cluster")
        return
    kafka_ref = request.getfixturevalue("kafka_ref")
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-acls"), listeners={"SASL": "SASL_PLAINTEXT"},
                              authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                              super_users="User:ANONYMOUS", sasl_enabled_mechanisms="PLAIN",
                              listener_name_sasl_plain_sasl_jaas_config=JAAS) as b:
            c = _KafkaCluster(b)
            _seed(c)
            yield c
    except KafkaUnavailable as e:
        unavailable(e)


def alice(c) -> BrokerClient:
    return BrokerClient(c.bootstrap("SASL_PLAINTEXT"), config={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
        "sasl.password": ALICE_PW})


def join(client: BrokerClient, group: str, member: str, topics=None, regex=None):
    return client.request(P.consumer_group_heartbeat.API.key, {
        "group_id": group, "member_id": member, "member_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout_ms": 30000, "subscribed_topic_names": topics, "subscribed_topic_regex": regex,
        "server_assignor": None, "topic_partitions": []}, version=1)


def topic_ids(client: BrokerClient) -> dict:
    md = client.request(P.metadata.API.key, {"topics": None, "allow_auto_topic_creation": False}, version=12)
    return {t.topic_id: t.name for t in md.topics}


def test_consumer_group_heartbeat_checks_the_group_then_each_subscribed_topic(cluster):
    with alice(cluster) as a, BrokerClient(cluster.bootstrap("PLAINTEXT")) as operator:
        names = topic_ids(operator)
        r = join(a, "other", "m1", topics=["acl-a"])
        assert r.error_code == 30
        r = join(a, "g-named", "m1", topics=["acl-a", "acl-secret"])
        assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.assignment) == (29, None, None, 0, None)
        r = join(a, "g-named", "m1", topics=["acl-a"])
        assert r.error_code == 0 and r.member_epoch == 1
        assert [(names[t.topic_id], sorted(t.partitions)) for t in r.assignment.topic_partitions] == [
            ("acl-a", [0, 1])]
        # a regex resolves to the topics alice may DESCRIBE only
        r = join(a, "g-regex", "m1", regex="acl-.*")
        assert r.error_code == 0
        assert [(names[t.topic_id], sorted(t.partitions)) for t in r.assignment.topic_partitions] == [
            ("acl-a", [0, 1])]
        # the operator's regex sees both
        r = join(operator, "op-regex", "m1", regex="acl-.*")
        assert sorted(names[t.topic_id] for t in r.assignment.topic_partitions) == ["acl-a", "acl-secret"]


def test_consumer_group_describe_hides_groups_with_topics_the_principal_may_not_describe(cluster):
    with alice(cluster) as a, BrokerClient(cluster.bootstrap("PLAINTEXT")) as operator:
        assert join(operator, "g-mixed", "m1", topics=["acl-a", "acl-secret"]).error_code == 0
        assert join(a, "g-mine", "m1", topics=["acl-a"]).error_code == 0
        r = a.request(P.consumer_group_describe.API.key, {
            "group_ids": ["g-mixed", "g-mine", "other"], "include_authorized_operations": False}, version=1)
        got = {g.group_id: (g.error_code, g.error_message, len(g.members), g.group_state) for g in r.groups}
        assert got == {"g-mixed": (29, DENIED_TOPICS, 0, ""), "g-mine": (0, None, 1, "Stable"),
                       "other": (30, None, 0, "")}
        # the operator sees g-mixed whole
        r = operator.request(P.consumer_group_describe.API.key, {
            "group_ids": ["g-mixed"], "include_authorized_operations": False}, version=1)
        assert (r.groups[0].error_code, len(r.groups[0].members)) == (0, 1)


def test_share_group_heartbeat_checks_each_subscribed_topic(cluster):
    with alice(cluster) as a:
        body = {"group_id": "g-share", "member_id": "QmVnaW5uaW5nT2ZUaGVNZW1i", "member_epoch": 0, "rack_id": None,
                "subscribed_topic_names": ["acl-a", "acl-secret"]}
        r = a.request(P.share_group_heartbeat.API.key, body, version=1)
        assert (r.error_code, r.member_epoch, r.assignment) == (29, 0, None)
        r = a.request(P.share_group_heartbeat.API.key, {**body, "group_id": "other"}, version=1)
        assert r.error_code == 30


def share_fetch(client: BrokerClient, group: str, member: str, epoch: int, partitions, acks=(), wait_ms: int = 0):
    """ShareFetch v2 naming ``partitions`` [(topic id, partition)], acknowledging ``acks``
    [(topic id, partition, offset)] as ACCEPT (1)."""
    topics: dict = {}
    for tid, p in partitions:
        topics.setdefault(tid, {})[p] = []
    for tid, p, offset in acks:
        topics.setdefault(tid, {}).setdefault(p, []).append(
            {"first_offset": offset, "last_offset": offset, "acknowledge_types": [1]})
    return client.request(P.share_fetch.API.key, {
        "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": wait_ms, "min_bytes": 1,
        "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10, "share_acquire_mode": 0, "is_renew_ack": False,
        "topics": [{"topic_id": t, "partitions": [{"partition_index": p, "acknowledgement_batches": b}
                                                  for p, b in ps.items()]} for t, ps in topics.items()],
        "forgotten_topics_data": []}, version=2)


def partition_errors(r, names) -> dict:
    """{(topic, partition): (error_code, acknowledge_error_code, acquired offsets)} of a ShareFetch response."""
    return {(names[t.topic_id], p.partition_index): (
        p.error_code, p.acknowledge_error_code,
        [o for a in p.acquired_records for o in range(a.first_offset, a.last_offset + 1)])
        for t in r.responses for p in t.partitions}


def test_share_fetch_and_acknowledge_check_read_on_each_topic(clusters):
    """KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest (4.4): READ on the group,
    else GROUP_AUTHORIZATION_FAILED alone; then READ on each topic: a partition of a topic alice
    may not READ answers TOPIC_AUTHORIZATION_FAILED, nothing of it is acquired and its
    acknowledgements are not applied (handleFetchFromShareFetchRequest, handleAcknowledgements).
    The same frames to Apache Kafka 4.4's broker with an authorizer: the same answers."""
    cluster = clusters
    with alice(cluster) as a, BrokerClient(cluster.bootstrap("PLAINTEXT")) as operator:
        ids = {name: tid for tid, name in topic_ids(operator).items()}
        names = {tid: name for name, tid in ids.items()}
        # Kafka's group coordinator loads __consumer_offsets on first use: NOT_COORDINATOR (16) until then
        until(lambda: (r := a.request(P.find_coordinator.API.key, {"key_type": 0, "coordinator_keys": [
            "g-share-fetch"]}, version=4)).coordinators[0].error_code == 0 and r, what="a coordinator")
        hb = until(lambda: (r := a.request(P.share_group_heartbeat.API.key, {
            "group_id": "g-share-fetch", "member_id": "QmVnaW5uaW5nT2ZUaGVNZW1i", "member_epoch": 0,
            "rack_id": None, "subscribed_topic_names": ["acl-a"]}, version=1)).error_code not in (14, 15, 16) and r,
            what="the share group coordinator")
        assert hb.error_code == 0
        member = hb.member_id
        wanted = [(ids["acl-a"], 0), (ids["acl-secret"], 0)]
        r = share_fetch(a, "other", member, 0, wanted)
        assert (r.error_code, list(r.responses)) == (30, [])
        # the session opens with both partitions; the denied one answers 29 (acl-a, empty, is left out)
        r = share_fetch(a, "g-share-fetch", member, 0, wanted)
        assert r.error_code == 0
        assert partition_errors(r, names) == {("acl-secret", 0): (29, 0, [])}
        # records in both topics: only acl-a's are acquired (Kafka's share partition starts at the
        # log end once initialized, so produce until one is acquired)
        producer = Producer({"bootstrap.servers": cluster.bootstrap("PLAINTEXT"), "log_level": 3})
        epoch, acquired = 1, []
        while not acquired:
            for topic in ("acl-a", "acl-secret"):
                producer.produce(topic, b"v", partition=0)
            assert producer.flush(30) == 0
            got = partition_errors(share_fetch(a, "g-share-fetch", member, epoch, wanted, wait_ms=1000), names)
            epoch += 1
            assert epoch < 100
            assert got.pop(("acl-secret", 0)) == (29, 0, [])
            assert set(got) <= {("acl-a", 0)}
            if got.get(("acl-a", 0), (0,))[0] == -1:
                continue    # Kafka 4.4 once answered UNKNOWN_SERVER_ERROR while initializing the share partition
            assert all(v[:2] == (0, 0) for v in got.values())
            acquired = got.get(("acl-a", 0), (0, 0, []))[2]
        # acknowledgements: acl-a's applied, acl-secret's refused
        r = share_fetch(a, "g-share-fetch", member, epoch, [],
                        acks=[(ids["acl-a"], 0, acquired[0]), (ids["acl-secret"], 0, 0)])
        assert partition_errors(r, names) == {("acl-a", 0): (0, 0, []), ("acl-secret", 0): (29, 29, [])}
        ack = {"group_id": "g-share-fetch", "member_id": member, "share_session_epoch": epoch + 1, "is_renew_ack": False,
               "topics": [{"topic_id": ids["acl-secret"], "partitions": [{"partition_index": 0,
                           "acknowledgement_batches": [{"first_offset": 0, "last_offset": 0,
                                                        "acknowledge_types": [1]}]}]}]}
        r = a.request(P.share_acknowledge.API.key, ack, version=2)
        assert r.error_code == 0
        assert [(names[t.topic_id], p.partition_index, p.error_code) for t in r.responses for p in t.partitions] == [
            ("acl-secret", 0, 29)]
        r = a.request(P.share_acknowledge.API.key, {**ack, "group_id": "other"}, version=2)
        assert (r.error_code, list(r.responses)) == (30, [])


def streams_join(client: BrokerClient, group: str, member: str, source: str):
    """A word count's topology (a repartition and a changelog topic) joining a streams group."""
    info = {"partitions": 0, "replication_factor": 0, "topic_configs": []}
    return client.request(P.streams_group_heartbeat.API.key, {
        "group_id": group, "member_id": member, "member_epoch": 0, "endpoint_information_epoch": 0,
        "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
        "topology": {"epoch": 0, "subtopologies": [
            {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
             "state_changelog_topics": [], "repartition_sink_topics": [f"{group}-rep"],
             "repartition_source_topics": [], "copartition_groups": []},
            {"subtopology_id": "1", "source_topics": [], "source_topic_regex": [],
             "state_changelog_topics": [{"name": f"{group}-cl", **info}], "repartition_sink_topics": [],
             "repartition_source_topics": [{"name": f"{group}-rep", **info}], "copartition_groups": []}]},
        "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p1", "user_endpoint": None,
        "client_tags": [], "task_offsets": [], "task_end_offsets": [], "shutdown_application": False}, version=1)


def streams_joined(client: BrokerClient, group: str, member: str, source: str):
    """``streams_join`` after FindCoordinator, again while the coordinator is not ready (Kafka
    creates __consumer_offsets on the first FindCoordinator and answers NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS until it is loaded)."""
    answers = []
    # FindCoordinator first, as a client does: Kafka creates __consumer_offsets there
    client.request(P.find_coordinator.API.key, {"key": group, "key_type": 0, "coordinator_keys": [group]})
    until(lambda: answers.append(streams_join(client, group, member, source)) or
          answers[-1].error_code not in (14, 15, 16), what="the group coordinator ready")
    return answers[-1]


def test_streams_group_heartbeat_needs_read_on_the_group_and_create_for_internal_topics(clusters):
    """KafkaApis.handleStreamsGroupHeartbeat: READ on the group; Kafka's internal topics refused
    in a topology; the internal topics alice may not CREATE are named in the
    MISSING_INTERNAL_TOPICS status and not created. Same answers from both brokers."""
    with alice(clusters) as a, BrokerClient(clusters.bootstrap("PLAINTEXT")) as operator:
        r = streams_join(a, "other", "m1", "acl-a")
        assert r.error_code == 30
        r = streams_join(a, "g-bad", "m1", "__consumer_offsets")
        assert (r.error_code, r.error_message) == (130, "Use of Kafka internal topics __consumer_offsets in a "
                                                        "Kafka Streams topology is prohibited.")
        # every topic of the topology needs DESCRIBE: the internal ones are not alice's yet
        r = streams_join(a, "g-streams", "m1", "acl-a")
        assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.status,
                r.active_tasks) == (29, None, "", 0, 0, [], None)
        admin = AdminClient({"bootstrap.servers": clusters.bootstrap("PLAINTEXT")})
        acl = AclBinding(ResourceType.TOPIC, "g-streams-", ResourcePatternType.PREFIXED, "User:alice", "*",
                         AclOperation.DESCRIBE, AclPermissionType.ALLOW)
        admin.create_acls([acl])[acl].result(timeout=30)
        mine = AclBindingFilter(ResourceType.TOPIC, "g-streams-", ResourcePatternType.PREFIXED, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
        until(lambda: admin.describe_acls(mine).result(timeout=30), what="the ACL applied")
        r = streams_joined(a, "g-streams", "m1", "acl-a")
        assert (r.error_code, r.error_message, r.member_epoch) == (0, None, 1)
        assert [(s.status_code, s.status_detail) for s in r.status] == [
            (5, "Assignment delayed due to the configured initial rebalance delay."),
            (3, "Internal topics are missing: g-streams-rep, g-streams-cl; Unauthorized to CREATE on topics "
                "g-streams-rep, g-streams-cl.")]
        # the operator may: its join creates them, one partition per task
        r = streams_joined(operator, "op-streams", "m1", "acl-a")
        assert [s.status_code for s in r.status] == [5, 3]
        until(lambda: {"op-streams-cl", "op-streams-rep"} <= set(topic_ids(operator).values()),
              what="the internal topics created")
