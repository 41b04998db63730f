"""Broker configuration: Kafka's broker config names, defaults and types.

``kproto serve --config key=value`` takes Kafka's names. Broker-level
``log.*`` defaults (``log.segment.bytes``, ``log.retention.ms``...) become the
default ``LogConfig`` of every topic, as in Kafka's LogConfig.extractLogConfigMap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kproto.errors import InvalidConfigError
from kproto.security.config import SECURITY_CONFIGS, is_listener_config
from kproto.server.share.config import SHARE_CONFIGS
from kproto.topic_config import LogConfig

# Broker config -> topic config it sets the default of (ServerTopicConfigSynonyms, first synonym).
LOG_SYNONYMS = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.retention.bytes": "retention.bytes",
    "log.retention.ms": "retention.ms",
    "message.max.bytes": "max.message.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleanup.policy": "cleanup.policy",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "log.preallocate": "preallocate",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "log.message.downconversion.enable": "message.downconversion.enable",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "log.local.retention.ms": "local.retention.ms",
    "log.local.retention.bytes": "local.retention.bytes",
}

# Broker-only configs: name -> (default, type).
BROKER_CONFIGS: dict[str, tuple[Any, type]] = {
    "node.id": (1, int),
    "cluster.id": ("", str),
    "auto.create.topics.enable": (True, bool),
    "num.partitions": (1, int),
    "default.replication.factor": (1, int),
    # the rack a cluster's controller places replicas by (StripedReplicaPlacer); null: none
    "broker.rack": (None, str),
    # KRaft cluster membership (kproto.server.cluster.settings); empty process.roles: standalone
    "process.roles": ("", str),
    "controller.quorum.voters": ("", str),
    "controller.quorum.bootstrap.servers": ("", str),
    "controller.listener.names": ("", str),
    "inter.broker.listener.name": (None, str),
    "replica.lag.time.max.ms": (30000, int),
    "replica.fetch.wait.max.ms": (500, int),
    "replica.fetch.max.bytes": (1048576, int),
    "replica.fetch.response.max.bytes": (10485760, int),
    "replica.fetch.backoff.ms": (1000, int),
    "replica.high.watermark.checkpoint.interval.ms": (5000, int),
    "broker.session.timeout.ms": (9000, int),
    # KRaft snapshots (QuorumConfig / MetadataLoader's SnapshotEmitter triggers)
    "metadata.log.max.record.bytes.between.snapshots": (20971520, int),
    "metadata.log.max.snapshot.interval.ms": (3600000, int),
    "metadata.max.retention.bytes": (104857600, int),
    "metadata.max.retention.ms": (604800000, int),
    "metadata.log.segment.bytes": (1073741824, int),
    # the controller's preferred-leader balancing (QuorumController; KRaft ignores the percentage)
    "auto.leader.rebalance.enable": (True, bool),
    "leader.imbalance.check.interval.seconds": (300, int),
    "leader.imbalance.per.broker.percentage": (10, int),
    "broker.heartbeat.interval.ms": (2000, int),
    "socket.request.max.bytes": (104857600, int),
    "queued.max.request.bytes": (-1, int),
    "connections.max.idle.ms": (600000, int),
    "connection.failed.authentication.delay.ms": (100, int),
    "max.connections": (2**31 - 1, int),
    "telemetry.max.bytes": (1048576, int),      # KIP-714: largest PushTelemetry metrics accepted
    "max.connections.per.ip": (2**31 - 1, int),
    "max.connections.per.ip.overrides": ("", str),
    "offsets.topic.num.partitions": (50, int),
    "offsets.topic.replication.factor": (1, int),
    "offsets.topic.segment.bytes": (104857600, int),
    "offsets.retention.minutes": (10080, int),
    "offsets.retention.check.interval.ms": (600000, int),
    "group.initial.rebalance.delay.ms": (3000, int),
    "group.min.session.timeout.ms": (6000, int),
    "group.max.session.timeout.ms": (1800000, int),
    "group.max.size": (2**31 - 1, int),
    # KIP-848 consumer groups (GroupCoordinatorConfig, Kafka 4.x defaults)
    "group.consumer.session.timeout.ms": (45000, int),
    "group.consumer.min.session.timeout.ms": (45000, int),
    "group.consumer.max.session.timeout.ms": (60000, int),
    "group.consumer.heartbeat.interval.ms": (5000, int),
    "group.consumer.min.heartbeat.interval.ms": (5000, int),
    "group.consumer.max.heartbeat.interval.ms": (15000, int),
    "group.consumer.max.size": (2**31 - 1, int),
    "group.consumer.assignors": ("uniform,range", str),
    "group.consumer.migration.policy": ("bidirectional", str),
    # KIP-1071 streams groups (GroupCoordinatorConfig, Kafka 4.4 defaults)
    "group.streams.session.timeout.ms": (45000, int),
    "group.streams.min.session.timeout.ms": (45000, int),
    "group.streams.max.session.timeout.ms": (60000, int),
    "group.streams.heartbeat.interval.ms": (5000, int),
    "group.streams.min.heartbeat.interval.ms": (5000, int),
    "group.streams.max.heartbeat.interval.ms": (15000, int),
    "group.streams.max.size": (2**31 - 1, int),
    "group.streams.num.standby.replicas": (0, int),
    "group.streams.max.standby.replicas": (2, int),
    "group.streams.task.offset.interval.ms": (60000, int),
    "group.streams.acceptable.recovery.lag": (10000, int),
    "group.streams.initial.rebalance.delay.ms": (3000, int),
    "group.streams.assignment.interval.ms": (1000, int),
    "group.streams.min.assignment.interval.ms": (0, int),
    "group.streams.max.assignment.interval.ms": (15000, int),
    "group.streams.min.task.offset.interval.ms": (15000, int),
    "group.streams.num.warmup.replicas": (2, int),
    "group.streams.max.warmup.replicas": (20, int),
    "group.streams.rack.aware.assignment.tags": ("", str),
    "group.streams.assignor.offload.enable": (True, bool),
    "group.streams.assignors": ("sticky", str),
    # the transaction coordinator (TransactionStateManagerConfig, TransactionLogConfig)
    "transaction.max.timeout.ms": (900000, int),
    "transactional.id.expiration.ms": (604800000, int),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (10000, int),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (3600000, int),
    "transaction.state.log.num.partitions": (50, int),
    "transaction.state.log.segment.bytes": (104857600, int),
    "transaction.state.log.replication.factor": (1, int),     # as offsets.topic.replication.factor
    "log.retention.check.interval.ms": (300000, int),
    "log.flush.scheduler.interval.ms": (2**63 - 1, int),
    "log.cleaner.enable": (True, bool),
    "log.cleaner.backoff.ms": (15000, int),
    # kproto's own (Kafka has none): segment files held open, -1 = half of RLIMIT_NOFILE
    "log.max.open.files": (-1, int),
    "advertised.host": ("", str),
    "advertised.port": (0, int),
    # client quotas' rate windows (QuotaConfig; kproto/server/quotas.py)
    "quota.window.num": (11, int),
    "quota.window.size.seconds": (1, int),
    "controller.quota.window.num": (11, int),
    "controller.quota.window.size.seconds": (1, int),
    # replication throttles' rate windows (ReplicationQuotaManagerConfig)
    "replication.quota.window.num": (11, int),
    "replication.quota.window.size.seconds": (1, int),
    # Kafka's dynamic broker configs kproto has no use for: accepted, stored and
    # described with Kafka's defaults (DynamicBrokerConfig.AllDynamicConfigs).
    "num.io.threads": (8, int),
    "num.network.threads": (3, int),
    "num.replica.fetchers": (1, int),
    "num.recovery.threads.per.data.dir": (2, int),
    "background.threads": (10, int),
    "metric.reporters": ("org.apache.kafka.common.metrics.JmxReporter", str),
    "max.connection.creation.rate": (2**31 - 1, int),
    "log.cleaner.threads": (1, int),
    "log.cleaner.dedupe.buffer.size": (134217728, int),
    "log.cleaner.io.buffer.load.factor": (0.9, float),
    "log.cleaner.io.buffer.size": (524288, int),
    "log.cleaner.io.max.bytes.per.second": (1.7976931348623157e308, float),
    "producer.id.expiration.ms": (86400000, int),
    "transaction.partition.verification.enable": (True, bool),
    "remote.log.index.file.cache.total.size.bytes": (1073741824, int),
    "remote.fetch.max.wait.ms": (500, int),
    "remote.log.manager.copy.max.bytes.per.second": (2**63 - 1, int),
    "remote.log.manager.fetch.max.bytes.per.second": (2**63 - 1, int),
    "remote.list.offsets.request.timeout.ms": (30000, int),
    "principal.builder.class":
        ("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", str),
    "sasl.kerberos.service.name": (None, str),
    "sasl.kerberos.kinit.cmd": ("/usr/bin/kinit", str),
    "sasl.kerberos.ticket.renew.window.factor": (0.8, float),
    "sasl.kerberos.ticket.renew.jitter": (0.05, float),
    "sasl.kerberos.min.time.before.relogin": (60000, int),
    "sasl.kerberos.principal.to.local.rules": ("DEFAULT", str),
    "sasl.login.refresh.window.factor": (0.8, float),
    "sasl.login.refresh.window.jitter": (0.05, float),
    "sasl.login.refresh.min.period.seconds": (60, int),
    "sasl.login.refresh.buffer.seconds": (300, int),
    "ssl.provider": (None, str),
    "ssl.keymanager.algorithm": ("SunX509", str),
    "ssl.trustmanager.algorithm": ("PKIX", str),
    "ssl.secure.random.implementation": (None, str),
    "ssl.engine.factory.class": (None, str),
    # share groups (ShareGroupConfig, ShareCoordinatorConfig; kproto/server/share/config.py)
    **{name: (default, int) for name, (default, _, _) in SHARE_CONFIGS.items()},
    **SECURITY_CONFIGS,     # listeners, ssl.*, sasl.*, authorizer (kproto/security/config.py)
}

# Lower bounds Kafka's ConfigDef puts on broker configs (atLeast), where kproto checks them.
BROKER_MINIMUMS: dict[str, int] = {
    "connection.failed.authentication.delay.ms": 0,
    "group.consumer.session.timeout.ms": 1,
    "group.consumer.min.session.timeout.ms": 1,
    "group.consumer.max.session.timeout.ms": 1,
    "group.consumer.heartbeat.interval.ms": 1,
    "group.consumer.min.heartbeat.interval.ms": 1,
    "group.consumer.max.heartbeat.interval.ms": 1,
    "group.consumer.max.size": 1,
    "group.streams.session.timeout.ms": 1,
    "group.streams.min.session.timeout.ms": 1,
    "group.streams.max.session.timeout.ms": 1,
    "group.streams.heartbeat.interval.ms": 1,
    "group.streams.min.heartbeat.interval.ms": 1,
    "group.streams.max.heartbeat.interval.ms": 1,
    "group.streams.max.size": 1,
    "group.streams.num.standby.replicas": 0,
    "group.streams.max.standby.replicas": 0,
    "group.streams.task.offset.interval.ms": 1,
    "group.streams.acceptable.recovery.lag": 0,
    "group.streams.initial.rebalance.delay.ms": 0,
    "group.streams.assignment.interval.ms": 0,
    "group.streams.min.assignment.interval.ms": 0,
    "group.streams.max.assignment.interval.ms": 0,
    "group.streams.min.task.offset.interval.ms": 1,
    "group.streams.num.warmup.replicas": 0,
    "group.streams.max.warmup.replicas": 0,
    "quota.window.num": 1,
    "quota.window.size.seconds": 1,
    "controller.quota.window.num": 1,
    "controller.quota.window.size.seconds": 1,
    "replication.quota.window.num": 1,
    "replication.quota.window.size.seconds": 1,
}

# QuotaConfig.brokerQuotaConfigs (DynamicConfig.Broker): LONG bytes/s, at least 0, default
# Long.MAX_VALUE. Not KafkaConfig definitions: settable dynamically, described once set
# (ConfigHelper lists a broker's originals), as not read-only (Kafka 4.4 describes them so).
BROKER_QUOTA_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                        "replica.alter.log.dirs.io.max.bytes.per.second")


def broker_quota_value(name: str, raw: Any) -> int:
    """ConfigDef.parse of a broker quota config: Kafka's words for a bad value."""
    text = str(raw).strip()
    try:
        value = int(text)
    except ValueError:
        raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type LONG") from None
    if not -2**63 <= value < 2**63:
        raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type LONG")
    if value < 0:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Value must be at least 0")
    return value


