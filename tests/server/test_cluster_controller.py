"""The static controller (kproto/server/cluster/controller.py) over its wire API:
requests encoded with kproto's codecs, handled, answers decoded, and the
``__cluster_metadata`` records it wrote read back from its log."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kproto import protocol
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.cluster import image as I
from kproto.server.cluster import raft as R
from kproto.server.cluster.controller import METADATA_LOG_DIR, Controller
from kproto.server.cluster.election import PartitionRegistration
from kproto.server.config import BrokerConfig

CLUSTER_ID = "q1Sh-9_ISia_zwGINzRvyQ"


def controller(tmp_path, **props) -> Controller:
    """A quorum of one voter, active once its first poll elected it."""
    ctrl = Controller(tmp_path, BrokerConfig.from_props({k.replace("_", "."): str(v) for k, v in props.items()}),
                      CLUSTER_ID, node_id=1, voters={1: ("127.0.0.1", 0)})
    ctrl.quorum.poll()
    assert ctrl.active
    return ctrl


def call(ctrl: Controller, api, version: int, body: dict):
    async def run():
        parts = await ctrl.handle(protocol.encode_request(api.API.key, version, 7, "test", body), None)
        return protocol.decode_response(api.API.key, version, parts[0])[1]
    return asyncio.run(run())


def register(ctrl: Controller, broker: int, incarnation: uuid.UUID | None = None, port: int = 9092):
    return call(ctrl, P.broker_registration, 0, {
        "broker_id": broker, "cluster_id": CLUSTER_ID, "incarnation_id": incarnation or uuid.uuid4(),
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": port + broker, "security_protocol": 0}],
        "features": [], "rack": None})


def heartbeat(ctrl: Controller, broker: int, epoch: int, offset: int, **flags):
    return call(ctrl, P.broker_heartbeat, 0, {"broker_id": broker, "broker_epoch": epoch,
                                              "current_metadata_offset": offset, "want_fence": False,
                                              "want_shut_down": False, **flags})


def records(ctrl: Controller, since: int = 0) -> list[tuple[int, int, dict]]:
    """(offset, record type, the record's fields) of the metadata log from offset ``since``
    (control records such as the quorum's LeaderChange take offsets but are not listed)."""
    return [(o, t, dict(r)) for o, t, r in I.iter_records(ctrl._read_all()) if o >= since]


def three_brokers(ctrl: Controller) -> dict[int, int]:
    epochs = {}
    for b in (1, 2, 3):
        epochs[b] = register(ctrl, b).broker_epoch
        assert heartbeat(ctrl, b, epochs[b], ctrl.image.end_offset - 1).is_fenced is False
    return epochs


def expire(ctrl: Controller, broker: int) -> list[int]:
    """``broker``'s session ends just before the others' would: -> what the controller fenced."""
    now = min(deadline for b, deadline in ctrl.sessions.items() if b != broker)
    ctrl.sessions[broker] = now - 1
    return ctrl.fence_stale(now)


def create(ctrl: Controller, name: str, partitions: int = -1, rf: int = -1, assignments=(), configs=()):
    return call(ctrl, P.create_topics, 7, {"topics": [{
        "name": name, "num_partitions": partitions, "replication_factor": rf,
        "assignments": [{"partition_index": i, "broker_ids": a} for i, a in enumerate(assignments)],
        "configs": [{"name": k, "value": v} for k, v in configs]}], "timeout_ms": 1000,
        "validate_only": False}).topics[0]


def test_registration_epoch_is_the_record_offset_and_unfencing_waits_for_metadata(tmp_path):
    ctrl = controller(tmp_path)
    # offset 0 is the LeaderChange control record of the quorum's first epoch, 1-8 the
    # bootstrap feature levels as Kafka 4.4's first active controller writes them (measured)
    assert [(t, r) for _, t, r in records(ctrl)] == [
        (I.BEGIN_TRANSACTION, {"name": "Bootstrap records"}),
        *[(I.FEATURE_LEVEL, {"name": n, "feature_level": level}) for n, level in (
            ("metadata.version", 33), ("eligible.leader.replicas.version", 1), ("group.version", 1),
            ("share.version", 2), ("streams.version", 1), ("transaction.version", 2))],
        (I.END_TRANSACTION, {})]
    assert ctrl.image.features == {"metadata.version": 33, "eligible.leader.replicas.version": 1,
                                   "group.version": 1, "share.version": 2, "streams.version": 1,
                                   "transaction.version": 2}
    r1 = register(ctrl, 1)
    r2 = register(ctrl, 2)
    assert (r1.error_code, r1.broker_epoch, r2.broker_epoch) == (0, 9, 10)
    # BrokerHeartbeatManager: unfenced once the broker read the log up to its registration
    behind = heartbeat(ctrl, 2, 10, 9)
    assert (behind.error_code, behind.is_caught_up, behind.is_fenced) == (0, False, True)
    caught_up = heartbeat(ctrl, 2, 10, 10)
    assert (caught_up.is_caught_up, caught_up.is_fenced) == (True, False)
    assert heartbeat(ctrl, 2, 9, 13).error_code == ErrorCode.STALE_BROKER_EPOCH
    assert heartbeat(ctrl, 9, 0, 13).error_code == ErrorCode.STALE_BROKER_EPOCH     # checkBrokerEpoch
    log = records(ctrl, 9)
    assert [(o, t) for o, t, _ in log] == [(9, I.REGISTER_BROKER), (10, I.REGISTER_BROKER), (11, I.UNFENCE_BROKER)]
    assert log[1][2]["end_points"][0]["port"] == 9094 and log[1][2]["fenced"] is True
    assert log[2][2] == {"id": 2, "epoch": 10}
    assert ctrl.image.alive() == {2}


def test_a_wrong_cluster_id_and_a_second_incarnation_are_refused(tmp_path):
    ctrl = controller(tmp_path)
    wrong = call(ctrl, P.broker_registration, 0, {
        "broker_id": 1, "cluster_id": "other", "incarnation_id": uuid.uuid4(), "listeners": [], "features": [],
        "rack": None})
    assert (wrong.error_code, wrong.broker_epoch) == (ErrorCode.INCONSISTENT_CLUSTER_ID, -1)
    first = uuid.uuid4()
    epoch = register(ctrl, 1, first).broker_epoch
    heartbeat(ctrl, 1, epoch, epoch)
    assert register(ctrl, 1, first).broker_epoch == epoch          # a retry keeps its epoch
    # ClusterControlManager.registerBroker: another incarnation while the session lives
    assert register(ctrl, 1).error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    ctrl.sessions[1] = 0                                            # the session expired
    again = register(ctrl, 1)
    assert again.error_code == 0 and again.broker_epoch > epoch
    assert [t for _, t, _ in records(ctrl)][-2:] == [I.FENCE_BROKER, I.REGISTER_BROKER]


def test_create_topics_places_replicas_round_robin_and_elects_the_first(tmp_path):
    ctrl = controller(tmp_path)
    three_brokers(ctrl)
    t = create(ctrl, "t", 3, 3, configs=[("min.insync.replicas", "2")])
    assert (t.error_code, t.num_partitions, t.replication_factor) == (0, 3, 3)
    topic = ctrl.image.topics["t"]
    assert topic.topic_id == t.topic_id and topic.configs == {"min.insync.replicas": "2"}
    assert topic.partitions == {0: PartitionRegistration((1, 2, 3), (1, 2, 3), 1),
                                1: PartitionRegistration((2, 3, 1), (2, 3, 1), 2),
                                2: PartitionRegistration((3, 1, 2), (3, 1, 2), 3)}
    assert [t for _, t, _ in records(ctrl)][-5:] == [I.TOPIC, I.CONFIG, I.PARTITION, I.PARTITION, I.PARTITION]
    again = create(ctrl, "t", 1, 1)
    assert (again.error_code, again.error_message) == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.")
    too_many = create(ctrl, "u", 1, 4)
    assert (too_many.error_code, too_many.error_message) == (
        ErrorCode.INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 4 time(s): The target replication "
        "factor of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their log "
        "directories cordoned.")
    assigned = create(ctrl, "v", assignments=[[3, 1]])
    assert (assigned.error_code, ctrl.image.partition("v", 0)) == (0, PartitionRegistration((3, 1), (3, 1), 3))
    assert create(ctrl, "w", assignments=[[3, 7]]).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_a_stale_session_fences_the_broker_and_its_partitions_elect_again(tmp_path):
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)
    create(ctrl, "t", 2, 3)
    assert expire(ctrl, 1) == [1]
    assert ctrl.image.partition("t", 0) == PartitionRegistration((1, 2, 3), (2, 3), 2, 1, 1)
    assert ctrl.image.partition("t", 1) == PartitionRegistration((2, 3, 1), (2, 3), 2, 0, 1)
    assert ctrl.fence_stale(min(ctrl.sessions[2], ctrl.sessions[3])) == []
    changes = [r for _, t, r in records(ctrl) if t == I.PARTITION_CHANGE]
    assert [(c["partition_id"], c["isr"], c["leader"]) for c in changes] == [(0, [2, 3], 2), (1, [2, 3], -2)]
    # back, caught up: unfenced, but in no ISR until its leader says so (AlterPartition)
    assert heartbeat(ctrl, 1, epochs[1], ctrl.image.end_offset - 1).is_fenced is False
    assert ctrl.image.partition("t", 0).isr == (2, 3)


def test_controlled_shutdown_moves_leaderships_at_once(tmp_path):
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)
    create(ctrl, "t", 1, 3)
    r = heartbeat(ctrl, 1, epochs[1], ctrl.image.end_offset - 1, want_shut_down=True)
    assert (r.should_shut_down, ctrl.image.brokers[1].fenced) == (True, True)
    assert ctrl.image.partition("t", 0).leader == 2


