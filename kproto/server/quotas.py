"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546): what is stored, how it is
described and altered, and how a request is measured against it.

Theory of operation. A quota entity is a set of (type, name) pairs over ``user``,
``client-id`` and ``ip``, a name None meaning the type's default; each holds quota values
by key. Altering validates as Kafka's ClientQuotaControlManager (its checks, order and
texts), describing filters as ClientQuotasImage.describe (exact, default and any-name
components, ``strict``). The values live with the dynamic broker configs
(server/dynamic_config.py, one file), as Kafka keeps ClientQuotaRecords beside
ConfigRecords in its metadata log.

Enforcement is Kafka's ClientQuotaManager with its DefaultQuotaCallback: per quota key, a
request's (user principal, client id) resolves to the most specific entity that sets that
key (user+client-id > user+default client-id > user > default user+client-id > default
user+default client-id > default user > client-id > default client-id); the resolved
entity's (user, client-id) pair names the sensor whose Rate (SampledStat over
``quota.window.num`` windows of ``quota.window.size.seconds``) records the request's bytes
or time. A value that takes the rate over the bound is still recorded, and answers a
throttle time QuotaUtils.throttleTime computes: (rate - bound) / bound * the rate's
window. The broker answers that time in ``throttle_time_ms`` and mutes the connection
for it after the response (KIP-219; server/network.py). ``controller_mutation_rate`` is
a TokenBucket of partitions (ControllerMutationQuotaManager) and ``connection_creation_rate``
a Rate of connections per client address (SocketServer's ConnectionQuotas). No I/O here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kproto.errors import ErrorCode, InvalidRequestError, KafkaError, UnsupportedVersionError

USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

# QuotaConfig.userAndClientQuotaConfigs() and ipConfigs(): key -> ConfigDef type
CLIENT_QUOTA_KEYS = {PRODUCER_BYTE_RATE: "LONG", CONSUMER_BYTE_RATE: "LONG", REQUEST_PERCENTAGE: "DOUBLE",
                     CONTROLLER_MUTATION_RATE: "DOUBLE"}
IP_QUOTA_KEYS = {CONNECTION_CREATION_RATE: "INT"}
TYPE_MAX = {"SHORT": (2**15 - 1, "a SHORT"), "INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}

# DescribeClientQuotasRequest match types
MATCH_TYPE_EXACT, MATCH_TYPE_DEFAULT, MATCH_TYPE_SPECIFIED = 0, 1, 2

# A quota entity: its (type, name) pairs in the order Kafka's HashMap iterates them
# (client-id, user; ip alone), name None for the type's default.
Entity = tuple[tuple[str, "str | None"], ...]
_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}


def entity(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(dict(pairs).items(), key=lambda p: (_ORDER.get(p[0], 3), p[0])))


def entity_text(e: Entity) -> str:
    """ClientQuotaEntity.toString, as Kafka's error texts show it."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in e) + "})"


# --- AlterClientQuotas (ClientQuotaControlManager) -------------------------------------------

def valid_ip_entity(name: str | None) -> bool:
    """ClientQuotaControlManager.isValidIpEntity: an address or a resolvable name. Only
    literals and localhost here: kproto never resolves a name a client sends."""
    if name is None or name == "localhost":
        return True
    import ipaddress
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _keys_for(types: Mapping[str, str | None]) -> dict[str, str]:
    """ClientQuotaControlManager.configKeysForEntityType; InvalidRequestError if refused."""
    if IP in types:
        if USER in types or CLIENT_ID in types:
            raise InvalidRequestError("Invalid quota entity combination, IP entity shouldnot be combined with "
                                      "User or ClientId")      # Kafka's text, its missing space kept
        if not valid_ip_entity(types[IP]):
            raise InvalidRequestError(f"{types[IP]} is not a valid IP or resolvable host.")
        return IP_QUOTA_KEYS
    if USER in types or CLIENT_ID in types:
        return CLIENT_QUOTA_KEYS
    raise InvalidRequestError("Invalid empty client quota entity")


def _check_value(keys: Mapping[str, str], key: str, value: float) -> None:
    """ClientQuotaControlManager.validateQuotaKeyValue."""
    kind = keys.get(key)
    if kind is None:
        raise InvalidRequestError(f"Invalid configuration key {key}")
    if not value > 0.0:
        raise InvalidRequestError(f"Quota {key} must be greater than 0")
    if kind in TYPE_MAX:
        limit, name = TYPE_MAX[kind]
        if value > limit:
            raise InvalidRequestError(f"Proposed value for {key} is too large for {name}.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise InvalidRequestError(f"{key} cannot be a fractional value.")


@dataclass(frozen=True, slots=True)
class Alteration:
    """One entry of AlterClientQuotas: the entity as sent, ops as (key, value or None to remove)."""

    entity: Entity
    ops: tuple[tuple[str, float | None], ...]


def alter(current: Mapping[Entity, Mapping[str, float]], alterations: Iterable[Alteration]
          ) -> tuple[dict[Entity, tuple[int, str | None]], dict[Entity, dict[str, float]]]:
    """ClientQuotaControlManager.alterClientQuotas: each entity's (error code, message), and
    the entities' new values ({} removes the entity) for those that succeeded. Nothing is
    applied here."""
    results: dict[Entity, tuple[int, str | None]] = {}
    changes: dict[Entity, dict[str, float]] = {}
    for a in alterations:
        ops: dict[str, float | None] = {}
        for key, value in a.ops:
            if key in ops:
                results[a.entity] = (ErrorCode.INVALID_REQUEST, f"Duplicate quota key {key} not updating quota "
                                                                 f"for this entity {entity_text(a.entity)}")
            else:
                ops[key] = value
        if a.entity in results:     # also a second entry for an entity: Kafka keeps the first's changes
            results[a.entity] = (ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(a.entity)}")
            continue
        try:
            _check_entity(a.entity)
            keys = _keys_for(dict(a.entity))
            new = dict(current.get(a.entity, {}))
            for key, value in ops.items():
                if value is None:
                    new.pop(key, None)
                else:
                    _check_value(keys, key, value)
                    new[key] = value
        except InvalidRequestError as e:
            results[a.entity] = (ErrorCode.INVALID_REQUEST, str(e))
            continue
        results[a.entity] = (ErrorCode.NONE, None)
        changes[a.entity] = new
    return results, changes


def _check_entity(e: Entity) -> None:
    """ClientQuotaControlManager.validateEntity (a type twice cannot reach here: the request's
    entity is a map, as AlterClientQuotasRequest.entries() builds it)."""
    if not e:
        raise InvalidRequestError("Invalid empty client quota entity")
    for kind, name in e:
        if kind not in (USER, CLIENT_ID, IP):
            raise InvalidRequestError(f"Unhandled client quota entity type: {kind}")
        if name is not None and name == "":
            raise InvalidRequestError(f"Empty {kind} not supported")


# --- DescribeClientQuotas (ClientQuotasImage.describe) ---------------------------------------

def describe(quotas: Mapping[Entity, Mapping[str, float]], components: Iterable[Any], strict: bool
             ) -> list[tuple[Entity, dict[str, float]]]:
    """The entities matching the filter with their values; InvalidRequestError or
    UnsupportedVersionError with Kafka's text for a filter Kafka refuses."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for c in components:
        kind, match_type, match = c["entity_type"], c["match_type"], c["match"]
        if kind == "":
            raise InvalidRequestError("Invalid empty entity type.")
        if kind in exact or kind in typed:
            raise InvalidRequestError(f"Entity type {kind} cannot appear more than once in the filter.")
        if kind not in (IP, USER, CLIENT_ID):
            raise UnsupportedVersionError(f"Unsupported entity type {kind}")
        if match_type == MATCH_TYPE_EXACT:
            if match is None:
                raise InvalidRequestError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[kind] = match
        elif match_type == MATCH_TYPE_DEFAULT:
            if match is not None:
                raise InvalidRequestError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[kind] = None
        elif match_type == MATCH_TYPE_SPECIFIED:
            if match is not None:
                raise InvalidRequestError("Request specified MATCH_TYPE_SPECIFIED, but also specified a match "
                                          "string.")
            typed.add(kind)
        else:
            raise InvalidRequestError(f"Unknown match type {match_type}")
    if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
        raise InvalidRequestError("Invalid entity filter component combination. IP filter component should not "
                                  "be used with user or clientId filter component.")
    out = []
    for e, values in quotas.items():
        names = dict(e)
        if strict and len(names) != len(exact) + len(typed):
            continue
        if all(k in names and names[k] == v for k, v in exact.items()) and all(k in names for k in typed):
            out.append((e, dict(values)))
    return out


# --- enforcement (ClientQuotaManager, Sensor, Rate, QuotaUtils) ------------------------------

class Rate:
    """Kafka's Rate over a SampledTotal (metrics.stats.Rate, SampledStat): ``samples``
    windows of ``window_ms`` (and one overlapping window more), the sum of the values
    recorded over the time they span, in units per second."""

    __slots__ = ("samples", "window_ms", "_windows", "_current")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples, self.window_ms = samples, window_ms
        self._windows: list[list[float]] = []       # [start_ms, last_event_ms, value]
        self._current = 0

    def _now_window(self, now: int) -> list[float]:
        if not self._windows:
            self._windows.append([now, now, 0.0])
        return self._windows[self._current]

    def record(self, value: float, now: int) -> None:
        """SampledStat.record: a window is complete once ``window_ms`` old."""
        w = self._now_window(now)
        if now - w[0] >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._windows):
                self._windows.append([now, now, 0.0])
            else:
                self._windows[self._current][:] = [now, now, 0.0]
            w = self._windows[self._current]
        w[2] += value
        w[1] = now

    def _purge(self, now: int) -> None:
        """SampledStat.purgeObsoleteSamples: a window with no event for samples * window_ms is reset."""
        for w in self._windows:
            if now - w[1] >= self.samples * self.window_ms:
                w[:] = [now, now, 0.0]

    def window_size_ms(self, now: int) -> int:
        """Rate.windowSize: the time the windows span, at least samples - 1 full windows."""
        self._purge(now)
        oldest = min(w[0] for w in self._windows) if self._windows else now
        elapsed = now - oldest
        full = int(elapsed // self.window_ms)
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(int(elapsed), 1)

    def measure(self, now: int) -> float:
        self._purge(now)
        return sum(w[2] for w in self._windows) / (self.window_size_ms(now) / 1000)

    def last_event_ms(self) -> float:
        return max((w[1] for w in self._windows), default=0)


def java_round(x: float) -> int:
    """Math.round(double): floor(x + 0.5)."""
    return math.floor(x + 0.5)


# ClientQuotaManager.InactiveSensorExpirationTimeSeconds
SENSOR_EXPIRY_MS = 3600 * 1000


class ClientQuotaManager:
    """One quota key's enforcement (Kafka's ClientQuotaManager with the DefaultQuotaCallback):
    sensors per (user, client-id) tags, the quota of the most specific entity setting the key."""

    def __init__(self, key: str, quotas: Mapping[Entity, Mapping[str, float]], samples: int, window_s: int,
                 max_throttle_ms: int | None = None) -> None:
        self.key = key
        self.quotas = quotas            # the broker's entities -> values (read, never written here)
        self.samples, self.window_ms = samples, window_s * 1000
        self.max_throttle_ms = max_throttle_ms      # ClientRequestQuotaManager bounds it to one window
        self.sensors: dict[tuple[str, str], Rate] = {}
        self._next_expiry = 0
        self._enabled = False
        self.refresh()

    def refresh(self) -> None:
        """The quotas changed (quotasEnabled is asked on every request: kept, not scanned)."""
        self._enabled = any(self.key in v for v in self.quotas.values())

    def _bound(self, e: Entity) -> float | None:
        return self.quotas.get(e, {}).get(self.key)

    def enabled(self) -> bool:
        """quotasEnabled: some entity sets this key."""
        return self._enabled

    def tags(self, user: str, client_id: str) -> tuple[str, str]:
        """DefaultQuotaCallback.quotaMetricTags: whose sensor this request counts in."""
        def has(*pairs: tuple[str, str | None]) -> bool:
            return self._bound(entity(pairs)) is not None
        if has((USER, user), (CLIENT_ID, client_id)) or has((USER, user), (CLIENT_ID, None)):
            return user, client_id
        if has((USER, user)):
            return user, ""
        if has((USER, None), (CLIENT_ID, client_id)) or has((USER, None), (CLIENT_ID, None)):
            return user, client_id
        if has((USER, None)):
            return user, ""
        return "", client_id

    def limit(self, tags: tuple[str, str]) -> float | None:
        """DefaultQuotaCallback.quotaLimit: the bound for these tags (None: unlimited)."""
        user, client_id = tags
        candidates: list[Entity]
        if user and client_id:
            candidates = [entity([(USER, user), (CLIENT_ID, client_id)]), entity([(USER, user), (CLIENT_ID, None)]),
                          entity([(USER, None), (CLIENT_ID, client_id)]), entity([(USER, None), (CLIENT_ID, None)])]
        elif user:
            candidates = [entity([(USER, user)]), entity([(USER, None)])]
        elif client_id:
            candidates = [entity([(CLIENT_ID, client_id)]), entity([(CLIENT_ID, None)])]
        else:
            return None
        return next((b for b in map(self._bound, candidates) if b is not None), None)

    def _sensor(self, tags: tuple[str, str], now: int) -> Rate:
        if now >= self._next_expiry:        # Kafka's Metrics expires inactive sensors
            self._next_expiry = now + SENSOR_EXPIRY_MS // 4
            for t in [t for t, r in self.sensors.items() if now - r.last_event_ms() >= SENSOR_EXPIRY_MS]:
                del self.sensors[t]
        rate = self.sensors.get(tags)
        if rate is None:
            rate = self.sensors[tags] = Rate(self.samples, self.window_ms)
        return rate

    def record(self, user: str, client_id: str, value: float, now: int) -> int:
        """maybeRecordAndGetThrottleTimeMs: record ``value``; the throttle time in ms (0: within quota)."""
        if not self.enabled():
            return 0
        tags = self.tags(user, client_id)
        rate = self._sensor(tags, now)
        rate.record(value, now)
        bound = self.limit(tags)
        if bound is None:
            return 0
        measured = rate.measure(now)
        if measured <= bound:        # Quota.acceptable (an upper bound)
            return 0
        throttle = java_round((measured - bound) / bound * rate.window_size_ms(now))    # QuotaUtils.throttleTime
        return throttle if self.max_throttle_ms is None else min(throttle, self.max_throttle_ms)

    def unrecord(self, user: str, client_id: str, value: float, now: int) -> None:
        """unrecordQuotaSensor: a throttled fetch sends nothing, so its bytes are taken back."""
        if self.enabled():
            self._sensor(self.tags(user, client_id), now).record(-value, now)

    def max_value_in_window(self, user: str, client_id: str) -> float:
        """getMaxValueInQuotaWindow: more than this in one fetch is throttled for sure."""
        if not self.enabled():
            return math.inf
        bound = self.limit(self.tags(user, client_id))
        return math.inf if bound is None else bound * (self.samples - 1) * self.window_ms / 1000


class TokenBucket:
    """Kafka's TokenBucket (metrics.stats.TokenBucket, KIP-599): ``quota`` tokens a second up to
    a burst of samples * window seconds * quota; a mutation takes its partitions' worth and
    may leave it negative. Kafka's starts empty at time 0, so its first refill fills it."""

    __slots__ = ("tokens", "last_ms")

    def __init__(self) -> None:
        self.tokens, self.last_ms = 0.0, 0

    def measure(self, quota: float, burst: float, now: int) -> float:
        self.tokens = min(burst, self.tokens + quota * (now - self.last_ms) / 1000)
        self.last_ms = now
        return self.tokens

    def record(self, value: float, quota: float, burst: float, now: int) -> None:
        self.tokens = min(burst, self.measure(quota, burst, now) - value)

    def last_event_ms(self) -> float:
        return self.last_ms


class ThrottlingQuotaExceeded(KafkaError):
    """A strict controller mutation quota refused a topic; answered without a message, as
    ApiError.fromThrowable drops Kafka's default one."""

    error_code = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class ControllerMutationQuotaManager(ClientQuotaManager):
    """controller_mutation_rate (ControllerMutationQuotaManager): partitions created or deleted,
    in a TokenBucket per (user, client-id) tags, resolved as the other quotas."""

    def __init__(self, quotas: Mapping[Entity, Mapping[str, float]], samples: int, window_s: int) -> None:
        super().__init__(CONTROLLER_MUTATION_RATE, quotas, samples, window_s)
        self.buckets: dict[tuple[str, str], TokenBucket] = {}

    def quota_for(self, user: str, client_id: str, strict: bool) -> "MutationQuota":
        """newStrictQuotaFor / newPermissiveQuotaFor (strict from the API version Kafka names)."""
        return MutationQuota(self, user, client_id, strict)

    def _bucket(self, tags: tuple[str, str], now: int) -> TokenBucket:
        if now >= self._next_expiry:
            self._next_expiry = now + SENSOR_EXPIRY_MS // 4
            for t in [t for t, b in self.buckets.items() if now - b.last_event_ms() >= SENSOR_EXPIRY_MS]:
                del self.buckets[t]
        return self.buckets.setdefault(tags, TokenBucket())


class MutationQuota:
    """One request's ControllerMutationQuota: a strict one refuses each topic once the bucket is
    below zero (StrictControllerMutationQuota: checkQuotas, then record), a permissive one
    records and only answers a throttle time; the throttle time is -tokens / quota seconds
    (ControllerMutationQuotaManager.throttleTimeMs), less the time since it was measured."""

    def __init__(self, manager: ControllerMutationQuotaManager, user: str, client_id: str, strict: bool) -> None:
        self.manager, self.strict = manager, strict
        self.tags = manager.tags(user, client_id) if manager.enabled() else None
        self._throttle_ms, self._at = 0, 0

    def apply(self, permits: int, now: int) -> None:
        """Take ``permits`` partitions' worth; ThrottlingQuotaExceeded if a strict quota refuses."""
        bound = None if self.tags is None else self.manager.limit(self.tags)
        if bound is None:
            return
        burst = self.manager.samples * self.manager.window_ms / 1000 * bound
        bucket = self.manager._bucket(self.tags, now)
        if self.strict:
            tokens = bucket.measure(bound, burst, now)
            if tokens < 0:
                self._throttle_ms, self._at = java_round(-tokens / bound * 1000), now
                raise ThrottlingQuotaExceeded()
            bucket.record(permits, bound, burst, now)
        else:
            bucket.record(permits, bound, burst, now)
            tokens = bucket.measure(bound, burst, now)
            if tokens < 0:
                self._throttle_ms, self._at = java_round(-tokens / bound * 1000), now

    def throttle_time_ms(self, now: int) -> int:
        return max(0, self._throttle_ms - (now - self._at))


def _address(name: str) -> str:
    """An ip entity's name as the peer address it is compared with (Kafka: InetAddress equality)."""
    if name == "localhost":
        return "127.0.0.1"
    import ipaddress
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


class ConnectionQuotas:
    """connection_creation_rate per client address (SocketServer's ConnectionQuotas.
    recordIpConnectionMaybeThrottle): each new connection counts 1 in its address's Rate; one
    over the quota is taken back and answers a throttle time bounded by one window, for which
    Kafka's acceptor holds the socket unread before closing it."""

    def __init__(self, quotas: Mapping[Entity, Mapping[str, float]], samples: int, window_s: int) -> None:
        self.quotas, self.samples, self.window_ms = quotas, samples, window_s * 1000
        self.rates: dict[str, Rate] = {}
        self.per_ip: dict[str, float] = {}
        self.default: float | None = None
        self._next_expiry = 0
        self.refresh()

    def refresh(self) -> None:
        self.per_ip, self.default = {}, None
        for e, values in self.quotas.items():
            if len(e) == 1 and e[0][0] == IP and CONNECTION_CREATION_RATE in values:
                if e[0][1] is None:
                    self.default = values[CONNECTION_CREATION_RATE]
                else:
                    self.per_ip[_address(e[0][1])] = values[CONNECTION_CREATION_RATE]

    def record(self, host: str, now: int) -> int:
        """A connection from ``host``: 0 to accept it, else the ms to hold it before closing it."""
        bound = self.per_ip.get(_address(host), self.default) if (self.per_ip or self.default) else None
        if bound is None:
            return 0
        if now >= self._next_expiry:
            self._next_expiry = now + SENSOR_EXPIRY_MS // 4
            for h in [h for h, r in self.rates.items() if now - r.last_event_ms() >= SENSOR_EXPIRY_MS]:
                del self.rates[h]
        rate = self.rates.setdefault(host, Rate(self.samples, self.window_ms))
        rate.record(1.0, now)
        measured = rate.measure(now)
        if measured <= bound:
            return 0
        rate.record(-1.0, now)
        return min(java_round((measured - bound) / bound * rate.window_size_ms(now)), self.window_ms)


# ClientRequestQuotaManager.NanosToPercentagePerSecond
NANOS_TO_PERCENTAGE = 100.0 / 1e9


class ClientQuotas:
    """The broker's quota managers over its stored entities (Kafka's QuotaManagers)."""

    def __init__(self, quotas: Mapping[Entity, Mapping[str, float]], samples: int = 11, window_s: int = 1,
                 mutation_samples: int = 11, mutation_window_s: int = 1) -> None:
        self.mutation = ControllerMutationQuotaManager(quotas, mutation_samples, mutation_window_s)
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, quotas, samples, window_s)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, quotas, samples, window_s)
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, quotas, samples, window_s,
                                          max_throttle_ms=window_s * 1000)
        self.connections = ConnectionQuotas(quotas, samples, window_s)

    def enabled(self) -> bool:
        return self.produce.enabled() or self.fetch.enabled() or self.request.enabled()

    def refresh(self) -> None:
        """Call after the stored quotas changed."""
        for m in (self.produce, self.fetch, self.request, self.mutation, self.connections):
            m.refresh()


