"""Client telemetry (KIP-714), as Kafka's ClientMetricsManager answers it.

Theory of operation. An operator names *subscriptions*: config resources of type
CLIENT_METRICS (16) whose configs are ``metrics`` (metric name prefixes, ``*`` all),
``interval.ms`` (push interval) and ``match`` (``attribute=regex`` pairs over the
client's instance id, client id, software name/version, source address and port).
A client asks GetTelemetrySubscriptions; the broker gives it an instance id (when it
sent zero) and the union of the subscriptions that match it: the metrics, the
shortest interval and a subscription id, a CRC-32C of that set as Kafka computes
it. The client then pushes its metrics (an OpenTelemetry MetricsData protobuf,
maybe compressed) with PushTelemetry, no more often than the interval; kproto
decodes them and appends one JSON line per push to ``client-metrics.jsonl`` in the
data directory (:data:`PUSHED_FILE`), where Kafka hands them to a receiver plugin.

A subscription change bumps a version: each instance is re-evaluated on its next
request (so a push with the old id answers UNKNOWN_SUBSCRIPTION_ID and the client
asks again). Instances live in memory, at most ``CACHE_MAX_SIZE``, forgotten after
max(60 s, 3 intervals) of silence (ClientMetricsManager's expiration timer).
"""

from __future__ import annotations

import json
import logging
import re
import struct
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from kproto.compression import decompress
from kproto.errors import (
    DecodeError, ErrorCode, InvalidConfigError, InvalidRequestError, KafkaError,
)
from kproto.jvm import int32, java_hashmap_order, java_string_hash
from kproto.log.manager import format_topic_id
from kproto.records import crc32c
from kproto.server.share.group_config import GroupConfigs

__all__ = ["ClientMetricsManager", "PUSHED_FILE", "check_subscription", "decode_metrics_data"]

log = logging.getLogger("kproto.server.telemetry")

PUSHED_FILE = "client-metrics.jsonl"
SUBSCRIPTIONS_FILE = "client-metrics.json"

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_NAMES = (INTERVAL_MS, MATCH, METRICS)      # sorted, as DescribeConfigs lists them
CONFIG_TYPES = {INTERVAL_MS: 3, MATCH: 7, METRICS: 7}     # INT, LIST (DescribeConfigsResponse config_type)
DEFAULTS = {METRICS: "", INTERVAL_MS: "300000", MATCH: ""}       # ClientMetricsConfigs' CONFIG
ALL_METRICS = "*"
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3600000
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                "client_source_address", "client_source_port")
# ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES, in its order: zstd, lz4, gzip, snappy
ACCEPTED_COMPRESSION_TYPES = [4, 3, 1, 2]
CACHE_MAX_SIZE = 16384
CACHE_EXPIRY_MS = 60_000
RESERVED_IDS = (uuid.UUID(int=0), uuid.UUID(int=1))     # Uuid.RESERVED: ZERO_UUID, METADATA_TOPIC_ID


class ThrottlingQuotaExceededError(KafkaError):
    error_code = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class UnknownSubscriptionIdError(KafkaError):
    error_code = ErrorCode.UNKNOWN_SUBSCRIPTION_ID


class UnsupportedCompressionTypeError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class TelemetryTooLargeError(KafkaError):
    error_code = ErrorCode.TELEMETRY_TOO_LARGE


# -- configs ---------------------------------------------------------------------------------

def _list(value: str) -> list[str]:
    """ConfigDef.parseType for LIST: comma-separated, each trimmed; "" is the empty list."""
    return [] if value.strip() == "" else [v.strip() for v in value.split(",")]


def _split_match(pattern: str) -> tuple[str, str]:
    """ClientMetricsConfigs.parseMatchingPatterns: ``name=regex`` at the first '='."""
    name, sep, regex = pattern.partition("=")
    if not sep or name.strip() not in MATCH_PARAMS:
        raise InvalidConfigError(f"Illegal client matching pattern: {pattern}")
    return name.strip(), regex.strip()


def _patterns(match: list[str]) -> dict[str, re.Pattern]:
    out = {}
    for p in match:
        name, regex = _split_match(p)
        try:
            out[name] = re.compile(regex)
        except re.error:
            raise InvalidConfigError(f"Illegal client matching pattern: {name}={regex}") from None
    return out


