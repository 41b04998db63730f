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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kproto.errors import InvalidConfigError

__all__ = ["GROUP_CONFIGS", "STREAMS_CONFIGS", "DESCRIBED_GROUP_CONFIGS", "GroupConfigs", "check_group_config",
           "check_group_configs", "split_list", "stored_value", "streams_value"]

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


@dataclass(frozen=True, slots=True)
class StreamsConfig:
    """A ``streams.*`` group config as Kafka 4.4's GroupConfig defines it: its ConfigDef type
    and ``atLeast``, the broker configs validateValues bounds it by (validateIntRange,
    validateIntMin, validateIntMax), and whether it is internal (defineInternal: settable,
    not described)."""

    type: str
    at_least: int | None = None
    min_config: str | None = None
    max_config: str | None = None
    internal: bool = False


#: every ``streams.*`` group config of Kafka 4.4 (its broker synonym: ``group.`` + the name,
#: but ``streams.assignor.name``'s, group.streams.assignors)
STREAMS_CONFIGS: dict[str, StreamsConfig] = {
    "streams.session.timeout.ms": StreamsConfig("INT", 1, "group.streams.min.session.timeout.ms",
                                                "group.streams.max.session.timeout.ms"),
    "streams.heartbeat.interval.ms": StreamsConfig("INT", 1, "group.streams.min.heartbeat.interval.ms",
                                                   "group.streams.max.heartbeat.interval.ms"),
    "streams.num.standby.replicas": StreamsConfig("INT", 0, max_config="group.streams.max.standby.replicas"),
    "streams.initial.rebalance.delay.ms": StreamsConfig("INT", 0),
    "streams.assignment.interval.ms": StreamsConfig("INT", 0, "group.streams.min.assignment.interval.ms",
                                                    "group.streams.max.assignment.interval.ms"),
    "streams.assignor.offload.enable": StreamsConfig("BOOLEAN", internal=True),
    "streams.task.offset.interval.ms": StreamsConfig("INT", 1, "group.streams.min.task.offset.interval.ms",
                                                     internal=True),
    "streams.num.warmup.replicas": StreamsConfig("INT", 0, max_config="group.streams.max.warmup.replicas",
                                                 internal=True),
    "streams.rack.aware.assignment.tags": StreamsConfig("LIST"),
    "streams.acceptable.recovery.lag": StreamsConfig("LONG", 0, internal=True),
    "streams.assignor.name": StreamsConfig("STRING"),
}
for _name, _config in STREAMS_CONFIGS.items():
    GROUP_CONFIGS[_name] = "group.streams.assignors" if _name == "streams.assignor.name" else "group." + _name
#: the group configs DescribeConfigs lists (GroupConfig.isInternal: not the internal ones)
DESCRIBED_GROUP_CONFIGS = tuple(sorted(n for n in GROUP_CONFIGS if n not in STREAMS_CONFIGS
                                       or not STREAMS_CONFIGS[n].internal))
_INT_LIMITS = {"INT": 2**31, "LONG": 2**63}
_COMMA = re.compile(r"\s*,\s*")


def default(name: str, broker_values: dict[str, Any]) -> str:
    source = GROUP_CONFIGS[name]
    if source is None:
        return _DEFAULTS[name]
    value = broker_values[source]
    if name == "streams.assignor.name":         # the broker's first assignor
        return split_list(value)[0]
    return str(value).lower() if isinstance(value, bool) else str(value)


def split_list(value: str) -> list[str]:
    """A LIST config's value as ConfigDef parses it: trimmed, split at commas with the
    whitespace around them (empty: no values)."""
    value = value.strip()
    return _COMMA.split(value) if value else []


def streams_value(name: str, value: str) -> Any:
    """A (validated) ``streams.*`` override as its type: int, bool, a tuple (LIST) or str."""
    kind = STREAMS_CONFIGS[name].type
    if kind in ("INT", "LONG"):
        return int(value.strip())
    if kind == "BOOLEAN":
        return value.strip().lower() == "true"
    return tuple(split_list(value)) if kind == "LIST" else value


def stored_value(name: str, value: str) -> str:
    """A valid override as Kafka keeps it: a ``streams.*`` number or list parsed and written
    back (" 7 " and "+7": "7"; "a , b": "a,b"), anything else as given."""
    kind = STREAMS_CONFIGS[name].type if name in STREAMS_CONFIGS else None
    if kind in ("INT", "LONG"):
        return str(int(value.strip()))
    return ",".join(split_list(value)) if kind == "LIST" else value


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


def _check_streams_config(name: str, value: str, broker_values: dict[str, Any]) -> None:
    """GroupConfig.validate for one ``streams.*`` config: validateNoDuplicateRackAwareAssignmentTags,
    ConfigDef's parse and validator, then validateValues (Kafka 4.4's messages)."""
    spec = STREAMS_CONFIGS[name]
    if spec.type == "LIST":
        raw = _COMMA.split(value.strip()) if value.strip() else []
        while raw and not raw[-1]:          # String.split drops trailing empty strings
            raw.pop()
        if len(set(raw)) != len(raw):
            raise InvalidConfigError(f"{name} must not contain duplicate tag keys.")
        if any(not tag for tag in split_list(value)):       # ValidList.anyNonDuplicateValues(true, false)
            raise InvalidConfigError(f"Configuration '{name}' values must not be empty.")
        return
    if spec.type == "BOOLEAN":
        if value.strip().lower() not in ("true", "false"):
            raise InvalidConfigError(f"Invalid value {value} for configuration {name}: "
                                     "Expected value to be either true or false")
        return
    if spec.type == "STRING":       # streams.assignor.name: one of the broker's assignors
        names = split_list(broker_values[GROUP_CONFIGS[name]])
        if value not in names:
            raise InvalidConfigError(f"{name} '{value}' is not a registered task assignor. Registered assignors "
                                     f"are: [{', '.join(names)}].")
        return
    text = value.strip()
    limit = _INT_LIMITS[spec.type]
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not -limit <= int(text) < limit:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Not a number of type {spec.type}")
    number = int(text)
    if spec.at_least is not None and number < spec.at_least:
        raise InvalidConfigError(f"Invalid value {value} for configuration {name}: Value must be at least "
                                 f"{spec.at_least}")
    lo = None if spec.min_config is None else broker_values[spec.min_config]
    hi = None if spec.max_config is None else broker_values[spec.max_config]
    if lo is not None and hi is not None and not lo <= number <= hi:
        raise InvalidConfigError(f"{name} must be in the range {lo} to {hi} inclusive.")
    if lo is not None and hi is None and number < lo:
        raise InvalidConfigError(f"{name} must be greater than or equal to {lo}")
    if hi is not None and lo is None and number > hi:
        raise InvalidConfigError(f"{name} must be less than or equal to {hi}")


def check_group_config(name: str, value: str, broker_values: dict[str, Any]) -> None:
    if name not in GROUP_CONFIGS:
        raise InvalidConfigError(f"Unknown group config name: {name}")
    if name in STREAMS_CONFIGS:
        _check_streams_config(name, value, broker_values)
        return
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
