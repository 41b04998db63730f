"""Topic configuration (Kafka's LogConfig / TopicConfig), typed and validated.

A neutral module: the log reads it, the broker validates CreateTopics and
AlterConfigs with it, and the tools check names without importing the log.

Every Kafka topic config is a field of ``LogConfig``; its Kafka name is the
field name with ``_`` read as ``.`` (``segment_bytes`` is ``segment.bytes``).
Each field carries its ConfigDef type and validator, so ``LogConfig`` is both
the typed object the log reads and the validator CreateTopics/AlterConfigs
use: ``LogConfig.validate({"segment.bytes": "abc"})`` raises
``InvalidConfigError("Invalid value abc for configuration segment.bytes: Not a
number of type INT")`` as Kafka's ConfigException reads.

Defaults are Kafka 3.9's (the last line with legacy formats). Configs kproto
accepts but does not act on (remote storage, codec levels, preallocate,
message.downconversion.enable...; the replication throttles outside a cluster)
are kept so that a CreateTopics that Kafka accepts is accepted here too.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kproto.errors import InvalidConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_INT_MIN = -2**31
_LONG_MIN = -2**63

# ConfigDef.Type
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = "BOOLEAN", "STRING", "INT", "LONG", "DOUBLE", "LIST"

Validator = Callable[[str, Any], None]


def _fail(name: str, value: Any, message: str) -> InvalidConfigError:
    # ConfigException(name, value, message)
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {message}")


def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise _fail(name, value, f"Value must be at least {minimum}")
    return check


def between(lo: float, hi: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise _fail(name, value, f"Value must be at least {lo}")
        if value > hi:
            raise _fail(name, value, f"Value must be no more than {hi}")
    return check


def one_of(*choices: str) -> Validator:
    def check(name: str, value: Any) -> None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in choices:
                raise _fail(name, item, f"String must be one of: {', '.join(choices)}")
    return check


def _gzip_level(name: str, value: int) -> None:
    if value != -1 and not 1 <= value <= 9:
        raise _fail(name, value, "Value must be between 1 and 9, or -1 (the default level)")


def _throttled_replicas(name: str, value: tuple[str, ...]) -> None:
    """ThrottledReplicaListValidator: "*" or [partitionId]:[brokerId] pairs (an empty item
    passes, as Kafka's pattern lets it); the value printed as the Java List it parsed to."""
    if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", v) for v in value) or "".join(value) == "*"):
        raise _fail(name, "[" + ", ".join(value) + "]", f"{name} must be the literal '*' or a list of replicas in "
                    "the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


def _cfg(default: Any, type_: str, validator: Validator | None = None) -> Any:
    return field(default=default, metadata={"type": type_, "validator": validator})


def _parse(name: str, type_: str, value: Any) -> Any:
    """ConfigDef.parseType: strings are trimmed and converted, typed values checked."""
    if type_ == BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise _fail(name, value, "Expected value to be either true or false")
    if type_ == STRING:
        if isinstance(value, str):
            return value.strip()
        raise _fail(name, value, "Expected value to be a string, but it was a " + type(value).__name__)
    if type_ in (INT, LONG):
        lo, hi = (_INT_MIN, INT_MAX) if type_ == INT else (_LONG_MIN, LONG_MAX)
        try:
            n = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value).strip(), 10)
        except ValueError:
            n = None
        if n is None or not lo <= n <= hi:
            raise _fail(name, value, f"Not a number of type {type_}")
        return n
    if type_ == DOUBLE:
        try:
            return float(value if isinstance(value, (int, float)) and not isinstance(value, bool)
                         else str(value).strip())
        except ValueError:
            raise _fail(name, value, "Not a number of type DOUBLE") from None
    if type_ == LIST:
        if isinstance(value, (list, tuple)):
            return tuple(str(v).strip() for v in value)
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",")) if value.strip() else ()
        raise _fail(name, value, "Expected a comma separated list.")
    raise AssertionError(type_)


def _render(type_: str, value: Any) -> str:
    if type_ == BOOLEAN:
        return "true" if value else "false"
    if type_ == LIST:
        return ",".join(value)
    return str(value)


