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
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
)

from kproto.client.transport import BrokerClient
from kproto.schemas import protocol as P
from tests.security_fixtures import ALICE_PW, secure_broker

pytestmark = pytest.mark.slow

DENIED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with secure_broker(tmp_path_factory.mktemp("group-acls")) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap("PLAINTEXT")})
        for f in admin.create_topics([NewTopic(t, 2) for t in ("acl-a", "acl-secret")]).values():
            f.result(timeout=30)
        acls = [AclBinding(ResourceType.TOPIC, "acl-a", ResourcePatternType.LITERAL, "User:alice", "*",
                           AclOperation.READ, AclPermissionType.ALLOW),
                AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:alice", "*",
                           AclOperation.READ, AclPermissionType.ALLOW)]
        for f in admin.create_acls(acls).values():
            f.result(timeout=30)
        yield c


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
