"""The cluster's metadata as the ``__cluster_metadata`` records build it (Kafka's
MetadataImage/MetadataDelta): brokers and their fencing, topics, partition
registrations, topic configs. The controller applies each record it writes;
brokers apply the same records as they fetch them, so both hold one image.

``records_batch`` frames records as a controller writes them (one batch per
change, MetadataRecordSerde values, no keys); ``iter_records`` reads them back.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from kproto.records import NewRecord, RecordBatch, build_record_batch, iter_batches
from kproto.schemas.cluster_metadata import build_metadata_record, parse_metadata_record
from kproto.security.acl import (
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
)
from kproto.security.scram import ScramCredential
from kproto.server import quotas
from kproto.server.cluster.election import NO_LEADER, PartitionRegistration

__all__ = ["REGISTER_BROKER", "FEATURE_LEVEL", "BEGIN_TRANSACTION", "END_TRANSACTION", "UNREGISTER_BROKER", "REMOVE_TOPIC", "TOPIC", "PARTITION", "CONFIG", "PARTITION_CHANGE", "FENCE_BROKER",
           "UNFENCE_BROKER", "TOPIC_RESOURCE", "BROKER_RESOURCE", "BrokerInfo", "TopicImage", "MetadataImage",
           "records_batch", "iter_records"]

# MetadataRecordType ids (metadata/*.json apiKey) and the versions written here.
REGISTER_BROKER, UNREGISTER_BROKER, TOPIC, CONFIG, PARTITION, PARTITION_CHANGE = 0, 1, 2, 4, 3, 5
FENCE_BROKER, UNFENCE_BROKER, REMOVE_TOPIC = 7, 8, 9
USER_SCRAM_CREDENTIAL, FEATURE_LEVEL, CLIENT_QUOTA, PRODUCER_IDS, ACCESS_CONTROL_ENTRY = 11, 12, 14, 15, 18
REMOVE_ACCESS_CONTROL_ENTRY, REMOVE_USER_SCRAM_CREDENTIAL, BEGIN_TRANSACTION, END_TRANSACTION = 19, 22, 23, 24
# Partition records at version 2, Kafka 4's, for the ELR fields (KIP-966)
VERSIONS = {REGISTER_BROKER: 1, UNREGISTER_BROKER: 0, TOPIC: 0, CONFIG: 0, PARTITION: 2, PARTITION_CHANGE: 2,
            FENCE_BROKER: 0, UNFENCE_BROKER: 0, REMOVE_TOPIC: 0, USER_SCRAM_CREDENTIAL: 0,
            REMOVE_USER_SCRAM_CREDENTIAL: 0, CLIENT_QUOTA: 0, PRODUCER_IDS: 0, ACCESS_CONTROL_ENTRY: 0,
            REMOVE_ACCESS_CONTROL_ENTRY: 0, FEATURE_LEVEL: 0, BEGIN_TRANSACTION: 0, END_TRANSACTION: 0}
#: ConfigResource.Type.TOPIC and BROKER (a broker's id, or "" for the cluster-wide default)
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
# PartitionChangeRecord's "leader unchanged"
LEADER_UNCHANGED = -2


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    endpoints: dict[str, tuple[str, int]]     # listener name -> (host, port)
    rack: str | None
    fenced: bool = True
    #: listener name -> SecurityProtocol id (a snapshot writes the registration back whole)
    security_protocols: dict[str, int] = field(default_factory=dict, compare=False)


@dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


class MetadataImage:
    """What the applied records say; ``end_offset`` is the next record's offset."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicImage] = {}
        self.names: dict[uuid.UUID, str] = {}
        #: dynamic broker configs: "" (the cluster default) or a broker id -> name -> value
        self.broker_configs: dict[str, dict[str, str]] = {}
        #: the ACLs by their ids (AccessControlEntryRecord; AclControlManager's idToAcl)
        self.acls: dict[uuid.UUID, AclBinding] = {}
        #: client quotas by entity (ClientQuotaRecord; ClientQuotaControlManager's clientQuotaData)
        self.client_quotas: dict[quotas.Entity, dict[str, float]] = {}
        #: SCRAM credentials by (user, mechanism type) (UserScramCredentialRecord; ScramControlManager)
        self.scram: dict[tuple[str, int], ScramCredential] = {}
        #: the first producer id of the next block the controller hands out (ProducerIdsRecord)
        self.next_producer_id = 0
        #: finalized feature levels (FeatureLevelRecord; FeaturesImage.finalizedVersions)
        self.features: dict[str, int] = {}
        self.end_offset = 0

    def alive(self) -> set[int]:
        """The unfenced brokers: those a leader may be elected from."""
        return {b for b, info in self.brokers.items() if not info.fenced}

    def configs(self, resource_type: int, name: str) -> dict[str, str] | None:
        """A topic's or a broker layer's configs as the ConfigRecords set them; None for
        a topic that does not exist."""
        if resource_type == TOPIC_RESOURCE:
            t = self.topics.get(name)
            return None if t is None else dict(t.configs)
        return dict(self.broker_configs.get(name, {}))

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def apply(self, record_type: int, r: Any, offset: int) -> tuple[str, int] | None:
        """Apply one record at ``offset``; -> the partition it changed, if any."""
        self.end_offset = offset + 1
        if record_type == REGISTER_BROKER:
            self.brokers[r.broker_id] = BrokerInfo(
                r.broker_id, r.broker_epoch, r.incarnation_id,
                {e.name: (e.host, e.port) for e in r.end_points}, r.rack, bool(r.fenced),
                {e.name: e.security_protocol for e in r.end_points})
        elif record_type == UNREGISTER_BROKER:
            # ClusterControlManager.replay(UnregisterBrokerRecord): the registration of that epoch goes
            b = self.brokers.get(r.broker_id)
            if b is not None and b.epoch == r.broker_epoch:
                del self.brokers[r.broker_id]
        elif record_type in (FENCE_BROKER, UNFENCE_BROKER):
            b = self.brokers.get(r.id)
            if b is not None and b.epoch == r.epoch:
                self.brokers[r.id] = replace(b, fenced=record_type == FENCE_BROKER)
        elif record_type == TOPIC:
            self.topics[r.name] = TopicImage(r.name, r.topic_id)
            self.names[r.topic_id] = r.name
        elif record_type == REMOVE_TOPIC:        # the topic and its partitions go
            name = self.names.pop(r.topic_id, None)
            if name is not None:
                self.topics.pop(name, None)
        elif record_type == CONFIG:
            t = self.topics.get(r.resource_name)
            configs = (t.configs if r.resource_type == TOPIC_RESOURCE and t is not None
                       else self.broker_configs.setdefault(r.resource_name, {})
                       if r.resource_type == BROKER_RESOURCE else None)
            if configs is not None:
                if r.value is None:
                    configs.pop(r.name, None)
                else:
                    configs[r.name] = r.value
        elif record_type == ACCESS_CONTROL_ENTRY:
            self.acls[r.id] = AclBinding(
                ResourcePattern(ResourceType(r.resource_type), r.resource_name, PatternType(r.pattern_type)),
                AccessControlEntry(r.principal, r.host, AclOperation(r.operation),
                                   AclPermissionType(r.permission_type)))
        elif record_type == REMOVE_ACCESS_CONTROL_ENTRY:
            self.acls.pop(r.id, None)
        elif record_type == USER_SCRAM_CREDENTIAL:
            self.scram[(r.name, r.mechanism)] = ScramCredential(bytes(r.salt), bytes(r.stored_key),
                                                                bytes(r.server_key), r.iterations)
        elif record_type == REMOVE_USER_SCRAM_CREDENTIAL:
            self.scram.pop((r.name, r.mechanism), None)
        elif record_type == CLIENT_QUOTA:
            e = quotas.entity((d.entity_type, d.entity_name) for d in r.entity)
            values = self.client_quotas.setdefault(e, {})
            if r.remove:
                values.pop(r.key, None)
                if not values:
                    del self.client_quotas[e]
            else:
                values[r.key] = r.value
        elif record_type == PRODUCER_IDS:
            self.next_producer_id = max(self.next_producer_id, r.next_producer_id)
        elif record_type == FEATURE_LEVEL:      # FeaturesDelta.replay: level 0 removes the feature
            if r.feature_level:
                self.features[r.name] = r.feature_level
            else:
                self.features.pop(r.name, None)
        elif record_type == PARTITION:
            name = self.names[r.topic_id]
            self.topics[name].partitions[r.partition_id] = PartitionRegistration(
                tuple(r.replicas), tuple(r.isr), r.leader, r.leader_epoch, r.partition_epoch,
                tuple(r.adding_replicas or ()), tuple(r.removing_replicas or ()),
                tuple(r.eligible_leader_replicas or ()), tuple(r.last_known_elr or ()))
            return name, r.partition_id
        elif record_type == PARTITION_CHANGE:
            name = self.names[r.topic_id]
            t = self.topics[name]
            old = t.partitions[r.partition_id]
            leader = old.leader if r.leader == LEADER_UNCHANGED else r.leader
            # PartitionRegistration.merge: the partition epoch on any change, the leader epoch
            # whenever the record names a leader (the same one too: a reassignment's bump);
            # null lists are unchanged
            t.partitions[r.partition_id] = PartitionRegistration(
                old.replicas if r.replicas is None else tuple(r.replicas),
                old.isr if r.isr is None else tuple(r.isr), leader,
                old.leader_epoch + (r.leader != LEADER_UNCHANGED), old.partition_epoch + 1,
                old.adding if r.adding_replicas is None else tuple(r.adding_replicas),
                old.removing if r.removing_replicas is None else tuple(r.removing_replicas),
                old.elr if r.eligible_leader_replicas is None else tuple(r.eligible_leader_replicas),
                old.last_known_elr if r.last_known_elr is None else tuple(r.last_known_elr))
            return name, r.partition_id
        return None