def check_subscription(name: str, configs: dict[str, str]) -> None:
    """ClientMetricsConfigs.validate: a name, known keys, a whole interval within
    [100 ms, 1 h], well-formed match patterns (a metric named twice is accepted: measured)."""
    if not name:
        raise InvalidRequestError("Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_NAMES:
            raise InvalidRequestError(f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in configs:
        raw = configs[INTERVAL_MS].strip()
        try:
            interval = int(raw)
        except ValueError:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {INTERVAL_MS}: "
                                     "Not a number of type INT") from None
        if not -2**31 <= interval < 2**31:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {INTERVAL_MS}: "
                                     "Not a number of type INT")
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise InvalidRequestError(f"Invalid value {interval} for {INTERVAL_MS}, interval must be "
                                      "between 100 and 3600000 (1 hour)")
    if MATCH in configs:
        _patterns(_list(configs[MATCH]))


# -- Java's iteration order, for the subscription id ------------------------------------------

def java_hash_set_order(items: list[str]) -> list[str]:
    """The order a java.util.HashSet built by adding ``items`` in turn iterates them."""
    return java_hashmap_order(items, java_string_hash)


def uuid_hash_code(u: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode."""
    msb, lsb = u.int >> 64, u.int & ((1 << 64) - 1)
    h = msb ^ lsb
    return int32((h >> 32) ^ h)


def subscription_id(metrics: list[str], push_interval_ms: int, instance_id: uuid.UUID) -> int:
    """ClientMetricsManager.computeSubscriptionId: CRC-32C of the metric set as Java
    prints it ("[a, b]") followed by the interval, XOR the instance id's hash."""
    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    return int32(crc32c(text.encode()) ^ uuid_hash_code(instance_id))


# -- OTLP MetricsData: a small protobuf reader ------------------------------------------------

def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message: an int for a varint,
    the raw bytes otherwise. DecodeError on a truncated or unknown wire type."""
    pos, end = 0, len(buf)

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= end or shift > 63:
                raise DecodeError("truncated varint in telemetry metrics")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    while pos < end:
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise DecodeError("truncated fixed field in telemetry metrics")
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 2:
            size = varint()
            if pos + size > end:
                raise DecodeError("truncated length-delimited field in telemetry metrics")
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise DecodeError(f"unsupported protobuf wire type {wire} in telemetry metrics")
        yield number, wire, value


def _any_value(buf: bytes):
    for n, w, v in _fields(buf):
        if n == 1 and w == 2:
            return v.decode("utf-8", "replace")
        if n == 2 and w == 0:
            return bool(v)
        if n == 3 and w == 0:
            return v - (1 << 64) if v >= 1 << 63 else v
        if n == 4 and w == 1:
            return struct.unpack("<d", v)[0]
    return None


def _attributes(kvs: list[bytes]) -> dict:
    out = {}
    for kv in kvs:
        key, value = "", None
        for n, w, v in _fields(kv):
            if n == 1 and w == 2:
                key = v.decode("utf-8", "replace")
            elif n == 2 and w == 2:
                value = _any_value(v)
        out[key] = value
    return out


# Metric.data's oneof: field number -> (type, the data point's value fields by number)
_DATA = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}


def _point(buf: bytes, kind: str) -> dict:
    """A NumberDataPoint (gauge, sum: as_double 4, as_int 6), else a histogram-like point
    (count 4, sum 5); attributes and time for all."""
    attrs, point = [], {}
    attr_field = 7 if kind in ("gauge", "sum") else 9
    for n, w, v in _fields(buf):
        if n == attr_field and w == 2:
            attrs.append(v)
        elif n == 3 and w == 1:
            point["time_unix_nano"] = int.from_bytes(v, "little")
        elif kind in ("gauge", "sum") and n == 4 and w == 1:
            point["value"] = struct.unpack("<d", v)[0]
        elif kind in ("gauge", "sum") and n == 6 and w == 1:
            point["value"] = struct.unpack("<q", v)[0]
        elif kind not in ("gauge", "sum") and n == 4 and w == 1:
            point["count"] = int.from_bytes(v, "little")
        elif kind not in ("gauge", "sum") and n == 5 and w == 1:
            point["sum"] = struct.unpack("<d", v)[0]
    point["attributes"] = _attributes(attrs)
    return point


def _metric(buf: bytes) -> dict:
    metric = {"name": "", "type": None, "points": []}
    for n, w, v in _fields(buf):
        if n == 1 and w == 2:
            metric["name"] = v.decode("utf-8", "replace")
        elif n == 3 and w == 2:
            metric["unit"] = v.decode("utf-8", "replace")
        elif n in _DATA and w == 2:
            metric["type"] = _DATA[n]
            metric["points"] = [_point(p, _DATA[n]) for pn, pw, p in _fields(v) if pn == 1 and pw == 2]
    return metric


def decode_metrics_data(buf: bytes) -> tuple[dict, list[dict]]:
    """An OTLP MetricsData: (its resources' attributes, its metrics with their points)."""
    resource, metrics = {}, []
    for n, w, rm in _fields(buf):
        if n != 1 or w != 2:
            continue
        for rn, rw, v in _fields(rm):
            if rn == 1 and rw == 2:        # Resource: attributes 1
                resource.update(_attributes([a for an, aw, a in _fields(v) if an == 1 and aw == 2]))
            elif rn == 2 and rw == 2:      # ScopeMetrics: metrics 2
                metrics += [_metric(m) for mn, mw, m in _fields(v) if mn == 2 and mw == 2]
    return resource, metrics


# -- the manager ------------------------------------------------------------------------------

@dataclass(slots=True)
class Subscription:
    name: str
    metrics: list[str]
    interval_ms: int
    match: dict[str, re.Pattern]


@dataclass(slots=True)
class ClientInstance:
    """ClientMetricsInstance: one client's evaluated subscription and its request times."""
    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    version: int
    metrics: list[str]
    push_interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    last_seen_ms: int = 0
    terminating: bool = False

    def may_get(self, now: int) -> bool:
        """ClientMetricsInstance.maybeUpdateGetRequestTimestamp."""
        if now - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now
            return True
        return False

    def may_push(self, now: int) -> bool:
        """ClientMetricsInstance.maybeUpdatePushRequestTimestamp: a push right after a
        GetTelemetrySubscriptions is accepted whatever the time (the client jitters)."""
        ok = self.last_get_ms > self.last_push_ms or now - self.last_push_ms >= self.push_interval_ms
        if ok:
            self.last_push_ms = now
        return ok


def _matches(attributes: dict, patterns: dict[str, re.Pattern]) -> bool:
    """ClientMetricsInstanceMetadata.isMatch: every pattern matches its whole attribute."""
    return all(attributes.get(k) is not None and p.fullmatch(attributes[k]) for k, p in patterns.items())


class ClientMetricsManager:
    """Subscriptions (kept in ``client-metrics.json``), client instances (in memory)
    and pushed metrics (appended to ``client-metrics.jsonl``)."""

    def __init__(self, data_dir: Path, telemetry_max_bytes: int, clock=lambda: int(time.time() * 1000)) -> None:
        self.store = GroupConfigs(Path(data_dir) / SUBSCRIPTIONS_FILE)
        self.pushed_path = Path(data_dir) / PUSHED_FILE
        self.max_bytes = telemetry_max_bytes
        self.clock = clock
        self.version = 0
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()

    # subscriptions

    def names(self) -> list[str]:
        return self.store.names()

    def configs(self, name: str) -> dict[str, str]:
        return self.store.overrides(name)

    def replace(self, name: str, configs: dict[str, str]) -> None:
        """ClientMetricsManager.updateSubscription: validated configs replace the old;
        none removes the subscription."""
        check_subscription(name, configs)
        self.store.replace(name, configs)
        self.version += 1

    def _subscriptions(self) -> list[Subscription]:
        out = []
        for name in java_hash_set_order(self.names()):
            c = {**DEFAULTS, **self.configs(name)}
            out.append(Subscription(name, java_hash_set_order(_list(c[METRICS])), int(c[INTERVAL_MS]),
                                    _patterns(_list(c[MATCH]))))
        return out

    # instances

    def _evaluate(self, instance_id: uuid.UUID, attributes: dict) -> ClientInstance:
        """ClientMetricsManager.createClientInstance: the union of matching subscriptions."""
        interval, metrics, everything = int(DEFAULTS[INTERVAL_MS]), [], False
        for s in self._subscriptions():
            if _matches(attributes, s.match):
                everything = everything or ALL_METRICS in s.metrics
                metrics += s.metrics
                interval = min(interval, s.interval_ms)
        metrics = [ALL_METRICS] if everything else java_hash_set_order(metrics)
        return ClientInstance(instance_id, attributes, subscription_id(metrics, interval, instance_id),
                              self.version, metrics, interval)

    def _instance(self, instance_id: uuid.UUID, ctx) -> ClientInstance:
        now = self.clock()
        inst = self.instances.get(instance_id)
        if inst is not None and now - inst.last_seen_ms >= max(CACHE_EXPIRY_MS, 3 * inst.push_interval_ms):
            inst = None         # the expiration timer would have removed it
        if inst is None:
            software = ctx.connection.client_software
            port = ctx.peer.rpartition(":")[2]
            attributes = {"client_instance_id": format_topic_id(instance_id), "client_id": ctx.client_id,
                          "client_software_name": software[0], "client_software_version": software[1],
                          "client_source_address": ctx.host, "client_source_port": port or None}
            inst = self._evaluate(instance_id, attributes)
        elif inst.version < self.version:        # a subscription changed since
            inst = self._evaluate(instance_id, inst.attributes)
        inst.last_seen_ms = now
        self.instances[instance_id] = inst
        self.instances.move_to_end(instance_id)
        while len(self.instances) > CACHE_MAX_SIZE:
            self.instances.popitem(last=False)
        return inst

    def get_subscriptions(self, ctx, instance_id: uuid.UUID) -> dict:
        """ClientMetricsManager.processGetTelemetrySubscriptionRequest."""
        if instance_id == RESERVED_IDS[0]:
            instance_id = uuid.uuid4()
            while instance_id in self.instances or instance_id in RESERVED_IDS:
                instance_id = uuid.uuid4()
        inst = self._instance(instance_id, ctx)
        body = {"throttle_time_ms": 0, "error_code": 0, "client_instance_id": uuid.UUID(int=0),
                "subscription_id": 0, "accepted_compression_types": [], "push_interval_ms": 0,
                "telemetry_max_bytes": 0, "delta_temporality": False, "requested_metrics": []}
        if not inst.may_get(self.clock()):
            # validateGetRequest: its exemption for a client recovering from an error never
            # applies (its condition is always true in Kafka), so any early request is throttled
            return {**body, "error_code": ErrorCode.THROTTLING_QUOTA_EXCEEDED}
        return {**body, "client_instance_id": instance_id, "subscription_id": inst.subscription_id,
                "accepted_compression_types": ACCEPTED_COMPRESSION_TYPES,
                "push_interval_ms": inst.push_interval_ms, "telemetry_max_bytes": self.max_bytes,
                "delta_temporality": True, "requested_metrics": list(inst.metrics)}

    def push(self, ctx, body) -> int:
        """ClientMetricsManager.processPushTelemetryRequest: the error code to answer."""
        if body.client_instance_id in RESERVED_IDS:
            return ErrorCode.INVALID_REQUEST
        inst = self._instance(body.client_instance_id, ctx)
        try:
            self._check_push(inst, body, self.clock())
        except KafkaError as e:
            return e.error_code
        finally:
            inst.terminating = body.terminating
        if body.metrics:
            try:
                self._record(ctx, inst, body)
            except DecodeError as e:        # Kafka: the receiver plugin failed -> INVALID_RECORD
                log.warning("client %s pushed unreadable metrics: %s", format_topic_id(inst.instance_id), e)
                return ErrorCode.INVALID_RECORD
        return 0

    def _check_push(self, inst: ClientInstance, body, now: int) -> None:
        """ClientMetricsManager.validatePushRequest, in its order."""
        if inst.terminating:
            raise InvalidRequestError(f"Client [{format_topic_id(inst.instance_id)}] sent the previous request "
                                      "with state terminating to TRUE, can not acceptany requests after that")
        if not inst.may_push(now) and not body.terminating:
            raise ThrottlingQuotaExceededError("Request arrived before the next push interval time")
        if body.subscription_id != inst.subscription_id:
            raise UnknownSubscriptionIdError("Unknown client subscription id")
        if body.compression_type not in (0, 1, 2, 3, 4):      # CompressionType.forId
            raise UnsupportedCompressionTypeError(f"Unknown compression type [{body.compression_type}]")
        if body.metrics is not None and len(body.metrics) > self.max_bytes:
            raise TelemetryTooLargeError(f"Telemetry request is larger than the maximum allowed size "
                                         f"[{self.max_bytes}]")

    def _record(self, ctx, inst: ClientInstance, body) -> None:
        # telemetry.max.bytes bounds what was sent; the payload decompressed is bounded
        # alike by decompress's own limit
        raw = decompress(body.compression_type, body.metrics)
        resource, metrics = decode_metrics_data(bytes(raw))
        line = {"time_ms": self.clock(), "client_instance_id": format_topic_id(inst.instance_id),
                "subscription_id": body.subscription_id, "terminating": body.terminating,
                "compression_type": body.compression_type, "client_id": ctx.client_id,
                "client_address": ctx.peer, "principal": str(ctx.principal),
                "resource": resource, "metrics": metrics}
        with open(self.pushed_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")
        log.debug("client %s pushed %d metrics", line["client_instance_id"], len(metrics))
