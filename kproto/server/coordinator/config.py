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

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