def typed_value(name: str, kind: type, raw: Any) -> Any:
    """A broker config's string as its type (``kind`` from BROKER_CONFIGS)."""
    if not isinstance(raw, str):
        return raw
    try:
        if kind is bool:
            if raw.strip().lower() not in ("true", "false"):
                raise ValueError
            return raw.strip().lower() == "true"
        return kind(raw.strip()) if kind in (int, float) else raw
    except ValueError:
        raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                 f"Expected value to be a {'boolean' if kind is bool else 'number'}") from None


@dataclass(frozen=True)
class BrokerConfig:
    """Broker settings by Kafka name, and the topic defaults they imply."""

    values: dict[str, Any] = field(default_factory=dict)
    log_defaults: LogConfig = field(default_factory=LogConfig)
    overrides: dict[str, str] = field(default_factory=dict)   # as given, for DescribeConfigs

    @classmethod
    def from_props(cls, props: Mapping[str, str] | None = None) -> "BrokerConfig":
        props = dict(props or {})
        values = {name: default for name, (default, _) in BROKER_CONFIGS.items()}
        topic_props = {}
        for name, raw in props.items():
            if name in BROKER_CONFIGS:
                values[name] = typed_value(name, BROKER_CONFIGS[name][1], raw)
                if name in BROKER_MINIMUMS and values[name] < BROKER_MINIMUMS[name]:
                    raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                             f"Value must be at least {BROKER_MINIMUMS[name]}")
            elif name in BROKER_QUOTA_CONFIGS:
                values[name] = broker_quota_value(name, raw)
            elif is_listener_config(name):
                values[name] = raw
            elif name in LOG_SYNONYMS:
                topic_props[LOG_SYNONYMS[name]] = raw
            elif name.startswith("log.retention.") and name[len("log.retention."):] in ("hours", "minutes"):
                unit = 3600000 if name.endswith("hours") else 60000
                topic_props.setdefault("retention.ms", str(int(raw) * unit))
            else:
                raise InvalidConfigError(f"Unknown broker config name: {name}")
        return cls(values, LogConfig.from_props(topic_props), {k: str(v) for k, v in props.items()})

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def topic_default_sources(self) -> dict[str, str]:
        """topic config name -> the broker config that set its default (DescribeConfigs'
        DEFAULT_CONFIG vs STATIC_BROKER_CONFIG sources)."""
        return {LOG_SYNONYMS[k]: k for k in self.overrides if k in LOG_SYNONYMS}


def parse_config_args(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``key=value`` strings -> dict; a malformed item is an InvalidConfigError."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(f"expected key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out