def alter(ctrl: Controller, broker: int, epoch: int, isr: list[int], leader_epoch: int = 0,
          partition_epoch: int = 0, version: int = 1):
    topic = {"topic_name": "t"} if version < 2 else {"topic_id": ctrl.image.topics["t"].topic_id}
    r = call(ctrl, P.alter_partition, 1, {"broker_id": broker, "broker_epoch": epoch, "topics": [{
        **topic, "partitions": [{"partition_index": 0, "leader_epoch": leader_epoch, "new_isr": isr,
                                 "leader_recovery_state": 0, "partition_epoch": partition_epoch}]}]})
    return r.error_code, r.topics[0].partitions[0] if r.topics else None


@pytest.mark.parametrize("args, error", [
    # ReplicationControlManager.validateAlterPartitionData, in its order
    (dict(broker=1, isr=[1, 2], leader_epoch=1), ErrorCode.NOT_CONTROLLER),
    (dict(broker=1, isr=[1, 2], partition_epoch=2), ErrorCode.NOT_CONTROLLER),
    (dict(broker=2, isr=[1, 2]), ErrorCode.INVALID_REQUEST),              # not the leader
    (dict(broker=1, isr=[1, 4]), ErrorCode.INVALID_REQUEST),              # not a replica
    (dict(broker=1, isr=[2, 3]), ErrorCode.INVALID_REQUEST),              # without the leader
    (dict(broker=1, isr=[1, 3]), ErrorCode.OPERATION_NOT_ATTEMPTED),      # 3 is fenced (v0-1)
])
def test_alter_partition_refusals(tmp_path, args, error):
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)
    create(ctrl, "t", 1, 3)
    assert expire(ctrl, 3) == [3]
    before = ctrl.image.partition("t", 0)
    assert before == PartitionRegistration((1, 2, 3), (1, 2), 1, 0, 1)
    broker = args.pop("broker")
    kw = {"partition_epoch": 1, **args}
    code, answer = alter(ctrl, broker, epochs[broker], **kw)
    assert (code, answer.error_code) == (0, error)
    assert ctrl.image.partition("t", 0) == before


