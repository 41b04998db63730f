"""The admin layer the CLI tools use: one method per Kafka admin call, each
building the request body from Kafka's field names and handing back
immutable NamedTuples (a tenth of a frozen dataclass's cost to define, which
a command pays at every start, and cheaper to build by the thousand). Versions are whatever ``BrokerClient`` negotiated; fields a
version lacks are left out by the schema, so one body serves every version.

Per-item errors come back as ``ErrorCode`` values for the caller to phrase
(the tools print Kafka's own messages); request-level failures raise.
"""

from __future__ import annotations

import time
import uuid
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, NamedTuple, TypeVar

from kproto.client.transport import BrokerClient
from kproto.common import CLUSTER_METADATA_TOPIC_NAME
from kproto.errors import ErrorCode, KafkaError, error_for

METADATA, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 3, 2, 8, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 15, 16, 19, 20, 21
CONSUMER_GROUP_DESCRIBE = 69
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, DELETE_GROUPS = 32, 33, 35, 37, 42
INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE = 44, 47
API_VERSIONS, DESCRIBE_QUORUM, UPDATE_FEATURES = 18, 55, 57
SHARE_GROUP_DESCRIBE, DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = 77, 90, 91, 92
STREAMS_GROUP_DESCRIBE = 89
DESCRIBE_CLUSTER, UNREGISTER_BROKER = 60, 64

T = TypeVar("T")
TIMEOUT_MS = 30_000
RETRY_BACKOFF_S = 0.1             # CommonClientConfigs retry.backoff.ms default
COORDINATOR_RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                   ErrorCode.NOT_COORDINATOR})
#: ListOffsets special timestamps.
LATEST, EARLIEST = -1, -2
#: ConfigEntry.ConfigSource values (DescribeConfigs v1+).
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}

TopicPartition = tuple[str, int]


