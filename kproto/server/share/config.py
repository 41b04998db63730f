"""The ``group.share.*`` and ``share.coordinator.*`` broker configs the share
coordinator reads, with Kafka's defaults and bounds (ShareGroupConfig,
ShareCoordinatorConfig, Kafka 4.4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kproto.errors import InvalidConfigError

__all__ = ["SHARE_CONFIGS", "ShareConfig", "share_config"]

#: name -> (default, lowest, highest): Kafka's ConfigDef ranges
SHARE_CONFIGS: dict[str, tuple[int, int, int]] = {
    "group.share.record.lock.duration.ms": (30000, 1000, 3600000),
    "group.share.min.record.lock.duration.ms": (15000, 1000, 3600000),
    "group.share.max.record.lock.duration.ms": (60000, 1000, 3600000),
    "group.share.delivery.count.limit": (5, 2, 10),
    "group.share.min.delivery.count.limit": (2, 2, 10),
    "group.share.max.delivery.count.limit": (10, 2, 10),
    "group.share.partition.max.record.locks": (2000, 100, 10000),
    "group.share.session.timeout.ms": (45000, 1, 2**31 - 1),
    "group.share.min.session.timeout.ms": (45000, 1, 2**31 - 1),
    "group.share.max.session.timeout.ms": (60000, 1, 2**31 - 1),
    "group.share.heartbeat.interval.ms": (5000, 1, 2**31 - 1),
    "group.share.min.heartbeat.interval.ms": (5000, 1, 2**31 - 1),
    "group.share.max.heartbeat.interval.ms": (15000, 1, 2**31 - 1),
    "group.share.max.size": (200, 1, 1000),
    "share.coordinator.state.topic.num.partitions": (50, 1, 2**31 - 1),
    "share.coordinator.state.topic.segment.bytes": (104857600, 1, 2**31 - 1),
    # a cluster's __share_group_state (ShareCoordinatorConfig; one node keeps it unreplicated)
    "share.coordinator.state.topic.replication.factor": (3, 1, 2**15 - 1),
    "share.coordinator.snapshot.update.records.per.snapshot": (500, 0, 500),
}

# value config -> (its min config, its max config): ShareGroupConfig's cross checks
_BETWEEN = {
    "group.share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                            "group.share.max.record.lock.duration.ms"),
    "group.share.delivery.count.limit": ("group.share.min.delivery.count.limit",
                                         "group.share.max.delivery.count.limit"),
    "group.share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "group.share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms",
                                          "group.share.max.heartbeat.interval.ms"),
}


@dataclass(frozen=True)
class ShareConfig:
    record_lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 200
    state_topic_num_partitions: int = 50
    snapshot_update_records_per_snapshot: int = 500
    auto_offset_reset: str = "latest"       # the group config share.auto.offset.reset's default


def check(values: dict[str, Any]) -> None:
    """Kafka's range checks, and each value within its min/max config; an InvalidConfigError."""
    for name, (_, lo, hi) in SHARE_CONFIGS.items():
        v = values[name]
        if not lo <= v <= hi:
            raise InvalidConfigError(f"Invalid value {v} for configuration {name}: Value must be "
                                     + (f"at least {lo}" if v < lo else f"no more than {hi}"))
    for name, (lo_name, hi_name) in _BETWEEN.items():
        if values[name] < values[lo_name]:
            raise InvalidConfigError(f"{name} must be greater than or equal to {lo_name}")
        if values[name] > values[hi_name]:
            raise InvalidConfigError(f"{name} must be less than or equal to {hi_name}")


def share_config(values: dict[str, Any]) -> ShareConfig:
    check(values)
    return ShareConfig(
        record_lock_duration_ms=values["group.share.record.lock.duration.ms"],
        delivery_count_limit=values["group.share.delivery.count.limit"],
        partition_max_record_locks=values["group.share.partition.max.record.locks"],
        session_timeout_ms=values["group.share.session.timeout.ms"],
        heartbeat_interval_ms=values["group.share.heartbeat.interval.ms"],
        max_size=values["group.share.max.size"],
        state_topic_num_partitions=values["share.coordinator.state.topic.num.partitions"],
        snapshot_update_records_per_snapshot=values["share.coordinator.snapshot.update.records.per.snapshot"])
