"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics (and the broker, read-only).

Sources as Kafka reports them: DYNAMIC_TOPIC_CONFIG (1) for a topic override,
STATIC_BROKER_CONFIG (4) for a ``log.*`` default given to ``kproto serve``,
DEFAULT_CONFIG (5) otherwise. Overrides persist in the data directory.
"""

from __future__ import annotations

from kproto.errors import ErrorCode, InvalidConfigError, KafkaError
from kproto.topic_config import LogConfig
from kproto.schemas import protocol as P
from kproto.security.config import is_secret
from kproto.server.config import LOG_SYNONYMS

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _static_defaults(broker) -> tuple[dict, dict]:
    """(the broker's topic defaults as strings, topic name -> the ``log.*`` name it was given as)."""
    static = {topic_name: broker_name for broker_name, topic_name in LOG_SYNONYMS.items()
              if broker_name in broker.config.overrides}
    return broker.config.log_defaults.to_props(), static


def topic_config_entries(broker, topic: str, keys=None, *, synonyms: bool = False,
                         defaults: tuple[dict, dict] | None = None, cache: dict | None = None) -> list[dict]:
    """Every topic config with its value and source (also CreateTopics v5+'s answer).
    ``defaults``: ``_static_defaults(broker)``, and ``cache``: a dict, both kept
    for one request over many topics (topics with the same overrides share
    their entries; the encoder only reads them)."""
    overrides = broker.logs.topic_overrides(topic)
    if cache is not None:
        key = (frozenset(overrides.items()), None if keys is None else frozenset(keys), synonyms)
        if key not in cache:
            cache[key] = topic_config_entries(broker, topic, keys, synonyms=synonyms, defaults=defaults)
        return cache[key]
    broker_defaults, static = defaults or _static_defaults(broker)
    effective = broker.logs.topic_config(topic).to_props() if overrides else broker_defaults
    out = []
    for name in LogConfig.names():
        if keys is not None and name not in keys:
            continue
        chain = []
        if name in overrides:
            chain.append({"name": name, "value": effective[name], "source": DYNAMIC_TOPIC_CONFIG})
        if name in static:
            chain.append({"name": static[name], "value": broker_defaults[name], "source": STATIC_BROKER_CONFIG})
        source = chain[0]["source"] if chain else DEFAULT_CONFIG
        out.append({"name": name, "value": effective[name], "read_only": False, "config_source": source,
                    "is_default": source == DEFAULT_CONFIG, "is_sensitive": False,
                    "synonyms": chain if synonyms else [],
                    "config_type": CONFIG_TYPES[LogConfig.type_of(name)], "documentation": None})
    return out


def _broker_entries(broker, keys) -> list[dict]:
    values = dict(broker.config.values)
    values.update({b: broker.config.log_defaults.to_props()[t] for b, t in LOG_SYNONYMS.items()})
    # Passwords and keys are PASSWORD-typed in Kafka: described with a null value, is_sensitive set.
    return [{"name": k, "value": None if is_secret(k) else str(v).lower() if isinstance(v, bool) else str(v),
             "read_only": True,
             "config_source": STATIC_BROKER_CONFIG if k in broker.config.overrides else DEFAULT_CONFIG,
             "is_default": k not in broker.config.overrides, "is_sensitive": is_secret(k), "synonyms": [],
             "config_type": 0, "documentation": None}
            for k, v in sorted(values.items()) if keys is None or k in keys]


def _result(resource, error: KafkaError | None = None, **extra) -> dict:
    return {"error_code": error.error_code if error else 0, "error_message": str(error) if error else None,
            "resource_type": resource.resource_type, "resource_name": resource.resource_name, **extra}


def _check_resource(broker, resource) -> None:
    if resource.resource_type == TOPIC:
        if not broker.logs.has_topic(resource.resource_name):
            raise KafkaError(f"Topic '{resource.resource_name}' does not exist.",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    elif resource.resource_type == BROKER:
        if resource.resource_name not in ("", str(broker.node_id)):
            raise KafkaError(f"Unexpected broker id, expected {broker.node_id} or empty string, but received "
                             f"{resource.resource_name}", error_code=ErrorCode.INVALID_REQUEST)
    else:
        raise KafkaError(f"Unsupported resource type {resource.resource_type}",
                         error_code=ErrorCode.INVALID_REQUEST)


async def describe_configs(broker, header, body) -> dict:
    results = []
    defaults, cache = _static_defaults(broker), {}
    for r in body.resources:
        keys = set(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            _check_resource(broker, r)
        except KafkaError as e:
            results.append(_result(r, e, configs=[]))
            continue
        configs = (topic_config_entries(broker, r.resource_name, keys, synonyms=body.include_synonyms,
                                        defaults=defaults, cache=cache)
                   if r.resource_type == TOPIC else _broker_entries(broker, keys))
        results.append(_result(r, configs=configs))
    return {"throttle_time_ms": 0, "results": results}


def _apply(broker, resource, new_overrides: dict, validate_only: bool) -> None:
    if resource.resource_type != TOPIC:
        _check_resource(broker, resource)
        raise KafkaError("kproto does not change broker configs at runtime; pass them to kproto serve",
                         error_code=ErrorCode.INVALID_REQUEST)
    _check_resource(broker, resource)
    LogConfig.from_props(new_overrides, base=broker.config.log_defaults)   # InvalidConfigError
    if not validate_only:
        broker.logs.set_topic_config(resource.resource_name, new_overrides)


async def alter_configs(broker, header, body) -> dict:
    """AlterConfigs replaces a topic's overrides with exactly those given (Kafka's semantics)."""
    responses = []
    for r in body.resources:
        try:
            _apply(broker, r, {c.name: c.value for c in r.configs if c.value is not None}, body.validate_only)
            responses.append(_result(r))
        except KafkaError as e:
            responses.append(_result(r, e))
    return {"throttle_time_ms": 0, "responses": responses}


def _incremental(current: dict, op: int, name: str, value: str | None) -> None:
    if name not in LogConfig.names():
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    if op == SET:
        current[name] = value
    elif op == DELETE:
        current.pop(name, None)
    elif op in (APPEND, SUBTRACT):
        if LogConfig.type_of(name) != "LIST":
            raise InvalidConfigError(f"Config value append is not allowed for config key: {name}"
                                     if op == APPEND else f"Config value subtract is not allowed for config key: {name}")
        items = [v for v in (current.get(name) or "").split(",") if v]
        given = [v for v in (value or "").split(",") if v]
        items = items + [v for v in given if v not in items] if op == APPEND else [v for v in items if v not in given]
        current[name] = ",".join(items)
    else:
        raise KafkaError(f"Unknown config operation {op}", error_code=ErrorCode.INVALID_REQUEST)


async def incremental_alter_configs(broker, header, body) -> dict:
    responses = []
    for r in body.resources:
        try:
            _check_resource(broker, r)
            current = broker.logs.topic_overrides(r.resource_name) if r.resource_type == TOPIC else {}
            for c in r.configs:
                _incremental(current, c.config_operation, c.name, c.value)
            _apply(broker, r, current, body.validate_only)
            responses.append(_result(r))
        except KafkaError as e:
            responses.append(_result(r, e))
    return {"throttle_time_ms": 0, "responses": responses}


# Versions: every one the registry speaks for each (DescribeConfigs v0-4,
# AlterConfigs v0-2, IncrementalAlterConfigs v0-1).
HANDLERS = {P.describe_configs.API.key: (describe_configs, 0, 4),
            P.alter_configs.API.key: (alter_configs, 0, 2),
            P.incremental_alter_configs.API.key: (incremental_alter_configs, 0, 1)}