def code(value: int) -> ErrorCode:
    """An error code off the wire; one kproto does not know is UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


# --- what callers hold ----------------------------------------------------------------

class BrokerNode(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None = None


class PartitionMetadata(NamedTuple):
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    error: ErrorCode


class TopicMetadata(NamedTuple):
    name: str
    error: ErrorCode
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[PartitionMetadata, ...]


class ClusterMetadata(NamedTuple):
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerNode, ...]
    topics: Mapping[str, TopicMetadata]


class NewTopic(NamedTuple):
    name: str
    num_partitions: int = -1                 # -1: the broker's num.partitions
    replication_factor: int = -1             # -1: default.replication.factor
    assignments: Mapping[int, list[int]] | None = None
    configs: Mapping[str, str] = MappingProxyType({})


class TopicResult(NamedTuple):
    name: str
    error: ErrorCode
    message: str | None = None


class DeletedRecords(NamedTuple):
    error: ErrorCode
    low_watermark: int                       # the partition's new log start offset; -1 on error


class ConfigResource(NamedTuple):
    type: int                                # 2 topic, 4 broker, 8 broker logger
    name: str


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int                              # ConfigSource; -1 unknown (v0)
    read_only: bool
    is_sensitive: bool
    is_default: bool


class ConfigsResult(NamedTuple):
    resource: ConfigResource
    error: ErrorCode
    message: str | None
    entries: tuple[ConfigEntry, ...]


class AlterConfigOp(NamedTuple):
    name: str
    op: str                                  # set | delete | append | subtract
    value: str | None = None


class ListedOffset(NamedTuple):
    error: ErrorCode
    offset: int
    timestamp: int
    leader_epoch: int = -1


class Coordinator(NamedTuple):
    node_id: int
    host: str
    port: int


class OffsetAndMetadata(NamedTuple):
    offset: int
    metadata: str | None = ""
    leader_epoch: int = -1
    error: ErrorCode = ErrorCode.NONE


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    state: str | None                        # None before ListGroups v4
    group_type: str | None = None            # classic, consumer, share ...; None before ListGroups v5


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes                        # the consumer protocol's bytes (DescribeGroups)
    # A KIP-848 member (ConsumerGroupDescribe): its epoch and its partitions, current and target.
    member_epoch: int | None = None
    assigned: tuple[TopicPartition, ...] | None = None
    target: tuple[TopicPartition, ...] | None = None


class GroupDescription(NamedTuple):
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str                            # a consumer group's: its assignor
    members: tuple[MemberDescription, ...]
    error_message: str | None = None
    group_type: str = "classic"              # "consumer": described by ConsumerGroupDescribe
    group_epoch: int | None = None
    assignment_epoch: int | None = None


class ReplicaInfo(NamedTuple):
    size: int
    offset_lag: int
    is_future: bool


class FeatureMetadata(NamedTuple):
    """Admin.describeFeatures: supported (min, max) and finalized max level per feature; epoch or None."""
    supported: Mapping[str, tuple[int, int]]
    finalized: Mapping[str, int]
    epoch: int | None


class LogDirDescription(NamedTuple):
    error: ErrorCode
    replicas: Mapping[TopicPartition, ReplicaInfo]   # in the broker's answer order
    total_bytes: int = -1                            # -1: not given (before v4)
    usable_bytes: int = -1


def _group_by_topic(items: Iterable[tuple[TopicPartition, object]]) -> dict[str, list[tuple[int, object]]]:
    out: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), value in items:
        out.setdefault(topic, []).append((partition, value))
    return out


# --- the calls --------------------------------------------------------------------------

class Admin:
    """Admin calls over one ``BrokerClient`` (group calls go to the group's
    coordinator, which may be another connection)."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self._coordinators: dict[str, BrokerClient] = {}

    def supports(self, api_key: int) -> bool:
        return self.client.supports(api_key)

    def close(self) -> None:
        for c in self._coordinators.values():
            if c is not self.client:
                c.close()
        self._coordinators.clear()

    # -- metadata ---------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None, *,
                 allow_auto_topic_creation: bool = False) -> ClusterMetadata:
        """Every topic (``topics=None``) or the named ones."""
        version = self.client.version(METADATA)
        if topics is None:
            wanted = [] if version == 0 else None
        else:
            wanted = [{"name": t} for t in topics]
        body = self.client.request(METADATA, {"topics": wanted,
                                              "allow_auto_topic_creation": allow_auto_topic_creation})
        brokers = tuple(BrokerNode(b.node_id, b.host, b.port, b.get("rack")) for b in body.brokers)
        out = {}
        for t in body.topics:
            tid = t.get("topic_id")
            out[t.name] = TopicMetadata(
                t.name, code(t.error_code), tid if tid is not None and tid.int else None,
                bool(t.get("is_internal", False)),
                tuple(PartitionMetadata(p.partition_index, p.leader_id, p.get("leader_epoch", -1),
                                        tuple(p.replica_nodes), tuple(p.isr_nodes),
                                        tuple(p.get("offline_replicas") or ()), code(p.error_code))
                      for p in sorted(t.partitions, key=lambda p: p.partition_index)))
        return ClusterMetadata(body.get("cluster_id"), body.get("controller_id", -1), brokers, out)

    # -- topics -----------------------------------------------------------------

    def create_topics(self, topics: Iterable[NewTopic], *, validate_only: bool = False,
                      timeout_ms: int = TIMEOUT_MS) -> dict[str, TopicResult]:
        wanted = [{
            "name": t.name, "num_partitions": t.num_partitions if not t.assignments else -1,
            "replication_factor": t.replication_factor if not t.assignments else -1,
            "assignments": [{"partition_index": p, "broker_ids": list(b)}
                            for p, b in sorted((t.assignments or {}).items())],
            "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
        } for t in topics]
        body = self.client.request(CREATE_TOPICS, {"topics": wanted, "timeout_ms": timeout_ms,
                                                   "validate_only": validate_only})
        return {t.name: TopicResult(t.name, code(t.error_code), t.get("error_message"))
                for t in body.topics}

    def delete_topics(self, names: Iterable[str], *, timeout_ms: int = TIMEOUT_MS) -> dict[str, TopicResult]:
        names = list(names)
        body = self.client.request(DELETE_TOPICS, {
            "topic_names": names, "topics": [{"name": n} for n in names], "timeout_ms": timeout_ms})
        return {r.name: TopicResult(r.name, code(r.error_code), r.get("error_message"))
                for r in body.responses}

    def create_partitions(self, counts: Mapping[str, int], *,
                          assignments: Mapping[str, list[list[int]]] | None = None,
                          validate_only: bool = False, timeout_ms: int = TIMEOUT_MS) -> dict[str, TopicResult]:
        """Grow each topic to ``counts[topic]`` partitions; ``assignments`` are
        the replica lists of the new partitions only."""
        wanted = [{"name": n, "count": c,
                   "assignments": None if not assignments or n not in assignments else
                   [{"broker_ids": list(b)} for b in assignments[n]]}
                  for n, c in counts.items()]
        body = self.client.request(CREATE_PARTITIONS, {"topics": wanted, "timeout_ms": timeout_ms,
                                                       "validate_only": validate_only})
        return {r.name: TopicResult(r.name, code(r.error_code), r.get("error_message")) for r in body.results}

    # -- configs ----------------------------------------------------------------

    def describe_configs(self, resources: Iterable[ConfigResource], *,
                         keys: Iterable[str] | None = None) -> dict[ConfigResource, ConfigsResult]:
        resources = list(resources)
        body = self.client.request(DESCRIBE_CONFIGS, {"resources": [
            {"resource_type": r.type, "resource_name": r.name,
             "configuration_keys": None if keys is None else list(keys)} for r in resources],
            "include_synonyms": False, "include_documentation": False})
        v0 = self.client.version(DESCRIBE_CONFIGS) == 0
        out = {}
        for r in body.results:
            resource = ConfigResource(r.resource_type, r.resource_name)
            if v0:
                entries = [ConfigEntry(c["name"], c["value"], -1, c["read_only"], c["is_sensitive"],
                                       c["is_default"]) for c in r.configs]
            else:   # item access: Container attributes cost a Python call each (many entries)
                entries = [ConfigEntry(c["name"], c["value"], c["config_source"], c["read_only"],
                                       c["is_sensitive"], c["config_source"] == DEFAULT_CONFIG)
                           for c in r.configs]
            out[resource] = ConfigsResult(resource, code(r.error_code), r.get("error_message"), tuple(entries))
        return out

    def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]], *,
                                  validate_only: bool = False) -> dict[ConfigResource, tuple[ErrorCode, str | None]]:
        body = self.client.request(INCREMENTAL_ALTER_CONFIGS, {"resources": [
            {"resource_type": r.type, "resource_name": r.name,
             "configs": [{"name": op.name, "config_operation": _OPS[op.op], "value": op.value} for op in ops]}
            for r, ops in changes.items()], "validate_only": validate_only})
        return self._alter_results(body)

    def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str]], *,
                      validate_only: bool = False) -> dict[ConfigResource, tuple[ErrorCode, str | None]]:
        """The legacy call: each resource's dynamic configs are **replaced** by ``configs``."""
        body = self.client.request(ALTER_CONFIGS, {"resources": [
            {"resource_type": r.type, "resource_name": r.name,
             "configs": [{"name": k, "value": v} for k, v in values.items()]}
            for r, values in configs.items()], "validate_only": validate_only})
        return self._alter_results(body)

    @staticmethod
    def _alter_results(body) -> dict[ConfigResource, tuple[ErrorCode, str | None]]:
        return {ConfigResource(r.resource_type, r.resource_name): (code(r.error_code), r.get("error_message"))
                for r in body.responses}

    # -- offsets ----------------------------------------------------------------

    def list_offsets(self, timestamps: Mapping[TopicPartition, int], *,
                     isolation_level: int = 0) -> dict[TopicPartition, ListedOffset]:
        """``timestamps[tp]`` is a time in ms, ``LATEST`` or ``EARLIEST``."""
        topics = [{"name": t, "partitions": [{"partition_index": p, "timestamp": ts, "current_leader_epoch": -1,
                                              "max_num_offsets": 1} for p, ts in parts]}
                  for t, parts in _group_by_topic(timestamps.items()).items()]
        v0 = self.client.version(LIST_OFFSETS) == 0
        body = self.client.request(LIST_OFFSETS, {"replica_id": -1, "isolation_level": isolation_level,
                                                  "topics": topics, "timeout_ms": TIMEOUT_MS})
        out = {}
        for t in body.topics:
            for p in t.partitions:
                if v0:                                      # v0: a list of offsets
                    offset = p.old_style_offsets[0] if p.old_style_offsets else -1
                else:
                    offset = p.offset
                out[(t.name, p.partition_index)] = ListedOffset(
                    code(p.error_code), offset, p.get("timestamp", -1), p.get("leader_epoch", -1))
        return out

    def delete_records(self, offsets: Mapping[TopicPartition, int], *,
                       timeout_ms: int = TIMEOUT_MS) -> dict[TopicPartition, DeletedRecords]:
        """Delete the records below ``offsets[tp]`` (-1: below the high watermark)."""
        topics = [{"name": t, "partitions": [{"partition_index": p, "offset": o} for p, o in parts]}
                  for t, parts in _group_by_topic(offsets.items()).items()]
        body = self.client.request(DELETE_RECORDS, {"topics": topics, "timeout_ms": timeout_ms})
        return {(t.name, p.partition_index): DeletedRecords(code(p.error_code), p.low_watermark)
                for t in body.topics for p in t.partitions}

    def describe_log_dirs(self, broker: BrokerNode) -> dict[str, LogDirDescription]:
        """DescribeLogDirs of every partition, sent to ``broker`` (Kafka's Admin asks
        each broker itself): log directory -> its description. A request-level error raises."""
        client = self.client.connect_to(broker.host, broker.port)
        try:
            body = client.request(DESCRIBE_LOG_DIRS, {"topics": None})
        finally:
            if client is not self.client:
                client.close()
        if body.get("error_code", 0) != ErrorCode.NONE:
            raise error_for(body.error_code)
        return {r.log_dir: LogDirDescription(
            code(r.error_code),
            {(t.name, p.partition_index): ReplicaInfo(p.partition_size, p.offset_lag, p.is_future_key)
             for t in r.topics for p in t.partitions},
            r.get("total_bytes", -1), r.get("usable_bytes", -1)) for r in body.results}

    def describe_features(self) -> FeatureMetadata:
        """ApiVersions' feature fields (KafkaAdminClient.describeFeatures asks one broker)."""
        body = self.client.request(API_VERSIONS, {"client_software_name": "kproto", "client_software_version": "1"})
        if body.error_code != ErrorCode.NONE:
            raise error_for(body.error_code)
        epoch = body.get("finalized_features_epoch", -1)
        return FeatureMetadata({f.name: (f.min_version, f.max_version) for f in body.get("supported_features") or []},
                               {f.name: f.max_version_level for f in body.get("finalized_features") or []},
                               epoch if epoch >= 0 else None)

    def update_features(self, updates: Mapping[str, tuple[int, int]], *, validate_only: bool = False,
                        timeout_ms: int = TIMEOUT_MS) -> dict[str, KafkaError | None]:
        """UpdateFeatures of name -> (level, upgrade type): each feature's error or None, as
        KafkaAdminClient.updateFeatures completes its futures (a top-level error fails every one)."""
        body = self.client.request(UPDATE_FEATURES, {
            "timeout_ms": timeout_ms, "validate_only": validate_only,
            "feature_updates": [{"feature": name, "max_version_level": level, "upgrade_type": kind,
                                 "allow_downgrade": kind != 1} for name, (level, kind) in updates.items()]})
        if body.error_code != ErrorCode.NONE:
            return {name: error_for(body.error_code, body.error_message) for name in updates}
        by_name = {r.feature: r for r in body.get("results") or []}
        return {name: (error_for(by_name[name].error_code, by_name[name].error_message)
                       if name in by_name and by_name[name].error_code else None) for name in updates}

    def describe_quorum(self):
        """DescribeQuorum of ``__cluster_metadata-0``: the response body (a request-level error raises)."""
        body = self.client.request(DESCRIBE_QUORUM, {"topics": [
            {"topic_name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{"partition_index": 0}]}]})
        if body.error_code != ErrorCode.NONE:
            raise error_for(body.error_code, body.get("error_message") or None)
        partition = body.topics[0].partitions[0]
        if partition.error_code != ErrorCode.NONE:
            raise error_for(partition.error_code, partition.get("error_message") or None)
        return body

    def describe_cluster(self, *, include_fenced_brokers: bool = False):
        """DescribeCluster (KafkaAdminClient.describeCluster): the response body; fenced brokers
        listed too when asked (v2, KIP-1073). A request-level error raises."""
        body = self.client.request(DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False,
                                                      "endpoint_type": 1,
                                                      "include_fenced_brokers": include_fenced_brokers})
        if body.error_code != ErrorCode.NONE:
            raise error_for(body.error_code, body.get("error_message") or None)
        return body

    def unregister_broker(self, broker_id: int) -> None:
        """UnregisterBroker (KafkaAdminClient.unregisterBroker): raises the broker's error."""
        body = self.client.request(UNREGISTER_BROKER, {"broker_id": broker_id})
        if body.error_code != ErrorCode.NONE:
            raise error_for(body.error_code, body.get("error_message") or None)

    def find_coordinator(self, key: str, key_type: int = 0) -> Coordinator:
        body = self.client.request(FIND_COORDINATOR, {"key": key, "key_type": key_type,
                                                      "coordinator_keys": [key]})
        c = body.coordinators[0] if self.client.version(FIND_COORDINATOR) >= 4 else body
        if c.error_code != ErrorCode.NONE:
            raise error_for(c.error_code, c.get("error_message"))
        return Coordinator(c.node_id, c.host, c.port)

    def coordinator(self, group: str) -> Coordinator:
        """The group's coordinator. Kafka's AdminClient retries a retriable FindCoordinator
        error every retry.backoff.ms (100) within its timeout: a broker creating
        __consumer_offsets on the first group request answers COORDINATOR_NOT_AVAILABLE
        until the topic's partitions are led."""
        deadline = time.monotonic() + self.client.timeout_s
        while True:
            try:
                return self.find_coordinator(group)
            except KafkaError as e:
                if not e.retriable or time.monotonic() >= deadline:
                    raise
            time.sleep(RETRY_BACKOFF_S)

    def _coordinator(self, group: str) -> BrokerClient:
        if group not in self._coordinators:
            c = self.coordinator(group)
            self._coordinators[group] = self.client.connect_to(c.host, c.port)
        return self._coordinators[group]

    def forget_coordinator(self, group: str) -> None:
        """After NOT_COORDINATOR: find it again next time."""
        client = self._coordinators.pop(group, None)
        if client is not None and client is not self.client and client not in self._coordinators.values():
            client.close()

    def offset_commit(self, group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata], *,
                      generation_id: int = -1, member_id: str = "",
                      group_instance_id: str | None = None) -> dict[TopicPartition, ErrorCode]:
        """Commit as a simple (generation -1) committer unless a member is given."""
        topics = [{"name": t, "partitions": [
            {"partition_index": p, "committed_offset": o.offset, "committed_leader_epoch": o.leader_epoch,
             "committed_metadata": o.metadata, "commit_timestamp": -1} for p, o in parts]}
            for t, parts in _group_by_topic(offsets.items()).items()]
        def commit(client: BrokerClient) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
            body = client.request(OFFSET_COMMIT, {
                "group_id": group, "generation_id_or_member_epoch": generation_id, "member_id": member_id,
                "group_instance_id": group_instance_id, "retention_time_ms": -1, "topics": topics})
            errors = {(t.name, p.partition_index): code(p.error_code) for t in body.topics for p in t.partitions}
            # AlterConsumerGroupOffsetsHandler.handleError: a coordinator's error comes per partition
            return next((e for e in errors.values() if e in COORDINATOR_RETRIABLE), ErrorCode.NONE), errors
        return self._at_coordinator(group, commit)[1]

    def _at_coordinator(self, group: str, call: Callable[[BrokerClient], tuple[ErrorCode, T]]) -> tuple[ErrorCode, T]:
        """``call`` on the group's coordinator until it answers no coordinator error, as Kafka's
        Admin handlers do (ListConsumerGroupOffsetsHandler, AlterConsumerGroupOffsetsHandler): a
        loading coordinator is asked again, a moved or unavailable one looked up again, every
        retry.backoff.ms until the timeout; -> the last (error, result)."""
        deadline = time.monotonic() + self.client.timeout_s
        while True:
            error, result = call(self._coordinator(group))
            if error not in COORDINATOR_RETRIABLE or time.monotonic() >= deadline:
                return error, result
            if error != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                self.forget_coordinator(group)
            time.sleep(RETRY_BACKOFF_S)

    def offset_fetch(self, group: str, partitions: Iterable[TopicPartition] | None = None
                     ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Committed offsets of ``group`` (all of them when ``partitions`` is None).
        A group-level error raises; -1 offsets (nothing committed) are left out."""
        if partitions is None:
            topics = None
        else:
            topics = [{"name": t, "partition_indexes": [p for p, _ in parts]}
                      for t, parts in _group_by_topic((tp, None) for tp in partitions).items()]
        def fetch(client: BrokerClient) -> tuple[ErrorCode, Any]:
            if topics is None and client.version(OFFSET_FETCH) < 2:
                raise KafkaError("the broker's OffsetFetch cannot list all of a group's offsets (v2+ needed)",
                                 error_code=ErrorCode.UNSUPPORTED_VERSION)
            body = client.request(OFFSET_FETCH, {
                "group_id": group, "topics": topics, "require_stable": False,
                "groups": [{"group_id": group, "topics": topics}]})
            if client.version(OFFSET_FETCH) >= 8:
                return code(body.groups[0].error_code), body.groups[0].topics
            return code(body.error_code), body.topics
        error, answer = self._at_coordinator(group, fetch)
        if error != ErrorCode.NONE:
            raise error_for(error)
        out = {}
        for t in answer:
            for p in t.partitions:
                if p.committed_offset < 0 and p.error_code == ErrorCode.NONE:
                    continue
                out[(t.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, p.metadata, p.get("committed_leader_epoch", -1), code(p.error_code))
        return out

    def delete_offsets(self, group: str, partitions: Iterable[TopicPartition]
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: the group-level error and each partition's. A group-level
        error is every partition's too, as Kafka's Admin fails each partition's
        future with it (DeleteConsumerGroupOffsetsHandler)."""
        partitions = list(dict.fromkeys(partitions))
        topics = [{"name": t, "partitions": [{"partition_index": p} for p, _ in parts]}
                  for t, parts in _group_by_topic((tp, None) for tp in partitions).items()]
        body = self._coordinator(group).request(OFFSET_DELETE, {"group_id": group, "topics": topics})
        top = code(body.error_code)
        if top != ErrorCode.NONE:
            return top, {tp: top for tp in partitions}
        answered = {(t.name, p.partition_index): code(p.error_code) for t in body.topics for p in t.partitions}
        return top, {tp: answered.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR) for tp in partitions}

    # -- groups -----------------------------------------------------------------

    def list_groups(self, types: Iterable[str] = ()) -> list[ListedGroup]:
        """``types``: ListGroups v5's filter (``Share``, ``Consumer``, ``Classic``)."""
        has_state = self.client.version(LIST_GROUPS) >= 4
        body = self.client.request(LIST_GROUPS, {"states_filter": [], "types_filter": list(types)})
        if body.error_code != ErrorCode.NONE:
            raise error_for(body.error_code)
        return sorted((ListedGroup(g.group_id, g.protocol_type, g.group_state if has_state else None,
                                   g.get("group_type")) for g in body.groups),
                      key=lambda g: g.group_id)

    def describe_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription]:
        out = {}
        for group in groups:
            body = self._coordinator(group).request(DESCRIBE_GROUPS, {
                "groups": [group], "include_authorized_operations": False})
            for g in body.groups:
                members = tuple(MemberDescription(m.member_id, m.get("group_instance_id"), m.client_id,
                                                  m.client_host, bytes(m.member_metadata),
                                                  bytes(m.member_assignment)) for m in g.members)
                out[g.group_id] = GroupDescription(g.group_id, code(g.error_code), g.group_state,
                                                   g.protocol_type, g.protocol_data, members,
                                                   g.get("error_message"))
        return out

    # -- streams groups (KIP-1071): a raw body, the tool reads what it prints ----------

    def describe_streams_group(self, group: str):
        """StreamsGroupDescribe of one group: its DescribedGroup."""
        body = self._coordinator(group).request(STREAMS_GROUP_DESCRIBE, {
            "group_ids": [group], "include_authorized_operations": False, "include_topology_description": False})
        return body.groups[0]

    # -- share groups (KIP-932): raw bodies, the tool reads what it prints --------------

    def describe_share_group(self, group: str):
        """ShareGroupDescribe of one group: its DescribedGroup."""
        body = self._coordinator(group).request(SHARE_GROUP_DESCRIBE, {
            "group_ids": [group], "include_authorized_operations": False})
        return body.groups[0]

    def list_share_group_offsets(self, group: str):
        """DescribeShareGroupOffsets of all the group's partitions: its response group."""
        body = self._coordinator(group).request(DESCRIBE_SHARE_GROUP_OFFSETS, {
            "groups": [{"group_id": group, "topics": None}]})
        return body.groups[0]

    def alter_share_group_offsets(self, group: str, offsets: Mapping[TopicPartition, int]):
        topics = [{"topic_name": t, "partitions": [{"partition_index": p, "start_offset": o} for p, o in parts]}
                  for t, parts in _group_by_topic(offsets.items()).items()]
        return self._coordinator(group).request(ALTER_SHARE_GROUP_OFFSETS, {"group_id": group, "topics": topics})

    def delete_share_group_offsets(self, group: str, topics: Iterable[str]):
        return self._coordinator(group).request(DELETE_SHARE_GROUP_OFFSETS, {
            "group_id": group, "topics": [{"topic_name": t} for t in topics]})


    def describe_consumer_groups(self, groups: Iterable[str]) -> dict[str, GroupDescription]:
        """Admin.describeConsumerGroups (DescribeConsumerGroupsHandler): ConsumerGroupDescribe
        first; a group it does not know (GROUP_ID_NOT_FOUND: none, or a classic group) or a
        broker without the API is asked again with DescribeGroups."""
        out, classic = {}, []
        for group in groups:
            if not self.supports(CONSUMER_GROUP_DESCRIBE):
                classic.append(group)
                continue
            body = self._coordinator(group).request(CONSUMER_GROUP_DESCRIBE, {
                "group_ids": [group], "include_authorized_operations": False})
            for g in body.groups:
                if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
                    classic.append(g.group_id)
                    continue
                members = tuple(MemberDescription(
                    m.member_id, m.instance_id, m.client_id, m.client_host, b"", b"", m.member_epoch,
                    *(tuple((t.topic_name, p) for t in a.topic_partitions for p in t.partitions)
                      for a in (m.assignment, m.target_assignment))) for m in g.members)
                out[g.group_id] = GroupDescription(g.group_id, code(g.error_code), g.group_state, "consumer",
                                                   g.assignor_name, members, g.error_message, "consumer",
                                                   g.group_epoch, g.assignment_epoch)
        out.update(self.describe_groups(classic) if classic else {})
        return out

    def delete_groups(self, groups: Iterable[str]) -> dict[str, ErrorCode]:
        out = {}
        for group in groups:
            body = self._coordinator(group).request(DELETE_GROUPS, {"groups_names": [group]})
            out.update({r.group_id: code(r.error_code) for r in body.results})
        return out
