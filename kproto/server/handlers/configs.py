"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics, the broker, its
loggers (BROKER_LOGGER: kproto.server.loggers), client metrics subscriptions and groups.

Sources as Kafka reports them (ConfigHelper): DYNAMIC_TOPIC_CONFIG for a topic
override, DYNAMIC_BROKER_CONFIG / DYNAMIC_DEFAULT_BROKER_CONFIG for a broker
config set by AlterConfigs on this broker / on the cluster default,
STATIC_BROKER_CONFIG for one given to ``kproto serve``, DEFAULT_CONFIG
otherwise. Topic overrides and dynamic broker configs persist in the data
directory (kproto.server.dynamic_config).
"""

from __future__ import annotations

from kproto.errors import ErrorCode, InvalidConfigError, InvalidRequestError, KafkaError
from kproto.schemas import protocol as P
from kproto.security.config import is_secret
from kproto.server.config import BROKER_CONFIGS, LOG_SYNONYMS
from kproto.server.dynamic_config import (
    ALL_DYNAMIC_CONFIGS,
    DEFAULT_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    LIST_CONFIGS,
    default_value,
)
from kproto.server.share.group_config import (
    DESCRIBED_GROUP_CONFIGS, GROUP_CONFIGS, STREAMS_CONFIGS, check_group_configs,
    default as group_default, stored_value,
)
from kproto.server import loggers, telemetry
from kproto.topic_config import LogConfig
from kproto.security.acl import AclOperation as O, ResourceType as R
from kproto.server.access import PerEntry
from kproto.server.handlers import handles

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
BROKER_LOGGER_CONFIG_SOURCE = 6    # ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG
GROUP_CONFIG_SOURCE = 8        # DescribeConfigsResponse ConfigSource.GROUP_CONFIG
CLIENT_METRICS_CONFIG_SOURCE = 7     # ConfigSource.CLIENT_METRICS_CONFIG
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _broker_defaults(broker) -> tuple[dict, dict]:
    """(the broker's topic defaults as strings, topic name -> the broker layers that
    set its default: [(broker config name, value, source)], highest first)."""
    chains = {}
    for broker_name, topic_name in LOG_SYNONYMS.items():
        chain = broker.dynamic.sources(broker_name)
        if chain:
            chains[topic_name] = chain
    return broker.config.log_defaults.to_props(), chains


def topic_config_entries(broker, topic: str, keys=None, *, synonyms: bool = False,
                         defaults: tuple[dict, dict] | None = None, cache: dict | None = None) -> list[dict]:
    """Every topic config with its value and source (also CreateTopics v5+'s answer).
    ``defaults``: ``_broker_defaults(broker)``, and ``cache``: a dict, both kept
    for one request over many topics (topics with the same overrides share
    their entries; the encoder only reads them)."""
    overrides = broker.topic_overrides(topic)
    if cache is not None:
        key = (frozenset(overrides.items()), None if keys is None else frozenset(keys), synonyms)
        if key not in cache:
            cache[key] = topic_config_entries(broker, topic, keys, synonyms=synonyms, defaults=defaults)
        return cache[key]
    broker_defaults, chains = defaults or _broker_defaults(broker)
    effective = (LogConfig.from_props(overrides, base=broker.logs.default_config).to_props() if overrides
                 else broker_defaults)
    out = []
    for name in LogConfig.names():
        if keys is not None and name not in keys:
            continue
        chain = []
        if name in overrides:
            chain.append({"name": name, "value": effective[name], "source": DYNAMIC_TOPIC_CONFIG})
        chain += [{"name": n, "value": v, "source": src} for n, v, src in chains.get(name, ())]
        source = chain[0]["source"] if chain else DEFAULT_CONFIG
        out.append({"name": name, "value": effective[name], "read_only": False, "config_source": source,
                    "is_default": source == DEFAULT_CONFIG, "is_sensitive": False,
                    "synonyms": chain if synonyms else [],
                    "config_type": CONFIG_TYPES[LogConfig.type_of(name)], "documentation": None})
    return out


def _render(value) -> str | None:
    return None if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _broker_entry(name: str, value, chain: list, synonyms: bool) -> dict:
    # Passwords and keys are PASSWORD-typed in Kafka: described with a null value, is_sensitive set.
    secret = is_secret(name)
    chain = [{"name": n, "value": None if secret else v, "source": src} for n, v, src in chain]
    source = chain[0]["source"] if chain else DEFAULT_CONFIG
    return {"name": name, "value": None if secret else _render(value),
            "read_only": name not in ALL_DYNAMIC_CONFIGS, "config_source": source,
            "is_default": source == DEFAULT_CONFIG, "is_sensitive": secret,
            "synonyms": chain if synonyms else [], "config_type": 0, "documentation": None}


def _broker_entries(broker, name: str, keys, synonyms: bool) -> list[dict]:
    """ConfigHelper.describeConfigs: the cluster default ("") shows only its own
    dynamic configs; this broker's id shows every config, effective value first."""
    if name == "":
        return [_broker_entry(k, v, [(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG)], synonyms)
                for k, v in sorted(broker.dynamic.default.items()) if keys is None or k in keys]
    values = dict(broker.config.values)
    defaults = broker.config.log_defaults.to_props()
    values.update({b: defaults[t] for b, t in LOG_SYNONYMS.items()})
    return [_broker_entry(k, v, broker.dynamic.sources(k), synonyms)
            for k, v in sorted(values.items()) if keys is None or k in keys]


def _result(resource, error: KafkaError | None = None, **extra) -> dict:
    return {"error_code": error.error_code if error else 0, "error_message": str(error) if error else None,
            "resource_type": resource.resource_type, "resource_name": resource.resource_name, **extra}


def _check_resource(broker, resource, *, altering: bool = False) -> None:
    if resource.resource_type == TOPIC:
        if not broker.has_topic(resource.resource_name):     # a cluster's: in the metadata image
            raise KafkaError(f"Topic '{resource.resource_name}' does not exist.",
                             error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    elif resource.resource_type == BROKER:
        name = resource.resource_name
        if altering and name != "":     # ConfigAdminManager.validateResourceNameIsCurrentNodeId
            if not name.lstrip("-").isdigit():
                raise InvalidRequestError(f"Node id must be an integer, but it is: {name}")
            if int(name) != broker.node_id:
                raise InvalidRequestError(f"Unexpected broker id, expected {broker.node_id}, but received {name}")
        elif name not in ("", str(broker.node_id)):
            raise InvalidRequestError(f"Unexpected broker id, expected {broker.node_id} or empty string, "
                                      f"but received {name}")
    elif resource.resource_type == BROKER_LOGGER:
        name = resource.resource_name
        if altering:        # RuntimeLoggerManager.validateResourceNameIsNodeId
            if not name.lstrip("-").isdigit():
                raise InvalidRequestError(f"Node id must be an integer, but it is: {name}")
            if int(name) != broker.node_id:
                raise InvalidRequestError(f"Unexpected node id. Expected {broker.node_id}, but received {name}")
        elif not name:                           # ConfigHelper.describeConfigs
            raise InvalidRequestError("Broker id must not be empty")
        elif not name.lstrip("-").isdigit():
            raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}")
        elif int(name) != broker.node_id:
            raise InvalidRequestError(f"Unexpected broker id, expected {broker.node_id} but received {name}")
    elif resource.resource_type == GROUP:
        if not resource.resource_name:
            raise InvalidRequestError("Group name must not be empty")
    elif resource.resource_type == CLIENT_METRICS:
        if not resource.resource_name:
            raise InvalidRequestError("Subscription name can't be empty")
    else:
        raise InvalidRequestError(f"Unsupported resource type {resource.resource_type}")


def _group_entries(broker, group_id: str, keys, synonyms: bool) -> list[dict]:
    """A group's configs: its overrides (GROUP_CONFIG) over their defaults; the synonyms are
    the override, then the broker config it defaults to (GroupConfig.brokerSynonym) in each
    layer that sets it and as DEFAULT_CONFIG (or, with none, its own DEFAULT_CONFIG)."""
    overrides = broker.shares.group_configs.overrides(group_id)
    out = []
    for name in sorted({*DESCRIBED_GROUP_CONFIGS, *overrides}):     # an internal one when set
        if keys is not None and name not in keys:
            continue
        chain = [{"name": name, "value": overrides[name], "source": GROUP_CONFIG_SOURCE}] if name in overrides else []
        broker_name = GROUP_CONFIGS[name]
        if broker_name is not None:
            chain += [{"name": n, "value": _render(v), "source": src} for n, v, src in broker.dynamic.sources(broker_name)]
            chain.append({"name": broker_name, "value": _render(BROKER_CONFIGS[broker_name][0]),
                          "source": DEFAULT_CONFIG})
        else:                   # no broker config: the group config's own default
            chain.append({"name": name, "value": group_default(name, broker.config.values), "source": DEFAULT_CONFIG})
        # the source of the layer the value comes from (not overridden, a static broker
        # config: STATIC_BROKER_CONFIG), as Kafka describes it
        source = chain[0]["source"]
        out.append({"name": name, "value": overrides.get(name, group_default(name, broker.config.values)),
                    "read_only": False, "config_source": source, "is_default": name not in overrides,
                    "is_sensitive": False, "synonyms": chain if synonyms else [],
                    "config_type": CONFIG_TYPES[_group_config_type(name)], "documentation": None})
    return out


def _group_config_type(name: str) -> str:
    """GroupConfig.configDef's type: the streams ones' own, the share strings, else INT."""
    if name in STREAMS_CONFIGS:
        return STREAMS_CONFIGS[name].type
    return "STRING" if name in ("share.auto.offset.reset", "share.isolation.level") else "INT"


def _logger_entries(keys) -> list[dict]:
    """ConfigHelper.describeConfigs of a BROKER_LOGGER: each logger and its level, no synonyms."""
    return [{"name": name, "value": level, "read_only": False, "config_source": BROKER_LOGGER_CONFIG_SOURCE,
             "is_default": False, "is_sensitive": False, "synonyms": [], "config_type": 0, "documentation": ""}
            for name, level in sorted(loggers.loggers().items()) if keys is None or name in keys]


def _alter_loggers(configs, validate_only: bool) -> None:
    """RuntimeLoggerManager: every op checked (SET an existing logger to one of Kafka's
    levels, DELETE an existing logger's but root's, no APPEND or SUBTRACT), then applied."""
    for c in configs:
        if c.config_operation in (SET, DELETE) and not loggers.exists(c.name):
            raise InvalidConfigError(f"Logger {c.name} does not exist!")
        if c.config_operation == SET:
            if c.value not in loggers.LEVELS:
                raise InvalidConfigError(f"Cannot set the log level of {c.name} to {c.value} as it is not a "
                                         f"supported log level. Valid log levels are {loggers.VALID_LOG_LEVELS}")
        elif c.config_operation == DELETE:
            if c.name == loggers.ROOT_LOGGER:
                raise InvalidRequestError(f"Removing the log level of the {loggers.ROOT_LOGGER} logger is not allowed")
        elif c.config_operation in (APPEND, SUBTRACT):
            raise InvalidRequestError(f"{'APPEND' if c.config_operation == APPEND else 'SUBTRACT'} operation is "
                                      "not allowed for the BROKER_LOGGER resource")
        else:
            raise InvalidRequestError(f"Unknown operation type {c.config_operation} is not allowed for the "
                                      "BROKER_LOGGER resource")
    if validate_only:
        return
    for c in configs:
        if c.config_operation == SET:
            loggers.set_level(c.name, c.value)
        else:
            loggers.unset_level(c.name)


def _client_metrics_entries(broker, name: str, keys, synonyms: bool) -> list[dict]:
    """A client metrics subscription's configs: those set (CLIENT_METRICS_CONFIG, their
    own synonym), the others at ClientMetricsConfigs' defaults."""
    configs = broker.client_metrics.configs(name)
    out = []
    for key in telemetry.CONFIG_NAMES:
        if keys is not None and key not in keys:
            continue
        source = CLIENT_METRICS_CONFIG_SOURCE if key in configs else DEFAULT_CONFIG
        value = configs.get(key, telemetry.DEFAULTS[key])
        chain = [{"name": key, "value": value, "source": source}] if synonyms and key in configs else []
        out.append({"name": key, "value": value, "read_only": False,
                    "config_source": source, "is_default": key not in configs, "is_sensitive": False,
                    "synonyms": chain, "config_type": telemetry.CONFIG_TYPES[key], "documentation": None})
    return out


# Authorization (KafkaApis.handleDescribeConfigsRequest / handleAlterConfigsRequest): a topic
# needs DESCRIBE_CONFIGS / ALTER_CONFIGS on it, a broker or broker logger (resource types 4, 8)
# on the cluster, a group (32) on it; a denied one answers TOPIC_, CLUSTER_ or
# GROUP_AUTHORIZATION_FAILED (KafkaApis.configsAuthorizationApiError).
_CONFIG_RESOURCE = {TOPIC: R.TOPIC, BROKER: R.CLUSTER, 8: R.CLUSTER, CLIENT_METRICS: R.CLUSTER, GROUP: R.GROUP}


def _configs(response: str, operation: O, extra: dict) -> PerEntry:
    return PerEntry("resources", lambda e: e.resource_name, R.TOPIC, operation, response,
                    lambda e, err: {"error_code": err, "error_message": None, "resource_type": e.resource_type,
                                    "resource_name": e.resource_name, **extra},
                    resource_of=lambda e: _CONFIG_RESOURCE.get(e.resource_type, R.TOPIC))


DESCRIBE_CONFIGS = _configs("results", O.DESCRIBE_CONFIGS, {"configs": []})
ALTER_CONFIGS = _configs("responses", O.ALTER_CONFIGS, {})


@handles(P.describe_configs, authorize=DESCRIBE_CONFIGS)
async def describe_configs(broker, ctx, body) -> dict:
    results = []
    defaults, cache = _broker_defaults(broker), {}
    for r in body.resources:
        keys = set(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            _check_resource(broker, r)
        except KafkaError as e:
            results.append(_result(r, e, configs=[]))
            continue
        configs = (topic_config_entries(broker, r.resource_name, keys, synonyms=body.include_synonyms,
                                        defaults=defaults, cache=cache)
                   if r.resource_type == TOPIC
                   else _group_entries(broker, r.resource_name, keys, body.include_synonyms) if r.resource_type == GROUP
                   else _logger_entries(keys) if r.resource_type == BROKER_LOGGER
                   else _client_metrics_entries(broker, r.resource_name, keys, body.include_synonyms)
                   if r.resource_type == CLIENT_METRICS
                   else _broker_entries(broker, r.resource_name, keys, body.include_synonyms))
        results.append(_result(r, configs=configs))
    return {"throttle_time_ms": 0, "results": results}


def _check_entries(configs, incremental: bool) -> None:
    """ConfigAdminManager.preprocess: each key once, no null value but a DELETE's."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise InvalidRequestError("Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None and not (incremental and c.config_operation == DELETE)]
    if nulls:
        raise InvalidRequestError("Null value not supported for : " + ", ".join(nulls))


async def _apply(broker, resource, new_configs: dict, validate_only: bool) -> None:
    """Validate and (unless ``validate_only``) store one resource's new set of
    configs: a topic's overrides, or one dynamic broker layer."""
    if resource.resource_type == BROKER:
        per_broker = resource.resource_name != ""
        if validate_only:
            broker.dynamic.check(per_broker, new_configs)
        else:
            await broker.reconfigure(broker.dynamic.replace(per_broker, new_configs))
        return
    if resource.resource_type == CLIENT_METRICS:
        if validate_only:
            telemetry.check_subscription(resource.resource_name, new_configs)
        else:
            broker.client_metrics.replace(resource.resource_name, new_configs)
        return
    if resource.resource_type == GROUP:
        check_group_configs(new_configs, broker.config.values)
        if not validate_only:
            broker.shares.group_configs.replace(resource.resource_name, {
                n: stored_value(n, v) for n, v in new_configs.items()})
        return
    LogConfig.from_props(new_configs, base=broker.config.log_defaults)   # InvalidConfigError
    if not validate_only:
        broker.logs.set_topic_config(resource.resource_name, new_configs)


def _forwarded(broker, resource) -> bool:
    """On a node of a cluster, topic and dynamic broker configs are the controller's."""
    return broker.cluster is not None and resource.resource_type in (TOPIC, BROKER)


async def _forward(broker, ctx, body, responses: dict, *, incremental: bool) -> None:
    """The forwarded resources' answers into ``responses`` (by index): their entries checked
    here (ConfigAdminManager.preprocess), the rest by the controller, which writes the
    ConfigRecords (KafkaApis forwarding to ControllerApis); answered once this broker applied them."""
    ask = []
    for i, r in enumerate(body.resources):
        if i in responses:
            continue
        try:
            _check_entries(r.configs, incremental)
            ask.append(i)
        except KafkaError as e:
            responses[i] = _result(r, e)
    if not ask:
        return
    api = P.incremental_alter_configs if incremental else P.alter_configs
    try:
        r = await broker.cluster.forward(api.API.key, ctx.request_api_version, {
            "resources": [body.resources[i] for i in ask], "validate_only": body.validate_only})
    except ConnectionError as e:
        for i in ask:
            responses[i] = _result(body.resources[i], KafkaError(f"the controller is unreachable: {e}",
                                                                  error_code=ErrorCode.REQUEST_TIMED_OUT))
        return
    for i, answer in zip(ask, r.responses):
        responses[i] = {"error_code": answer.error_code, "error_message": answer.error_message,
                        "resource_type": answer.resource_type, "resource_name": answer.resource_name}


@handles(P.alter_configs, authorize=ALTER_CONFIGS)
async def alter_configs(broker, ctx, body) -> dict:
    """AlterConfigs replaces a resource's configs with exactly those given (Kafka's semantics)."""
    responses = {}
    for i, r in enumerate(body.resources):
        if _forwarded(broker, r):
            continue
        try:
            if r.resource_type == BROKER_LOGGER:     # ConfigAdminManager.preprocess (legacy AlterConfigs)
                raise InvalidRequestError(f"Unknown resource type {BROKER_LOGGER}")
            _check_resource(broker, r, altering=True)
            _check_entries(r.configs, incremental=False)
            await _apply(broker, r, {c.name: c.value for c in r.configs}, body.validate_only)
            responses[i] = _result(r)
        except KafkaError as e:
            responses[i] = _result(r, e)
    await _forward(broker, ctx, body, responses, incremental=False)
    return {"throttle_time_ms": 0, "responses": [responses[i] for i in range(len(body.resources))]}


def prepare_incremental(current: dict, op: int, name: str, value: str | None, *, broker_config: bool,
                 group_config: bool = False, client_metrics: bool = False) -> None:
    """ConfigAdminManager.prepareIncrementalConfigs: APPEND and SUBTRACT start from the
    stored value, else the config's Kafka default (not a broker-level one)."""
    if client_metrics:       # ClientMetricsConfigs: metrics and match are LISTs; names checked on apply
        is_list = name in (telemetry.METRICS, telemetry.MATCH)
    elif group_config:
        if name not in GROUP_CONFIGS:
            raise InvalidConfigError(f"Unknown group config name: {name}")
        is_list = False
    elif broker_config:
        is_list = name in LIST_CONFIGS
    elif name not in LogConfig.names():
        raise InvalidConfigError(f"Unknown topic config name: {name}")
    else:
        is_list = LogConfig.type_of(name) == "LIST"
    if op == SET:
        current[name] = value
    elif op == DELETE:
        current.pop(name, None)
    elif op in (APPEND, SUBTRACT):
        if group_config:    # the controller's ConfigurationControlManager knows no group config's type
            raise InvalidConfigError(f"Can't {'APPEND' if op == APPEND else 'SUBTRACT'} to key {name} because its "
                                     "type is not LIST.")
        if not is_list:
            raise InvalidConfigError(f"Config value append is not allowed for config key: {name}"
                                     if op == APPEND else f"Config value subtract is not allowed for config key: {name}")
        if name in current:
            base = current[name]
        else:
            base = (telemetry.DEFAULTS.get(name, "") if client_metrics else default_value(name) if broker_config
                    else LogConfig().to_props()[name])
        items = [v for v in (base or "").split(",") if v]
        given = [v for v in (value or "").split(",") if v]
        items = items + [v for v in given if v not in items] if op == APPEND else [v for v in items if v not in given]
        current[name] = ",".join(items)
    else:
        raise InvalidRequestError(f"Unknown operations type {op}")


@handles(P.incremental_alter_configs, authorize=ALTER_CONFIGS)
async def incremental_alter_configs(broker, ctx, body) -> dict:
    responses = {}
    for i, r in enumerate(body.resources):
        if _forwarded(broker, r):
            continue
        try:
            _check_resource(broker, r, altering=True)
            _check_entries(r.configs, incremental=True)
            if r.resource_type == BROKER_LOGGER:
                _alter_loggers(r.configs, body.validate_only)
                responses[i] = _result(r)
                continue
            current = (broker.logs.topic_overrides(r.resource_name) if r.resource_type == TOPIC
                       else broker.shares.group_configs.overrides(r.resource_name) if r.resource_type == GROUP
                       else broker.client_metrics.configs(r.resource_name) if r.resource_type == CLIENT_METRICS
                       else dict(broker.dynamic.layer(r.resource_name != "")))
            for c in r.configs:
                prepare_incremental(current, c.config_operation, c.name, c.value,
                                    broker_config=r.resource_type == BROKER,
                                    group_config=r.resource_type == GROUP, client_metrics=r.resource_type == CLIENT_METRICS)
            await _apply(broker, r, current, body.validate_only)
            responses[i] = _result(r)
        except KafkaError as e:
            responses[i] = _result(r, e)
    await _forward(broker, ctx, body, responses, incremental=True)
    return {"throttle_time_ms": 0, "responses": [responses[i] for i in range(len(body.resources))]}
