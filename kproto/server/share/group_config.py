"""Group configs (ConfigResource type GROUP, 32; Kafka's GroupConfig): per-group
overrides set with IncrementalAlterConfigs / AlterConfigs and read back with
DescribeConfigs. Kafka keeps them in the cluster metadata; kproto in
``group-configs.json`` in the data directory. The share configs are used by the
share coordinator, the streams ones by the group coordinator's streams groups
(``GroupCoordinator.use_group_configs``); the consumer ones are stored and described.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from kproto.errors import InvalidConfigError

__all__ = ["GROUP_CONFIGS", "GroupConfigs", "check_group_config", "check_group_configs"]

log = logging.getLogger("kproto.server.share")

#: name -> the broker config its default and bounds come from (GroupConfig.configDef)
GROUP_CONFIGS: dict[str, str | None] = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
    "share.delivery.count.limit": "group.share.delivery.count.limit",
    "share.auto.offset.reset": None,
    "share.isolation.level": None,
    "streams.session.timeout.ms": "group.streams.session.timeout.ms",
    "streams.heartbeat.interval.ms": "group.streams.heartbeat.interval.ms",
    "streams.num.standby.replicas": "group.streams.num.standby.replicas",
}
_DEFAULTS = {"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted"}
# share.X -> (min config, max config) on the broker (GroupConfig.validateValues)
_BOUNDS = {"share.session.timeout.ms": ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
           "share.heartbeat.interval.ms": ("group.share.min.heartbeat.interval.ms",
                                           "group.share.max.heartbeat.interval.ms"),
           "share.record.lock.duration.ms": ("group.share.min.record.lock.duration.ms",
                                             "group.share.max.record.lock.duration.ms"),
           "share.delivery.count.limit": ("group.share.min.delivery.count.limit",
                                          "group.share.max.delivery.count.limit")}
# Kafka 4.4's GroupConfig for the streams ones: ConfigDef's atLeast, then validateValues'
# validateIntRange (min, max broker configs) or validateIntMax (max broker config)
_AT_LEAST = {"streams.session.timeout.ms": 1, "streams.heartbeat.interval.ms": 1, "streams.num.standby.replicas": 0}
_RANGES = {"streams.session.timeout.ms": ("group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
           "streams.heartbeat.interval.ms": ("group.streams.min.heartbeat.interval.ms",
                                             "group.streams.max.heartbeat.interval.ms"),
           "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas")}


def default(name: str, broker_values: dict[str, Any]) -> str:
    source = GROUP_CONFIGS[name]
    return str(broker_values[source]) if source is not None else _DEFAULTS[name]


def check_group_configs(configs: dict[str, str], broker_values: dict[str, Any]) -> None:
    """GroupConfig.validate of a group's whole new set of overrides: each value, then
    (validateSessionExceedsHeartbeat) a streams session timeout above the heartbeat interval,
    either side defaulting to the broker's."""
    for name, value in configs.items():
        check_group_config(name, value, broker_values)
    session, heartbeat = "streams.session.timeout.ms", "streams.heartbeat.interval.ms"
    if session in configs or heartbeat in configs:
        effective = {n: int(configs[n]) if n in configs else broker_values[GROUP_CONFIGS[n]] for n in (session, heartbeat)}
        if effective[session] <= effective[heartbeat]:
            raise InvalidConfigError(f"{session} must be greater than {heartbeat}")


def check_group_config(name: str, value: str, broker_values: dict[str, Any]) -> None:
    if name not in GROUP_CONFIGS:
        raise InvalidConfigError(f"Unknown group config name: {name}")
    if name == "share.auto.offset.reset":
        if value not in ("latest", "earliest") and not value.startswith("by_duration:"):
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                     "String must be one of: latest, earliest, by_duration:<duration>")
        return
    if name == "share.isolation.level":
        if value not in ("read_uncommitted", "read_committed"):
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                     "String must be one of: read_committed, read_uncommitted")
        return
    try:
        number = int(value)
    except ValueError:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                 "Expected value to be a 32-bit integer, but it was a java.lang.String") from None
    if name in _AT_LEAST and number < _AT_LEAST[name]:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Value must be at least "
                                 f"{_AT_LEAST[name]}")
    if name in _RANGES:
        lo, hi = (None if b is None else broker_values[b] for b in _RANGES[name])
        if lo is None and number > hi:
            raise InvalidConfigError(f"{name} must be less than or equal to {hi}")
        if lo is not None and not lo <= number <= hi:
            raise InvalidConfigError(f"{name} must be in the range {lo} to {hi} inclusive.")
    if name in _BOUNDS:
        lo, hi = (broker_values[b] for b in _BOUNDS[name])
        if number < lo:
            raise InvalidConfigError(f"{name} must be greater than or equal to {lo}")
        if number > hi:
            raise InvalidConfigError(f"{name} must be less than or equal to {hi}")


class GroupConfigs:
    """Every group's overrides, kept in ``path`` (rewritten whole, atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._configs: dict[str, dict[str, str]] = {}
        if path.exists():
            try:
                self._configs = {g: dict(c) for g, c in json.loads(path.read_text()).items()}
            except (ValueError, AttributeError, TypeError) as e:     # never fatal: logged, started without
                log.error("%s: unreadable group configs, starting without them: %s", path, e)

    def names(self) -> list[str]:
        """Every group with an override, sorted."""
        return sorted(self._configs)

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._configs.get(group_id, {}))

    def replace(self, group_id: str, configs: dict[str, str]) -> None:
        if configs:
            self._configs[group_id] = dict(configs)
        else:
            self._configs.pop(group_id, None)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self._configs, sort_keys=True))
        os.replace(tmp, self.path)