def test_alter_partition_changes_the_isr_and_answers_the_new_state(tmp_path):
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)
    create(ctrl, "t", 1, 3)
    code, answer = alter(ctrl, 1, epochs[1], [1, 3])
    assert (code, answer.error_code, answer.leader_id, answer.leader_epoch, list(answer.isr),
            answer.partition_epoch) == (0, 0, 1, 0, [1, 3], 1)
    assert alter(ctrl, 1, epochs[1], [1, 2, 3])[1].error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert alter(ctrl, 1, epochs[1] + 100, [1])[0] == ErrorCode.STALE_BROKER_EPOCH
    assert records(ctrl)[-1][2]["isr"] == [1, 3]


def test_a_restarted_controller_replays_its_log(tmp_path):
    ctrl = controller(tmp_path)
    three_brokers(ctrl)
    create(ctrl, "t", 2, 3, configs=[("retention.ms", "1000")])
    alter(ctrl, 1, ctrl.image.brokers[1].epoch, [1, 2])
    image = ctrl.image
    ctrl.log.close()
    again = controller(tmp_path)
    # the voter restarted resigned (its quorum-state names it leader of epoch 1) and was
    # elected again in epoch 2: one more LeaderChange record, the same image
    assert (again.quorum.node.epoch, again.quorum.node.election) == (2, R.ElectionState(2, 1, -1))
    assert (again.image.brokers, again.image.topics, again.image.end_offset) == \
        (image.brokers, image.topics, image.end_offset + 1)
    assert set(again.sessions) == {1, 2, 3}


