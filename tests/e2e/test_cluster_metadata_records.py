"""What goes through a kproto cluster's controller besides topics (docs/cluster.md):
topic and dynamic broker configs as ConfigRecords, asked of any node and applied by
every node. Three ``kproto serve`` processes, kproto's Admin and confluent-kafka."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest
from click.testing import CliRunner
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType, AdminClient,
    ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion, AlterConfigOpType, ConfigEntry, ConfigResource as CKResource, ConfigSource, NewTopic,
)

from kproto.client.admin import Admin, AlterConfigOp, ConfigResource
from kproto.client.data import DataClient
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from kproto.server.dynamic_config import DEFAULT_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG
from kproto.schemas import protocol as P
from kproto.server.runtime.state_topic import partition_for
from kproto.testing import Cluster
from kproto.tools.main import cli
from tests.e2e.test_cluster_coordinators import wait_for_coordinator
from tests.helpers import until

TOPIC, BROKER = 2, 4
STATE_PARTITIONS = 5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(brokers=3, data_dir=tmp_path_factory.mktemp("cluster"),
                 config={"transaction.state.log.num.partitions": STATE_PARTITIONS}) as c:
        yield c


@contextmanager
def admin_on(cluster: Cluster, node: int) -> Iterator[Admin]:
    with BrokerClient(cluster.nodes[node].bootstrap_servers) as client:
        admin = Admin(client)
        try:
            yield admin
        finally:
            admin.close()


def described(cluster: Cluster, node: int, resource: ConfigResource, key: str) -> tuple[str | None, int]:
    with admin_on(cluster, node) as admin:
        result = admin.describe_configs([resource], keys=[key])[resource]
    assert result.error == ErrorCode.NONE, result
    entries = {e.name: e for e in result.entries}
    return (entries[key].value, entries[key].source) if key in entries else (None, -1)


def shows(cluster: Cluster, node: int, resource: ConfigResource, key: str, expected: tuple[str | None, int]) -> None:
    """Wait until ``node`` describes ``key`` as ``expected``: a broker applies the controller's
    records a moment after another node answered the change (each serves its own image)."""
    def now() -> tuple[str | None, int] | None:
        with admin_on(cluster, node) as admin:
            result = admin.describe_configs([resource], keys=[key])[resource]
        entries = {e.name: e for e in result.entries}
        return None if result.error else (entries[key].value, entries[key].source) if key in entries else (None, -1)
    until(lambda: now() == expected, what=f"node {node} describing {resource} {key} as {expected}")
    assert described(cluster, node, resource, key) == expected


def test_topic_configs_altered_on_one_node_apply_on_every_node(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.nodes[2].bootstrap_servers})
    admin.create_topics([NewTopic("cfg", 1, replica_assignment=[[2, 3, 1]])])["cfg"].result(timeout=60)
    cluster.wait_for_isr("cfg", 0, [1, 2, 3])
    topic = ConfigResource(TOPIC, "cfg")
    # asked of node 3 (a follower), an incremental change goes to the controller
    with admin_on(cluster, 3) as a:
        assert a.incremental_alter_configs({topic: [
            AlterConfigOp("retention.ms", "set", "3600000"), AlterConfigOp("cleanup.policy", "append", "compact"),
            AlterConfigOp("min.insync.replicas", "set", "3")]}) == {topic: (ErrorCode.NONE, None)}
    for node in (1, 2, 3):
        shows(cluster, node, topic, "retention.ms", ("3600000", DYNAMIC_TOPIC_CONFIG))
        shows(cluster, node, topic, "cleanup.policy", ("delete,compact", DYNAMIC_TOPIC_CONFIG))
        shows(cluster, node, topic, "min.insync.replicas", ("3", DYNAMIC_TOPIC_CONFIG))
    # the leader (node 2) took min.insync.replicas=3: with node 3 stopped, acks=all is refused
    cluster.stop(3)
    try:
        cluster.wait_for_isr("cfg", 0, [1, 2])
        with BrokerClient(cluster.nodes[2].bootstrap_servers) as client:
            data = DataClient(client)
            result = data.produce({("cfg", 0): build_record_batch([NewRecord(value=b"x")])}, acks=-1)[("cfg", 0)]
            assert result.error == ErrorCode.NOT_ENOUGH_REPLICAS
            # back to 2 through node 1 (the legacy call replaces every override): accepted
            with admin_on(cluster, 1) as a:
                assert a.alter_configs({topic: {"min.insync.replicas": "2"}}) == {topic: (ErrorCode.NONE, None)}
            shows(cluster, 2, topic, "retention.ms", ("604800000", DEFAULT_CONFIG))
            result = data.produce({("cfg", 0): build_record_batch([NewRecord(value=b"y")])}, acks=-1)[("cfg", 0)]
            assert (result.error, result.base_offset) == (ErrorCode.NONE, 0)
            data.close()
    finally:
        cluster.start(3)
    cluster.wait_for_isr("cfg", 0, [1, 2, 3])
    # a restarted node replays the ConfigRecords
    assert described(cluster, 3, topic, "min.insync.replicas") == ("2", DYNAMIC_TOPIC_CONFIG)


def test_the_controller_refuses_in_kafkas_words(cluster):
    with admin_on(cluster, 2) as a:
        missing, bad, node = ConfigResource(TOPIC, "nope"), ConfigResource(TOPIC, "cfg2"), ConfigResource(BROKER, "x")
        assert a.incremental_alter_configs({missing: [AlterConfigOp("retention.ms", "set", "1")]})[missing] == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist.")
        assert a.incremental_alter_configs({node: [AlterConfigOp("log.retention.ms", "set", "1")]})[node] == (
            ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("cfg2", 1, replication_factor=3)])["cfg2"].result(timeout=60)
        error, message = a.incremental_alter_configs({bad: [AlterConfigOp("retention.ms", "set", "soon")]})[bad]
        assert error == ErrorCode.INVALID_CONFIG and "retention.ms" in message
        error, _ = a.incremental_alter_configs({bad: [AlterConfigOp("no.such.config", "set", "1")]})[bad]
        assert error == ErrorCode.INVALID_CONFIG
        # validate_only writes nothing
        assert a.incremental_alter_configs({bad: [AlterConfigOp("retention.ms", "set", "5")]},
                                           validate_only=True)[bad] == (ErrorCode.NONE, None)
    shows(cluster, 1, bad, "retention.ms", ("604800000", DEFAULT_CONFIG))


def test_dynamic_broker_configs_cluster_wide_and_per_broker_through_the_controller(cluster):
    default = ConfigResource(BROKER, "")
    with admin_on(cluster, 1) as a:        # the legacy call replaces the cluster-wide layer
        assert a.alter_configs({default: {"log.retention.ms": "7200000"}}) == {default: (ErrorCode.NONE, None)}
    for node in (1, 2, 3):
        shows(cluster, node, ConfigResource(BROKER, str(node)), "log.retention.ms",
              ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG))
        shows(cluster, node, default, "log.retention.ms", ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG))
    # a per-broker config for node 3 asked of node 1: node 3 takes it, node 2 does not
    with admin_on(cluster, 1) as a:
        three = ConfigResource(BROKER, "3")
        assert a.incremental_alter_configs({three: [AlterConfigOp("log.retention.ms", "set", "60000")]}) == {
            three: (ErrorCode.NONE, None)}
    shows(cluster, 3, ConfigResource(BROKER, "3"), "log.retention.ms", ("60000", DYNAMIC_BROKER_CONFIG))
    assert described(cluster, 2, ConfigResource(BROKER, "2"), "log.retention.ms") == (
        "7200000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    # confluent-kafka sends a broker's resource to that broker; node 2 forwards it
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    two = CKResource("BROKER", "2", incremental_configs=[
        ConfigEntry("log.retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([two])[two].result(timeout=60)
    entries = admin.describe_configs([CKResource("BROKER", "2")])[CKResource("BROKER", "2")].result(timeout=60)
    assert entries["log.retention.ms"].value == "120000"
    assert entries["log.retention.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    # and the topics without an override on node 2 follow it: DescribeConfigs shows the synonym's value
    assert described(cluster, 2, ConfigResource(TOPIC, "cfg2"), "retention.ms")[0] == "120000"


def test_acls_through_the_controller_reach_every_nodes_authorizer(tmp_path):
    with Cluster(brokers=3, data_dir=tmp_path / "cluster", config={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true"}) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("locked", 1, replica_assignment=[[3, 1, 2]])])["locked"].result(timeout=60)
        cluster.wait_for_isr("locked", 0, [1, 2, 3])

        def produce() -> ErrorCode:     # on the leader, node 3
            with BrokerClient(cluster.nodes[3].bootstrap_servers) as client:
                data = DataClient(client)
                try:
                    return data.produce({("locked", 0): build_record_batch([NewRecord(value=b"x")])},
                                        acks=-1)[("locked", 0)].error
                finally:
                    data.close()

        assert produce() == ErrorCode.NONE
        # ALL allowed (with an ACL on the topic, allow.everyone.if.no.acl.found no longer
        # applies: Metadata needs DESCRIBE), WRITE denied
        allow, deny = (AclBinding(ResourceType.TOPIC, "locked", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                                  op, permission) for op, permission in ((AclOperation.ALL, AclPermissionType.ALLOW),
                                                                         (AclOperation.WRITE, AclPermissionType.DENY)))
        # created through node 2: answered once node 2 applied the records
        admin = admin_for(cluster, 2)
        assert [f.result(timeout=60) for f in admin.create_acls([allow, deny]).values()] == [None, None]
        assert sorted(described_acls(cluster, 2), key=str) == sorted([allow, deny], key=str)
        # node 3 (the leader) fetches the same records: its authorizer refuses the write
        until(lambda: len(described_acls(cluster, 3)) == 2)
        assert produce() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        # deleted through node 3: answered once node 3 applied the removal
        flt = AclBindingFilter(ResourceType.TOPIC, "locked", ResourcePatternType.ANY, None, None,
                               AclOperation.ANY, AclPermissionType.ANY)
        admin = admin_for(cluster, 3)
        assert sorted(admin.delete_acls([flt])[flt].result(timeout=60), key=str) == sorted([allow, deny], key=str)
        assert produce() == ErrorCode.NONE
        until(lambda: described_acls(cluster, 1) == [])
        text = dump_metadata(cluster)
        assert text.count("ACCESS_CONTROL_ENTRY_RECORD") == 4      # two entries, two removals
        assert "REMOVE_ACCESS_CONTROL_ENTRY_RECORD" in text


def admin_for(cluster: Cluster, node: int) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.nodes[node].bootstrap_servers})


def described_acls(cluster: Cluster, node: int) -> list:
    admin = admin_for(cluster, node)
    return admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY)).result(timeout=60)


def dump_metadata(cluster: Cluster) -> str:
    """``kproto dump-log --cluster-metadata-decoder`` of the controller's log (node 1)."""
    segment = cluster.nodes[1].data_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    out = CliRunner().invoke(cli, ["dump-log", "--cluster-metadata-decoder", "--files", str(segment)])
    assert out.exit_code == 0, out.output
    return out.output