def change_record(topic_id: uuid.UUID, partition: int, old: PartitionRegistration,
                  new: PartitionRegistration) -> tuple[int, dict]:
    """The PartitionChangeRecord from ``old`` to ``new`` (PartitionChangeBuilder.build): the
    leader named when it changes or the leader epoch bumps."""
    def changed(a: tuple[int, ...], b: tuple[int, ...]) -> list[int] | None:
        return list(b) if a != b else None

    return PARTITION_CHANGE, {
        "partition_id": partition, "topic_id": topic_id,
        "isr": changed(old.isr, new.isr),
        "leader": new.leader if new.leader != old.leader or new.leader_epoch != old.leader_epoch
        else LEADER_UNCHANGED,
        "replicas": changed(old.replicas, new.replicas),
        "removing_replicas": changed(old.removing, new.removing),
        "adding_replicas": changed(old.adding, new.adding),
        "eligible_leader_replicas": changed(old.elr, new.elr),
        "last_known_elr": changed(old.last_known_elr, new.last_known_elr),
        "leader_recovery_state": -1}


def partition_record(topic_id: uuid.UUID, partition: int, reg: PartitionRegistration) -> tuple[int, dict]:
    return PARTITION, {"partition_id": partition, "topic_id": topic_id, "replicas": list(reg.replicas),
                       "isr": list(reg.isr), "removing_replicas": list(reg.removing),
                       "adding_replicas": list(reg.adding),
                       "leader": reg.leader, "leader_recovery_state": 0, "leader_epoch": reg.leader_epoch,
                       "partition_epoch": reg.partition_epoch,
                       # no directory assigned (DirectoryId.UNASSIGNED): kproto's brokers register no log dirs
                       "directories": [uuid.UUID(int=0)] * len(reg.replicas),
                       "eligible_leader_replicas": list(reg.elr), "last_known_elr": list(reg.last_known_elr)}