def test_kafka_reads_the_controllers_metadata_log(tmp_path, kafka_ref):
    """kafka-dump-log --cluster-metadata-decoder prints what kproto dump-log prints."""
    from kproto.tools.main import cli
    from click.testing import CliRunner
    ctrl = controller(tmp_path)
    three_brokers(ctrl)
    create(ctrl, "t", 2, 3, configs=[("min.insync.replicas", "2")])
    assert expire(ctrl, 2) == [2]
    # ConfigRecords of a topic and of broker layers, one with a null value (a removed key)
    incremental(ctrl, 2, "t", ("retention.ms", 0, "1000"), ("min.insync.replicas", 1, None))
    incremental(ctrl, 4, "", ("log.retention.ms", 0, "5000"))
    incremental(ctrl, 4, "3", ("log.cleaner.threads", 0, "2"))
    call(ctrl, P.create_acls, 3, {"creations": [acl(), acl(resource_type=4, name="kafka-cluster", operation=7)]})
    call(ctrl, P.delete_acls, 3, {"filters": [acl_filter(operation=4)]})
    call(ctrl, P.allocate_producer_ids, 0, {"broker_id": 1, "broker_epoch": ctrl.image.brokers[1].epoch})
    alter_quotas(ctrl, [("user", "alice"), ("client-id", None)], ("producer_byte_rate", 1024.0),
                 ("request_percentage", 12.0))
    alter_quotas(ctrl, [("user", "alice"), ("client-id", None)], ("request_percentage", None))
    alter_scram(ctrl, upsertions=[("alice", 1, 4096), ("bob", 2, 8192)])
    alter_scram(ctrl, deletions=[("bob", 2)])
    ctrl.log.flush()
    segment = str(tmp_path / METADATA_LOG_DIR / "00000000000000000000.log")
    kafka = kafka_ref.run_tool("org.apache.kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
                               "--files", segment)
    assert kafka.returncode == 0, kafka.stderr
    ours = CliRunner().invoke(cli, ["dump-log", "--cluster-metadata-decoder", "--files", segment])
    assert ours.output == kafka.stdout
    assert "PARTITION_CHANGE_RECORD" in ours.output and "FENCE_BROKER_RECORD" in ours.output
    assert "CONFIG_RECORD" in ours.output and "REMOVE_ACCESS_CONTROL_ENTRY_RECORD" in ours.output
    assert "PRODUCER_IDS_RECORD" in ours.output and "CLIENT_QUOTA_RECORD" in ours.output
    assert "REMOVE_USER_SCRAM_CREDENTIAL_RECORD" in ours.output


