"""The group coordinator on the broker: ``GroupCoordinator`` (sans-I/O) driven
by the shared coordinator shell (kproto.server.runtime.shell) over
``__consumer_offsets``. The group APIs (``kproto.server.handlers.groups``)
translate wire bodies into its requests and hand them to ``GroupService.ask``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kproto.common import GROUP_METADATA_TOPIC_NAME, is_internal
from kproto.errors import InvalidConfigError
from kproto.log import LogManager
from kproto.server.coordinator import CoordinatorConfig, GroupCoordinator
from kproto.server.runtime.shell import CoordinatorShell
from kproto.server.share.group_config import split_list

log = logging.getLogger("kproto.server.groups")


def coordinator_config(values: dict) -> CoordinatorConfig:
    """The coordinator's settings from the broker's (Kafka names); GroupCoordinatorConfig's
    checks fail as a config error (one line, the broker does not start)."""
    try:
        return _coordinator_config(values)
    except ValueError as e:
        raise InvalidConfigError(str(e)) from None


def _coordinator_config(values: dict) -> CoordinatorConfig:
    return CoordinatorConfig(
        group_min_session_timeout_ms=values["group.min.session.timeout.ms"],
        group_max_session_timeout_ms=values["group.max.session.timeout.ms"],
        group_max_size=values["group.max.size"],
        group_initial_rebalance_delay_ms=values["group.initial.rebalance.delay.ms"],
        offsets_topic_num_partitions=values["offsets.topic.num.partitions"],
        offsets_retention_minutes=values["offsets.retention.minutes"],
        offsets_retention_check_interval_ms=values["offsets.retention.check.interval.ms"],
        consumer_group_session_timeout_ms=values["group.consumer.session.timeout.ms"],
        consumer_group_min_session_timeout_ms=values["group.consumer.min.session.timeout.ms"],
        consumer_group_max_session_timeout_ms=values["group.consumer.max.session.timeout.ms"],
        consumer_group_heartbeat_interval_ms=values["group.consumer.heartbeat.interval.ms"],
        consumer_group_min_heartbeat_interval_ms=values["group.consumer.min.heartbeat.interval.ms"],
        consumer_group_max_heartbeat_interval_ms=values["group.consumer.max.heartbeat.interval.ms"],
        consumer_group_max_size=values["group.consumer.max.size"],
        consumer_group_assignors=tuple(a.strip() for a in values["group.consumer.assignors"].split(",") if a.strip()),
        consumer_group_migration_policy=values["group.consumer.migration.policy"],
        **{"streams_group_" + name.replace(".", "_"): values["group.streams." + name] for name in (
            "session.timeout.ms", "min.session.timeout.ms", "max.session.timeout.ms", "heartbeat.interval.ms",
            "min.heartbeat.interval.ms", "max.heartbeat.interval.ms", "max.size", "num.standby.replicas",
            "max.standby.replicas", "task.offset.interval.ms", "acceptable.recovery.lag",
            "initial.rebalance.delay.ms", "assignment.interval.ms", "min.assignment.interval.ms",
            "max.assignment.interval.ms", "min.task.offset.interval.ms", "num.warmup.replicas",
            "max.warmup.replicas", "assignor.offload.enable")},
        streams_group_rack_aware_assignment_tags=tuple(split_list(values["group.streams.rack.aware.assignment.tags"])),
        streams_group_assignors=tuple(split_list(values["group.streams.assignors"])))


class GroupService(CoordinatorShell):
    """The broker's group coordinator: replayed at start, driven after every
    request (``ask``) and timer."""

    name = "group coordinator"
    loaded_noun = "group(s)"

    def __init__(self, logs: LogManager, values: dict, *, node: tuple[int, str, int],
                 append_lock: threading.Lock | None = None, replication: Any = None,
                 replication_factor: int = 1) -> None:
        """``replication``: the node's ReplicaManager on a node of a cluster, where the
        coordinator owns the partitions this node leads, none at first."""
        self.values = values
        self.node = node
        coordinator = GroupCoordinator(coordinator_config(values), owned_partitions=None if replication is None else ())
        super().__init__(coordinator, logs, GROUP_METADATA_TOPIC_NAME,
                         values["offsets.topic.num.partitions"],
                         {"cleanup.policy": "compact", "compression.type": "producer",
                          "segment.bytes": values["offsets.topic.segment.bytes"]},
                         append_lock=append_lock, log=log)
        self.replication, self.replication_factor = replication, replication_factor
        self._image_key: tuple = ()

    def refresh_topics(self) -> None:
        """Tell the coordinator the cluster's topics when they changed (KIP-848 groups
        assign from them; Kafka's coordinator gets each new metadata image)."""
        logs = self.logs
        image = {t: (logs.topic_id(t), logs.partition_count(t)) for t in sorted(logs.topics()) if not is_internal(t)}
        key = tuple((t, tid, n) for t, (tid, n) in image.items())
        if key != self._image_key:
            self._image_key = key
            self.coordinator.update_topics(image)