def acl_record(acl_id: uuid.UUID, b: AclBinding) -> tuple[int, dict]:
    return ACCESS_CONTROL_ENTRY, {
        "id": acl_id, "resource_type": b.pattern.resource_type, "resource_name": b.pattern.name,
        "pattern_type": b.pattern.pattern_type, "principal": b.entry.principal, "host": b.entry.host,
        "operation": b.entry.operation, "permission_type": b.entry.permission_type}


def quota_records(old: dict[quotas.Entity, dict[str, float]],
                  changes: dict[quotas.Entity, dict[str, float]]) -> list[tuple[int, dict]]:
    """A ClientQuotaRecord per key an entity's new values set, changed or dropped."""
    out = []
    for e, new in changes.items():
        before = old.get(e, {})
        entity = [{"entity_type": t, "entity_name": n} for t, n in e]
        out += [(CLIENT_QUOTA, {"entity": entity, "key": k, "value": v, "remove": False})
                for k, v in new.items() if before.get(k) != v]
        out += [(CLIENT_QUOTA, {"entity": entity, "key": k, "value": 0.0, "remove": True})
                for k in before if k not in new]
    return out


def records_batch(records: list[tuple[int, dict]], *, leader_epoch: int, base_offset: int = 0,
                  timestamp: int | None = None) -> bytes:
    """One batch of framed metadata records, as the controller appends a change atomically
    (a snapshot: at its offset, stamped with its last contained log time)."""
    return build_record_batch([NewRecord(None, build_metadata_record(t, VERSIONS[t], data), timestamp=timestamp)
                               for t, data in records], partition_leader_epoch=leader_epoch, base_offset=base_offset)


def iter_records(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(offset, record type, record) of each metadata record in ``data`` (whole batches)."""
    for batch in iter_batches(data, verify_crc=False):
        if not isinstance(batch, RecordBatch) or batch.is_control:
            continue
        for rec in batch.records():
            record_type, _, r = parse_metadata_record(bytes(rec.value))
            yield rec.offset, record_type, r


__all__ += ["change_record", "partition_record", "acl_record", "NO_LEADER", "PRODUCER_IDS", "CLIENT_QUOTA", "USER_SCRAM_CREDENTIAL", "REMOVE_USER_SCRAM_CREDENTIAL", "quota_records", "ACCESS_CONTROL_ENTRY",
            "REMOVE_ACCESS_CONTROL_ENTRY"]


def batches_below(data: bytes, end: int) -> tuple[bytes, int | None, int]:
    """The whole batches of ``data`` whose last offset is below ``end`` (what a broker may
    apply: committed records only), the offset after them (None: none) and the leader
    epoch of the last (-1: none). RecordBatch v2 header: base offset, length, leader epoch,
    magic, crc, attributes, last offset delta."""
    pos, after, epoch = 0, None, -1
    while pos + 27 <= len(data):
        base, length, leader_epoch = struct.unpack_from(">qii", data, pos)
        last = base + struct.unpack_from(">i", data, pos + 23)[0]
        if pos + 12 + length > len(data) or last >= end:
            break
        pos, after, epoch = pos + 12 + length, last + 1, leader_epoch
    return data[:pos], after, epoch


__all__ += ["batches_below"]