def incremental(ctrl: Controller, resource_type: int, name: str, *ops, validate_only: bool = False):
    r = call(ctrl, P.incremental_alter_configs, 1, {"resources": [{
        "resource_type": resource_type, "resource_name": name,
        "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        "validate_only": validate_only}).responses[0]
    return r.error_code, r.error_message


def test_config_changes_are_config_records_of_what_changed(tmp_path):
    ctrl = controller(tmp_path)
    three_brokers(ctrl)
    create(ctrl, "t", 1, 3, configs=[("retention.ms", "1000")])
    end = ctrl.image.end_offset
    # SET a new key and an unchanged one, DELETE one: a record per change only
    assert incremental(ctrl, 2, "t", ("segment.ms", 0, "60000"), ("retention.ms", 1, None)) == (0, None)
    assert [(t, r) for _, t, r in records(ctrl, end)] == [
        (I.CONFIG, {"resource_type": 2, "resource_name": "t", "name": "segment.ms", "value": "60000"}),
        (I.CONFIG, {"resource_type": 2, "resource_name": "t", "name": "retention.ms", "value": None})]
    assert ctrl.image.topics["t"].configs == {"segment.ms": "60000"}
    end = ctrl.image.end_offset
    assert incremental(ctrl, 2, "t", ("segment.ms", 0, "60000")) == (0, None)
    assert ctrl.image.end_offset == end                # nothing changed, nothing written
    assert incremental(ctrl, 2, "t", ("cleanup.policy", 2, "compact"), validate_only=True) == (0, None)
    assert ctrl.image.end_offset == end
    # refusals, nothing written
    assert incremental(ctrl, 2, "u", ("segment.ms", 0, "1")) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'u' does not exist.")
    assert incremental(ctrl, 2, "t", ("segment.ms", 0, "x"))[0] == ErrorCode.INVALID_CONFIG
    assert incremental(ctrl, 4, "one", ("log.retention.ms", 0, "1")) == (
        ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: one")
    assert ctrl.image.end_offset == end
    # dynamic broker configs: the cluster default "" and a broker's own layer
    assert incremental(ctrl, 4, "", ("log.retention.ms", 0, "5000")) == (0, None)
    assert incremental(ctrl, 4, "2", ("log.cleaner.threads", 0, "2")) == (0, None)
    assert ctrl.image.broker_configs == {"": {"log.retention.ms": "5000"}, "2": {"log.cleaner.threads": "2"}}
    assert records(ctrl)[-1][2] == {"resource_type": 4, "resource_name": "2", "name": "log.cleaner.threads",
                                    "value": "2"}
    # the legacy call replaces the layer: log.retention.ms removed
    r = call(ctrl, P.alter_configs, 2, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "log.segment.bytes", "value": "2000000"}]}], "validate_only": False}).responses[0]
    assert (r.error_code, ctrl.image.broker_configs[""]) == (0, {"log.segment.bytes": "2000000"})


def acl(resource_type=2, name="t", pattern_type=3, principal="User:alice", host="*", operation=4, permission=3):
    return {"resource_type": resource_type, "resource_name": name, "resource_pattern_type": pattern_type,
            "principal": principal, "host": host, "operation": operation, "permission_type": permission}