def init_producer_id(cluster: Cluster, node: int, transactional_id: str | None = None) -> int:
    with BrokerClient(cluster.nodes[node].bootstrap_servers) as client:
        r = client.request(P.init_producer_id.API.key, {
            "transactional_id": transactional_id, "transaction_timeout_ms": 60000, "producer_id": -1,
            "producer_epoch": -1})
    assert r.error_code == ErrorCode.NONE, r
    return r.producer_id


def test_producer_ids_come_in_blocks_from_the_controller_unique_across_nodes(cluster):
    # idempotent producers on each node: consecutive ids of the node's own block of 1000
    ids = {node: [init_producer_id(cluster, node) for _ in range(3)] for node in (1, 2, 3)}
    for got in ids.values():
        assert got == list(range(got[0], got[0] + 3))
    assert len({got[0] // 1000 for got in ids.values()}) == 3
    # transactional producers coordinated on each node: ids of that node's block, never another's
    wait_for_coordinator(cluster, "probe", key_type=1)          # creates __transaction_state
    for q in range(STATE_PARTITIONS):
        cluster.wait_for_isr("__transaction_state", q, [1, 2, 3])
    txn_ids = {}
    for key in (f"txn-{i}" for i in range(100)):
        txn_ids.setdefault(cluster.leader("__transaction_state", partition_for(key, STATE_PARTITIONS)), key)
    assert set(txn_ids) == {1, 2, 3}
    every = [pid for got in ids.values() for pid in got]
    for node, key in sorted(txn_ids.items()):
        assert wait_for_coordinator(cluster, key, key_type=1).node_id == node
        pid = init_producer_id(cluster, node, key)
        assert pid // 1000 == ids[node][0] // 1000
        every.append(pid)
    assert len(set(every)) == len(every) == 12
    # a restarted node gets a new block, after every block handed out so far
    cluster.stop(2)
    cluster.start(2)
    assert init_producer_id(cluster, 2) >= (max(every) // 1000 + 1) * 1000
    assert dump_metadata(cluster).count("PRODUCER_IDS_RECORD") == 4


def described_quotas(cluster: Cluster, node: int) -> dict:
    with BrokerClient(cluster.nodes[node].bootstrap_servers) as client:
        r = client.request(P.describe_client_quotas.API.key, {"components": [], "strict": False})
    assert r.error_code == 0, r
    return {tuple((d.entity_type, d.entity_name) for d in e.entity): {v["key"]: v["value"] for v in e["values"]}
            for e in r.entries}


def test_client_quotas_through_the_controller_reach_every_node(cluster):
    with BrokerClient(cluster.nodes[2].bootstrap_servers) as client:
        r = client.request(P.alter_client_quotas.API.key, {"entries": [{
            "entity": [{"entity_type": "user", "entity_name": "alice"}],
            "ops": [{"key": "producer_byte_rate", "value": 4096.0, "remove": False}]}], "validate_only": False})
    assert [(e.error_code, e.error_message) for e in r.entries] == [(0, None)]
    assert described_quotas(cluster, 2) == {(("user", "alice"),): {"producer_byte_rate": 4096.0}}
    for node in (1, 3):
        until(lambda: described_quotas(cluster, node) == {(("user", "alice"),): {"producer_byte_rate": 4096.0}})
    assert "CLIENT_QUOTA_RECORD" in dump_metadata(cluster)


def test_scram_credentials_through_the_controller_reach_every_node(cluster):
    admin = admin_for(cluster, 2)
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                          b"secret")
    assert admin.alter_user_scram_credentials([upsert])["carol"].result(timeout=60) is None

    def iterations(node: int) -> list[tuple[str, int]]:
        admin = admin_for(cluster, node)
        described = admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=60)
        return [(i.mechanism.name, i.iterations) for i in described.scram_credential_infos]

    assert iterations(2) == [("SCRAM_SHA_256", 8192)]
    for node in (1, 3):
        until(lambda: _described_or_none(iterations, node) == [("SCRAM_SHA_256", 8192)])
    assert "USER_SCRAM_CREDENTIAL_RECORD" in dump_metadata(cluster)


def _described_or_none(describe, node: int):
    """``describe(node)``, or None while the node does not know the user yet."""
    try:
        return describe(node)
    except KafkaException:      # RESOURCE_NOT_FOUND until the node applied the record
        return None