# --- replication quotas (ReplicationQuotaManager, QuotaConfig's throttled replicas) -----------

#: QuotaConfig.QUOTA_BYTES_PER_SECOND_DEFAULT: an unset throttled rate (never exceeded)
UNBOUNDED_RATE = 2**63 - 1
#: ReplicationQuotaManager's AllReplicas: the throttled replica list "*"
ALL_REPLICAS = None


class SimpleRate(Rate):
    """metrics.stats.SimpleRate: the rate over the time since the oldest window began, but
    never over less than one window (a first burst counts in full at once)."""

    __slots__ = ()

    def window_size_ms(self, now: int) -> int:
        self._purge(now)
        self._now_window(now)       # SampledStat.oldest: a first measure opens the first window
        oldest = min(w[0] for w in self._windows)
        return max(int(now - oldest), self.window_ms)


def throttled_partitions(value: str, broker_id: int) -> frozenset[int] | None:
    """ConfigHandler.parseThrottledPartitions: the partitions a topic's throttled replica
    list (``0:1,1:2`` or ``*``) names on ``broker_id``; ALL_REPLICAS for ``*``."""
    value = value.strip()
    if value == "*":
        return ALL_REPLICAS
    pairs = [item.strip().split(":") for item in value.split(",") if item.strip()]
    return frozenset(int(p) for p, b in pairs if int(b) == broker_id)


