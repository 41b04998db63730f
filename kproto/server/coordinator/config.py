"""The group coordinator's broker settings, under Kafka's names, Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CoordinatorConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2**31 - 1
    group_initial_rebalance_delay_ms: int = 3_000
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs (a constant there): how long a
    # member that joined but never completed a rebalance may stay parked.
    new_member_join_timeout_ms: int = 300_000
    # KIP-848 consumer groups (GroupCoordinatorConfig)
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_min_session_timeout_ms: int = 45_000
    consumer_group_max_session_timeout_ms: int = 60_000
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_min_heartbeat_interval_ms: int = 5_000
    consumer_group_max_heartbeat_interval_ms: int = 15_000
    consumer_group_max_size: int = 2**31 - 1
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")    # the first is the default
    consumer_group_migration_policy: str = "bidirectional"
    # KIP-1071 streams groups (GroupCoordinatorConfig, Kafka 4.4 defaults)
    streams_group_session_timeout_ms: int = 45_000
    streams_group_min_session_timeout_ms: int = 45_000
    streams_group_max_session_timeout_ms: int = 60_000
    streams_group_heartbeat_interval_ms: int = 5_000
    streams_group_min_heartbeat_interval_ms: int = 5_000
    streams_group_max_heartbeat_interval_ms: int = 15_000
    streams_group_max_size: int = 2**31 - 1
    streams_group_num_standby_replicas: int = 0
    streams_group_max_standby_replicas: int = 2
    streams_group_task_offset_interval_ms: int = 60_000
    streams_group_acceptable_recovery_lag: int = 10_000
    streams_group_initial_rebalance_delay_ms: int = 3_000
    streams_group_assignment_interval_ms: int = 1_000
    streams_group_min_assignment_interval_ms: int = 0
    streams_group_max_assignment_interval_ms: int = 15_000
    streams_group_min_task_offset_interval_ms: int = 15_000
    streams_group_num_warmup_replicas: int = 2
    streams_group_max_warmup_replicas: int = 20
    streams_group_rack_aware_assignment_tags: tuple[str, ...] = ()
    streams_group_assignor_offload_enable: bool = True
    streams_group_assignors: tuple[str, ...] = ("sticky",)     # the first is the default

    def __post_init__(self) -> None:
        """GroupCoordinatorConfig's checks (Utils.require), with its messages."""
        def require(ok: bool, message: str) -> None:
            if not ok:
                raise ValueError(message)

        s, h = "group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms"
        require(self.consumer_group_max_session_timeout_ms >= self.consumer_group_min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms must be greater than or equal to "
                "group.consumer.min.session.timeout.ms")
        require(self.consumer_group_session_timeout_ms >= self.consumer_group_min_session_timeout_ms,
                f"{s} must be greater than or equal to group.consumer.min.session.timeout.ms")
        require(self.consumer_group_session_timeout_ms <= self.consumer_group_max_session_timeout_ms,
                f"{s} must be less than or equal to group.consumer.max.session.timeout.ms")
        require(self.consumer_group_max_heartbeat_interval_ms >= self.consumer_group_min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
                "group.consumer.min.heartbeat.interval.ms")
        require(self.consumer_group_heartbeat_interval_ms >= self.consumer_group_min_heartbeat_interval_ms,
                f"{h} must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
        require(self.consumer_group_heartbeat_interval_ms <= self.consumer_group_max_heartbeat_interval_ms,
                f"{h} must be less than or equal to group.consumer.max.heartbeat.interval.ms")
        require(self.consumer_group_heartbeat_interval_ms < self.consumer_group_session_timeout_ms,
                f"{h} must be less than {s}")
        require(bool(self.consumer_group_assignors), "group.consumer.assignors must not be empty")
        for name in self.consumer_group_assignors:
            require(name in ("uniform", "range"),
                    f"Invalid value {name} for configuration group.consumer.assignors: "
                    "Class " + name + " cannot be found")
        require(self.consumer_group_migration_policy.lower() in ("disabled", "upgrade", "downgrade", "bidirectional"),
                f"Invalid value {self.consumer_group_migration_policy} for configuration "
                "group.consumer.migration.policy: String must be one of (case insensitive): "
                "DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL")

        for kind in ("session.timeout.ms", "heartbeat.interval.ms"):
            attr = "streams_group_" + kind.replace(".", "_")
            low, high = getattr(self, attr.replace("group_", "group_min_", 1)), \
                getattr(self, attr.replace("group_", "group_max_", 1))
            require(high >= low, f"group.streams.max.{kind} must be greater than or equal to "
                                 f"group.streams.min.{kind}")
            require(getattr(self, attr) >= low, f"group.streams.{kind} must be greater than or equal to "
                                                f"group.streams.min.{kind}")
            require(getattr(self, attr) <= high, f"group.streams.{kind} must be less than or equal to "
                                                 f"group.streams.max.{kind}")
        require(self.streams_group_heartbeat_interval_ms < self.streams_group_session_timeout_ms,
                "group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms")
        require(self.streams_group_num_standby_replicas <= self.streams_group_max_standby_replicas,
                "group.streams.num.standby.replicas must be less than or equal to "
                "group.streams.max.standby.replicas")
        tags = self.streams_group_rack_aware_assignment_tags
        require(len(set(tags)) == len(tags),
                "group.streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
        # GroupCoordinatorConfig.streamsGroupAssignors: kproto has Kafka's one built-in assignor
        for name in self.streams_group_assignors:
            require(name == "sticky", f"Invalid value {name} for configuration group.streams.assignors: "
                                      "Class cannot be found")
        require(bool(self.streams_group_assignors), "group.streams.assignors must not be empty")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
