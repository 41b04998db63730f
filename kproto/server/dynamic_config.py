"""Dynamic broker configs (KIP-226): the BROKER resource of AlterConfigs and
IncrementalAlterConfigs.

Theory of operation. Kafka keeps two dynamic layers over a broker's static
config (the ``kproto serve --config`` values): the cluster-wide default
(resource name "") and this broker's own (resource name = its node id). The
effective config is static < dynamic default < dynamic per-broker
(DynamicBrokerConfig.updateCurrentConfig), rebuilt whole after each change and
handed to the broker, which applies what it uses at runtime. Both layers are
persisted in ``<data-dir>/dynamic-broker-configs.json`` (KRaft keeps them as
ConfigRecords in the metadata log), with the client quotas (ClientQuotaRecords
there; server/quotas.py), and re-applied at start-up; an entry a
later version would refuse is dropped with a log line, as
DynamicBrokerConfig.fromPersistentProps does, so the file never stops a start.

Only Kafka's dynamic configs (DynamicBrokerConfig.AllDynamicConfigs) change;
the checks, their order and their words are DynamicBrokerConfig.validateConfigs'.
Beyond Kafka: kproto refuses the listener and security configs it reads only
at start-up (a TLS or SASL reload is not implemented), and names it does not
know (Kafka accepts custom plugin configs; kproto cannot tell those from a
Kafka config it does not model, so it refuses rather than store what Kafka may).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kproto.errors import InvalidConfigError, InvalidRequestError, KafkaError
from kproto.log import checkpoint as ckpt
from kproto.security.config import SECURITY_CONFIGS, is_listener_config
from kproto.server.config import (BROKER_CONFIGS, BROKER_QUOTA_CONFIGS, LOG_SYNONYMS, BrokerConfig,
                                  broker_quota_value, typed_value)
from kproto.server.network import parse_ip_overrides
from kproto.server.quotas import Alteration, Entity, alter, entity, entity_text
from kproto.topic_config import LogConfig

log = logging.getLogger("kproto.server")

DYNAMIC_CONFIGS_FILE = "dynamic-broker-configs.json"

# DescribeConfigs' ConfigSource ids (ConfigEntry.ConfigSource).
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

# SslConfigs.RECONFIGURABLE_CONFIGS: settable only per listener (listener.name.<l>.<config>).
SSL_RECONFIGURABLE = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})

# DynamicListenerConfig.ReconfigurableConfigs
LISTENER_CONFIGS = frozenset({
    "advertised.listeners", "listeners", "listener.security.protocol.map",
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
    "ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads"})

# DynamicBrokerConfig.AllDynamicConfigs: the union of every reconfigurable's set.
ALL_DYNAMIC_CONFIGS = (
    SSL_RECONFIGURABLE
    | {"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
       "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
       "log.cleaner.backoff.ms"}                                            # LogCleaner
    | set(LOG_SYNONYMS)                      # DynamicLogConfig (log.message.format.version excepted)
    | {"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
       "background.threads"}                                                # DynamicThreadPool
    | {"metric.reporters"}
    | LISTENER_CONFIGS
    | {"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections",
       "max.connection.creation.rate"}                                      # SocketServer
    | {"producer.id.expiration.ms", "transaction.partition.verification.enable"}
    | {"remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
       "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
       "remote.list.offsets.request.timeout.ms"}                             # DynamicRemoteLogConfig
    | set(BROKER_QUOTA_CONFIGS))     # the replication throttles' rates (described as not read-only)

# DynamicBrokerConfig.PerBrokerConfigs: refused at the cluster-wide default.
PER_BROKER_CONFIGS = (SSL_RECONFIGURABLE | LISTENER_CONFIGS) - {
    "max.connections", "max.connection.creation.rate", "num.network.threads"}

# Dynamic in Kafka, read by kproto's listeners only at start-up.
STARTUP_ONLY = ALL_DYNAMIC_CONFIGS & set(SECURITY_CONFIGS)

# Every name ``kproto serve`` knows, dynamic or not (KafkaConfig.configNames as kproto models it).
KNOWN_CONFIGS = frozenset(BROKER_CONFIGS) | frozenset(LOG_SYNONYMS) | {"log.retention.hours",
                                                                       "log.retention.minutes"} | set(BROKER_QUOTA_CONFIGS)

# ConfigDef.Type.LIST broker configs: the ones IncrementalAlterConfigs may APPEND to / SUBTRACT from.
LIST_CONFIGS = frozenset({"metric.reporters", "sasl.kerberos.principal.to.local.rules"}
                         | {b for b, t in LOG_SYNONYMS.items() if LogConfig.type_of(t) == "LIST"}
                         | {"listeners", "advertised.listeners", "sasl.enabled.mechanisms",
                            "ssl.enabled.protocols", "ssl.cipher.suites"})


def _names(names: Iterable[str]) -> str:
    """A Scala Set as ConfigException messages print it (sorted: Kafka's order is a hash's)."""
    return f"Set({', '.join(sorted(names))})"


def default_value(name: str) -> str | None:
    """A broker config's KafkaConfig default as a string (ConfigDef.convertToString)."""
    if name in LOG_SYNONYMS:
        return LogConfig().to_props()[LOG_SYNONYMS[name]]
    value = BROKER_CONFIGS[name][0] if name in BROKER_CONFIGS else None
    return None if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def validate(props: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs: each failure is a ConfigException,
    which ConfigAdminManager.validateBrokerConfigChange answers as INVALID_REQUEST."""
    names = set(props)
    unknown = {n for n in names if n not in KNOWN_CONFIGS and not is_listener_config(n)}
    if unknown:
        raise InvalidRequestError(f"Unknown broker config name: {min(unknown)}")
    fixed = names & (KNOWN_CONFIGS - ALL_DYNAMIC_CONFIGS)
    if fixed:
        raise InvalidRequestError(f"Cannot update these configs dynamically: {_names(fixed)}")
    unprefixed = names & SSL_RECONFIGURABLE
    if unprefixed:
        raise InvalidRequestError("These security configs can be dynamically updated only per-listener "
                                  f"using the listener prefix: {_names(unprefixed)}")
    startup = {n for n in names if n in STARTUP_ONLY or is_listener_config(n)}
    if startup:
        raise InvalidRequestError(f"kproto reads these configs only at start-up; restart with them: "
                                  f"{_names(startup)}")
    for name, raw in props.items():
        _check_value(name, raw)
    if not per_broker and names & PER_BROKER_CONFIGS:
        raise InvalidRequestError("Cannot update these configs at default cluster level, broker id must be "
                                  f"specified: {_names(names & PER_BROKER_CONFIGS)}")


def _check_value(name: str, raw: str) -> None:
    try:
        if name in LOG_SYNONYMS:
            LogConfig.parse_value(LOG_SYNONYMS[name], raw, label=name)
        elif raw is None:
            raise InvalidConfigError(f"Invalid value null for configuration {name}: null is not a valid value")
        elif name in BROKER_QUOTA_CONFIGS:
            broker_quota_value(name, raw)
        else:
            typed_value(name, BROKER_CONFIGS[name][1], raw)
            if name == "max.connections.per.ip.overrides":
                parse_ip_overrides(raw)
    except KafkaError as e:
        raise InvalidRequestError(str(e)) from None


def _overlay(base: dict[str, str], layer: Mapping[str, str]) -> None:
    """DynamicBrokerConfig.overrideProps: a set config displaces its synonyms."""
    for name, value in layer.items():
        if name == "log.retention.ms":
            base.pop("log.retention.minutes", None)
            base.pop("log.retention.hours", None)
        base[name] = value


class DynamicBrokerConfig:
    """The two dynamic layers of one broker, on disk and merged over its static config."""

    def __init__(self, data_dir: str | Path, static: BrokerConfig) -> None:
        self.path = Path(data_dir) / DYNAMIC_CONFIGS_FILE
        self.static = static
        self.default: dict[str, str] = {}       # resource name "": DYNAMIC_DEFAULT_BROKER_CONFIG
        self.broker: dict[str, str] = {}        # resource name = node id: DYNAMIC_BROKER_CONFIG
        self.client_quotas: dict[Entity, dict[str, float]] = {}     # AlterClientQuotas' entities
        self._read()
        try:
            self.merged()
        except KafkaError as e:       # DynamicBrokerConfig.updateBrokerConfig: logged, not applied
            log.error("dynamic broker configs in %s could not be applied, ignoring them: %s", self.path, e)
            self.default.clear()
            self.broker.clear()

    def _read(self) -> None:
        try:
            doc = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except json.JSONDecodeError as e:
            raise ckpt.CorruptCheckpointError(f"invalid JSON: {e.msg}", file=str(self.path),
                                              position=e.pos) from None
        for per_broker, layer in ((False, self.default), (True, self.broker)):
            for name, value in dict(doc.get("broker" if per_broker else "default", {})).items():
                try:
                    validate({name: value}, per_broker)
                except KafkaError as e:
                    log.error("dynamic broker config %s in %s is ignored: %s", name, self.path, e)
                    continue
                layer[name] = value
        for i, item in enumerate(doc.get("client_quotas", [])):
            try:
                e = entity(dict(item["entity"]).items())
                results, changes = alter({}, [Alteration(e, tuple((k, float(v)) for k, v in item["values"].items()))])
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                log.error("client quota %d in %s is ignored: unreadable (%s)", i, self.path, err)
                continue
            if results[e][0]:
                log.error("client quota %s in %s is ignored: %s", entity_text(e), self.path, results[e][1])
                continue
            self.client_quotas[e] = changes[e]

    def _save(self) -> None:
        doc: dict[str, Any] = {"version": 0, "default": self.default, "broker": self.broker}
        if self.client_quotas:
            doc["client_quotas"] = [{"entity": dict(e), "values": v}
                                    for e, v in sorted(self.client_quotas.items(), key=repr)]
        ckpt.write_atomically(self.path, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def set_client_quotas(self, changes: Mapping[Entity, Mapping[str, float]]) -> None:
        """Persist and take these entities' new values (an empty one removes the entity)."""
        for e, values in changes.items():
            if values:
                self.client_quotas[e] = dict(values)
            else:
                self.client_quotas.pop(e, None)
        self._save()

    def layer(self, per_broker: bool) -> dict[str, str]:
        return self.broker if per_broker else self.default

    def merged(self, default: Mapping[str, str] | None = None,
               broker: Mapping[str, str] | None = None) -> BrokerConfig:
        """The effective config with these layers (the current ones when None)."""
        props = dict(self.static.overrides)
        _overlay(props, self.default if default is None else default)
        _overlay(props, self.broker if broker is None else broker)
        config = BrokerConfig.from_props(props)
        # Sources stay the static ones: DescribeConfigs reads the layers from here.
        return BrokerConfig(config.values, config.log_defaults, self.static.overrides)

    def check(self, per_broker: bool, props: Mapping[str, str]) -> BrokerConfig:
        """Validate ``props`` as the new contents of one layer; the config they make."""
        validate(props, per_broker)
        try:
            return self.merged(**{"broker" if per_broker else "default": props})
        except KafkaError as e:       # a conflict across layers (min > max compaction lag)
            raise InvalidRequestError(str(e)) from None

    def replace(self, per_broker: bool, props: Mapping[str, str]) -> BrokerConfig:
        """Validate, persist and take ``props`` as one layer; the new effective config."""
        config = self.check(per_broker, props)
        layer = self.layer(per_broker)
        layer.clear()
        layer.update(props)
        self._save()
        return config

    def sources(self, name: str) -> list[tuple[str, Any, int]]:
        """(name, value, source) of each layer that sets ``name`` or a synonym, highest
        first (ConfigHelper.configSynonyms, without the DEFAULT_CONFIG entry)."""
        names = [name] + (["log.retention.minutes", "log.retention.hours"] if name == "log.retention.ms" else [])
        out = []
        for layer, source in ((self.broker, DYNAMIC_BROKER_CONFIG), (self.default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                              (self.static.overrides, STATIC_BROKER_CONFIG)):
            out += [(n, layer[n], source) for n in names if n in layer]
        return out