class ReplicationQuotaManager:
    """Kafka's ReplicationQuotaManager, one per direction: the leader's (bytes it returns to
    follower fetches) and the follower's (bytes its fetcher takes). A partition is throttled
    when its topic's throttled replica list names it on this broker; the quota is exceeded
    when the byte rate of throttled partitions over the quota window (``replication.quota.
    window.num`` samples of ``replication.quota.window.size.seconds``) is above the bound."""

    def __init__(self, samples: int, window_s: int) -> None:
        self.samples, self.window_ms = samples, window_s * 1000
        self.bound: float = UNBOUNDED_RATE
        self.rate = SimpleRate(samples, self.window_ms)
        self.throttled: dict[str, frozenset[int] | None] = {}

    def update_quota(self, bound: float) -> None:
        self.bound = bound

    def mark_throttled(self, topic: str, partitions: frozenset[int] | None) -> None:
        self.throttled[topic] = partitions

    def remove_throttle(self, topic: str) -> None:
        self.throttled.pop(topic, None)

    def is_throttled(self, topic: str, partition: int) -> bool:
        if topic not in self.throttled:
            return False
        partitions = self.throttled[topic]
        return partitions is ALL_REPLICAS or partition in partitions

    def is_quota_exceeded(self, now: int) -> bool:
        """Sensor.checkQuotas: the measured rate above the upper bound."""
        return self.rate.measure(now) > self.bound

    def record(self, value: int, now: int) -> None:
        """Recorded whether or not the quota is exceeded (Sensor.record, checkQuotas false)."""
        self.rate.record(value, now)