@dataclass(frozen=True)
class LogConfig:
    """One topic's configuration; build it with ``from_props``."""

    cleanup_policy: tuple[str, ...] = _cfg(("delete",), LIST, one_of("compact", "delete"))
    compression_type: str = _cfg("producer", STRING,
                                 one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))
    compression_gzip_level: int = _cfg(-1, INT, _gzip_level)
    compression_lz4_level: int = _cfg(9, INT, between(1, 17))
    compression_zstd_level: int = _cfg(3, INT, between(-131072, 22))
    delete_retention_ms: int = _cfg(86400000, LONG, at_least(0))
    file_delete_delay_ms: int = _cfg(60000, LONG, at_least(0))
    flush_messages: int = _cfg(LONG_MAX, LONG, at_least(1))
    flush_ms: int = _cfg(LONG_MAX, LONG, at_least(0))
    follower_replication_throttled_replicas: tuple[str, ...] = _cfg((), LIST, _throttled_replicas)
    index_interval_bytes: int = _cfg(4096, INT, at_least(0))
    leader_replication_throttled_replicas: tuple[str, ...] = _cfg((), LIST, _throttled_replicas)
    local_retention_bytes: int = _cfg(-2, LONG, at_least(-2))
    local_retention_ms: int = _cfg(-2, LONG, at_least(-2))
    max_compaction_lag_ms: int = _cfg(LONG_MAX, LONG, at_least(1))
    max_message_bytes: int = _cfg(1048588, INT, at_least(0))
    message_downconversion_enable: bool = _cfg(True, BOOLEAN)
    message_format_version: str = _cfg("3.0-IV1", STRING)
    message_timestamp_after_max_ms: int = _cfg(LONG_MAX, LONG, at_least(0))
    message_timestamp_before_max_ms: int = _cfg(LONG_MAX, LONG, at_least(0))
    message_timestamp_difference_max_ms: int = _cfg(LONG_MAX, LONG, at_least(0))
    message_timestamp_type: str = _cfg("CreateTime", STRING, one_of("CreateTime", "LogAppendTime"))
    min_cleanable_dirty_ratio: float = _cfg(0.5, DOUBLE, between(0, 1))
    min_compaction_lag_ms: int = _cfg(0, LONG, at_least(0))
    min_insync_replicas: int = _cfg(1, INT, at_least(1))
    preallocate: bool = _cfg(False, BOOLEAN)
    remote_log_copy_disable: bool = _cfg(False, BOOLEAN)
    remote_log_delete_on_disable: bool = _cfg(False, BOOLEAN)
    remote_storage_enable: bool = _cfg(False, BOOLEAN)
    retention_bytes: int = _cfg(-1, LONG)
    retention_ms: int = _cfg(604800000, LONG, at_least(-1))
    segment_bytes: int = _cfg(1073741824, INT, at_least(14))   # LegacyRecord.RECORD_OVERHEAD_V0
    segment_index_bytes: int = _cfg(10485760, INT, at_least(4))
    segment_jitter_ms: int = _cfg(0, LONG, at_least(0))
    segment_ms: int = _cfg(604800000, LONG, at_least(1))
    unclean_leader_election_enable: bool = _cfg(False, BOOLEAN)

    # -- derived views the log reads ------------------------------------------

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    # -- names, parsing, validation -----------------------------------------------

    @staticmethod
    def names() -> list[str]:
        """Every topic config name, Kafka-spelled, sorted."""
        return sorted(_FIELDS)

    @staticmethod
    def type_of(name: str) -> str:
        """Kafka's ConfigDef type of a topic config (BOOLEAN, STRING, INT, LONG, DOUBLE, LIST)."""
        return _FIELDS[name].metadata["type"]

    @classmethod
    def validate(cls, props: Mapping[str, Any]) -> dict[str, Any]:
        """Kafka-named props (strings or typed values) -> typed values by Kafka name.

        Unknown names, unparsable or out-of-range values and conflicting
        settings raise ``InvalidConfigError`` with Kafka's message."""
        out: dict[str, Any] = {}
        for name, raw in props.items():
            if name not in _FIELDS:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            out[name] = cls.parse_value(name, raw)
        return out

    @staticmethod
    def parse_value(name: str, raw: Any, label: str | None = None) -> Any:
        """One topic config's value, typed and checked; errors name it ``label``
        (the broker config that sets its default, as KafkaConfig's own ConfigDef
        would word them) when given."""
        f, label = _FIELDS[name], label or name
        if raw is None:
            raise _fail(label, raw, "null is not a valid value")
        value = _parse(label, f.metadata["type"], raw)
        if f.metadata["validator"] is not None:
            f.metadata["validator"](label, value)
        return value

    @classmethod
    def from_props(cls, props: Mapping[str, Any] | None = None,
                   base: "LogConfig | None" = None) -> "LogConfig":
        """``base`` (the broker defaults; Kafka's when omitted) overridden by ``props``."""
        typed = cls.validate(props or {})
        config = dataclasses.replace(base or cls(), **{_FIELDS[n].name: v for n, v in typed.items()})
        config._check_values()
        return config

    def to_props(self) -> dict[str, str]:
        """Every config as Kafka renders it (DescribeConfigs strings)."""
        return {name: _render(f.metadata["type"], getattr(self, f.name)) for name, f in sorted(_FIELDS.items())}

    def _check_values(self) -> None:
        # LogConfig.validateValues
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) > "
                f"max.compaction.lag.ms ({self.max_compaction_lag_ms})")


_FIELDS: dict[str, dataclasses.Field] = {
    f.name.replace("_", "."): f for f in dataclasses.fields(LogConfig)}