def acl_filter(name="t", operation=1):
    return {"resource_type_filter": 2, "resource_name_filter": name, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": operation, "permission_type": 1}


def test_acls_are_access_control_entry_records(tmp_path):
    ctrl = controller(tmp_path)
    end = ctrl.image.end_offset
    r = call(ctrl, P.create_acls, 3, {"creations": [acl(), acl(operation=3), acl(name=""), acl()]})
    assert [(x.error_code, x.error_message) for x in r.results] == [
        (0, None), (0, None), (ErrorCode.INVALID_REQUEST, "Resource name should not be empty"), (0, None)]
    written = records(ctrl, end)
    # the repeated binding is written once; each gets its own id
    assert [t for _, t, _ in written] == [I.ACCESS_CONTROL_ENTRY] * 2
    assert {(w["operation"], w["principal"], w["resource_name"], w["pattern_type"]) for _, _, w in written} == {
        (4, "User:alice", "t", 3), (3, "User:alice", "t", 3)}
    ids = {w["id"] for _, _, w in written}
    assert set(ctrl.image.acls) == ids and len(ids) == 2
    assert call(ctrl, P.create_acls, 3, {"creations": [acl()]}).results[0].error_code == 0
    assert ctrl.image.end_offset == end + 2          # already there: nothing written
    # DeleteAcls: both filters match the WRITE binding, removed once, answered by both
    r = call(ctrl, P.delete_acls, 3, {"filters": [acl_filter(operation=4), acl_filter()]})
    assert [[m.operation for m in f.matching_acls] for f in r.filter_results] == [[4], [3, 4]]
    id_of = {w["operation"]: w["id"] for _, _, w in written}
    assert [(t, w) for _, t, w in records(ctrl, end + 2)] == [
        (I.REMOVE_ACCESS_CONTROL_ENTRY, {"id": id_of[4]}), (I.REMOVE_ACCESS_CONTROL_ENTRY, {"id": id_of[3]})]
    assert ctrl.image.acls == {}
    bad = dict(acl_filter(), operation=0)
    assert call(ctrl, P.delete_acls, 3, {"filters": [bad]}).filter_results[0].error_code == ErrorCode.INVALID_REQUEST


def test_producer_id_blocks_are_producer_ids_records_unique_across_brokers_and_restarts(tmp_path):
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)

    def allocate(c: Controller, broker: int, epoch: int):
        r = call(c, P.allocate_producer_ids, 0, {"broker_id": broker, "broker_epoch": epoch})
        return r.error_code, r.producer_id_start, r.producer_id_len

    assert allocate(ctrl, 2, epochs[2]) == (0, 0, 1000)
    assert allocate(ctrl, 1, epochs[1]) == (0, 1000, 1000)
    assert records(ctrl)[-1][1:] == (I.PRODUCER_IDS, {"broker_id": 1, "broker_epoch": epochs[1],
                                                      "next_producer_id": 2000})
    end = ctrl.image.end_offset
    assert allocate(ctrl, 3, epochs[3] + 1) == (ErrorCode.STALE_BROKER_EPOCH, -1, 0)
    assert allocate(ctrl, 9, 0) == (ErrorCode.STALE_BROKER_EPOCH, -1, 0)
    assert ctrl.image.end_offset == end
    ctrl.log.close()
    again = controller(tmp_path)          # the next block survives a restart: it is in the log
    assert allocate(again, 3, epochs[3]) == (0, 2000, 1000)


def alter_quotas(ctrl: Controller, entity: list[tuple[str, str | None]], *ops, validate_only: bool = False):
    r = call(ctrl, P.alter_client_quotas, 1, {"entries": [{
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": k, "value": v if v is not None else 0.0, "remove": v is None} for k, v in ops]}],
        "validate_only": validate_only}).entries[0]
    return r.error_code, r.error_message


def test_client_quotas_are_client_quota_records(tmp_path):
    ctrl = controller(tmp_path)
    end = ctrl.image.end_offset
    alice = [("user", "alice")]
    assert alter_quotas(ctrl, alice, ("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2048.0)) == (0, None)
    assert alter_quotas(ctrl, alice, ("consumer_byte_rate", None), ("producer_byte_rate", 1024.0)) == (0, None)
    entity = [{"entity_type": "user", "entity_name": "alice"}]
    assert [(t, r) for _, t, r in records(ctrl, end)] == [
        (I.CLIENT_QUOTA, {"entity": entity, "key": "producer_byte_rate", "value": 1024.0, "remove": False}),
        (I.CLIENT_QUOTA, {"entity": entity, "key": "consumer_byte_rate", "value": 2048.0, "remove": False}),
        (I.CLIENT_QUOTA, {"entity": entity, "key": "consumer_byte_rate", "value": 0.0, "remove": True})]
    assert ctrl.image.client_quotas == {(("user", "alice"),): {"producer_byte_rate": 1024.0}}
    # refused in ClientQuotaControlManager's words, validate_only: nothing written
    error, _ = alter_quotas(ctrl, alice, ("no_such_quota", 1.0))
    assert error == ErrorCode.INVALID_REQUEST
    assert alter_quotas(ctrl, alice, ("producer_byte_rate", 1.0), validate_only=True) == (0, None)
    assert ctrl.image.end_offset == end + 3
    assert alter_quotas(ctrl, alice, ("producer_byte_rate", None)) == (0, None)
    assert ctrl.image.client_quotas == {}


def alter_scram(ctrl: Controller, deletions=(), upsertions=()):
    r = call(ctrl, P.alter_user_scram_credentials, 0, {
        "deletions": [{"name": n, "mechanism": m} for n, m in deletions],
        "upsertions": [{"name": n, "mechanism": m, "iterations": i, "salt": b"salty", "salted_password": b"p" * 32}
                       for n, m, i in upsertions]})
    return [(x.user, x.error_code) for x in r.results]


def test_scram_credentials_are_user_scram_credential_records(tmp_path):
    from kproto.security.scram import BY_TYPE, ScramCredential
    ctrl = controller(tmp_path)
    end = ctrl.image.end_offset
    assert alter_scram(ctrl, upsertions=[("alice", 1, 4096), ("bob", 2, 100)]) == [
        ("alice", 0), ("bob", ErrorCode.UNACCEPTABLE_CREDENTIAL)]
    expected = ScramCredential.from_salted_password(BY_TYPE[1], b"p" * 32, b"salty", 4096)
    assert [(t, r) for _, t, r in records(ctrl, end)] == [(I.USER_SCRAM_CREDENTIAL, {
        "name": "alice", "mechanism": 1, "salt": b"salty", "stored_key": expected.stored_key,
        "server_key": expected.server_key, "iterations": 4096})]
    assert ctrl.image.scram == {("alice", 1): expected}
    assert alter_scram(ctrl, deletions=[("alice", 2)]) == [("alice", ErrorCode.RESOURCE_NOT_FOUND)]
    assert alter_scram(ctrl, deletions=[("alice", 1)]) == [("alice", 0)]
    assert records(ctrl)[-1][1:] == (I.REMOVE_USER_SCRAM_CREDENTIAL, {"name": "alice", "mechanism": 1})
    assert ctrl.image.scram == {}


def test_a_voter_that_is_not_active_answers_not_controller(tmp_path):
    """ControllerApis on a voter that does not lead: NOT_CONTROLLER in each API's error
    response, which the broker's QuorumRoute takes as "ask the next voter"."""
    from kproto.server.cluster.channel import not_controller
    ctrl = Controller(tmp_path, BrokerConfig.from_props({}), CLUSTER_ID, node_id=2,
                      voters={1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2), 3: ("127.0.0.1", 3)})
    assert not ctrl.active
    answers = [register(ctrl, 1), heartbeat(ctrl, 1, 0, 0), create(ctrl, "t", 1, 1),
               call(ctrl, P.describe_quorum, 2, {"topics": [{"topic_name": "__cluster_metadata",
                                                            "partitions": [{"partition_index": 0}]}]})]
    assert [not_controller(a) for a in answers] == [True] * 4
    assert answers[0].error_code == answers[2].error_code == ErrorCode.NOT_CONTROLLER
    assert alter(ctrl, 1, 0, [1]) == (ErrorCode.NOT_CONTROLLER, None)
    assert records(ctrl) == []
    assert not not_controller(heartbeat(controller(tmp_path / "active"), 1, 0, 0))


def unregister(ctrl: Controller, broker: int):
    return call(ctrl, P.unregister_broker, 0, {"broker_id": broker})


def test_unregister_broker_leaves_isrs_then_removes_the_registration_and_refuses_an_unknown_id(tmp_path):
    """ReplicationControlManager.unregisterBroker: a registered broker, fenced or alive (Kafka 4.4
    answers NONE for both), leaves every ISR and leadership in the same batch as its
    UnregisterBrokerRecord; an id not registered is BROKER_ID_NOT_REGISTERED with Kafka's text."""
    ctrl = controller(tmp_path)
    epochs = three_brokers(ctrl)
    create(ctrl, "t", assignments=[[2, 1], [1, 3]])
    assert ctrl.image.partition("t", 0).leader == 2
    start = ctrl.image.end_offset
    answer = unregister(ctrl, 2)
    assert (answer.error_code, answer.error_message) == (0, None)
    log = records(ctrl, start)
    assert [t for _, t, _ in log] == [I.PARTITION_CHANGE, I.UNREGISTER_BROKER]
    assert log[0][2]["isr"] == [1] and log[0][2]["leader"] == 1
    assert log[1][2] == {"broker_id": 2, "broker_epoch": epochs[2]}
    assert 2 not in ctrl.image.brokers and 2 not in ctrl.sessions
    p0 = ctrl.image.partition("t", 0)
    assert (p0.replicas, p0.isr, p0.leader) == ((2, 1), (1,), 1)     # its replica stays, offline
    again = unregister(ctrl, 2)
    assert (again.error_code, again.error_message) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                       "Broker ID 2 is not currently registered")
    assert unregister(ctrl, 99).error_message == "Broker ID 99 is not currently registered"
    # a broker not in any ISR: only the record; its replay on a fresh image leaves the same brokers
    start = ctrl.image.end_offset
    expire(ctrl, 3)
    assert unregister(ctrl, 3).error_code == 0
    assert [t for _, t, _ in records(ctrl, start)][-1] == I.UNREGISTER_BROKER
    image = I.MetadataImage()
    for o, t, r in I.iter_records(ctrl._read_all()):
        image.apply(t, r, o)
    assert sorted(image.brokers) == [1]


def test_a_shrink_below_min_isr_fills_the_elr_and_a_new_incarnation_leaves_it(tmp_path):
    """KIP-966 through the controller's records: the fenced leader of an RF 2 min ISR 2 partition
    goes to the ELR (PartitionChangeRecord v2's eligible_leader_replicas); its next incarnation's
    registration first takes it out (handleBrokerUncleanShutdown), and its broker epoch is the
    RegisterBrokerRecord's offset after that change."""
    ctrl = controller(tmp_path)
    three_brokers(ctrl)
    create(ctrl, "t", assignments=[[1, 2]], configs=[("min.insync.replicas", "2")])
    assert expire(ctrl, 1) == [1]
    assert ctrl.image.partition("t", 0) == PartitionRegistration((1, 2), (2,), 2, 1, 1, elr=(1,))
    change = [r for _, t, r in records(ctrl) if t == I.PARTITION_CHANGE][-1]
    assert (change["isr"], change["leader"], change["eligible_leader_replicas"], change["last_known_elr"]) == \
        ([2], 2, [1], None)
    since = ctrl.image.end_offset
    epoch = register(ctrl, 1).broker_epoch
    written = [(o, t) for o, t, _ in records(ctrl, since)]
    assert written == [(since, I.PARTITION_CHANGE), (since + 1, I.REGISTER_BROKER)] and epoch == since + 1
    assert ctrl.image.partition("t", 0) == PartitionRegistration((1, 2), (2,), 2, 1, 2)
