"""The fault plane: rules that make the broker fail on purpose, as data.

Theory of operation. A ``Rule`` is a ``Match`` (which requests or connections
it is about), a ``Count`` (which of its matches it acts on) and an ``Action``
(what the broker does instead of, or besides, answering normally). A
``FaultPlan`` holds the rules in the order they were added; for each request
the broker hands it the request's ``Facts`` (API, version, topics and
partitions, group, transactional id, client, principal, listener) and gets
back one ``Decision``: every matching rule, in order, whose count admits this
match, adds its action (the first rule with an error decides the error; delays
add up; drop, close and throttle are sticky). Each rule counts its matches and
its hits (the requests it acted on); ``on_hit`` lets the I/O side wake
whoever waits for a rule to reach N hits.

The plan also holds until when new connections are refused; cutting every
open connection is an act, not a rule (``BrokerServer.cut_connections``).

No I/O here: the broker (server/broker.py, ``apply_faults``) and the network
layer (server/network.py) carry the decisions out; the control plane
(server/control.py) turns JSON into rules with ``rule_from_json``.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from kproto.errors import ErrorCode, KprotoError

__all__ = ["Match", "Count", "Action", "Rule", "Facts", "Decision", "FaultPlan", "FaultRuleError",
           "rule_from_json", "rule_to_json", "NO_DECISION"]


class FaultRuleError(KprotoError):
    """A rule that cannot be understood (an unknown API or error name, a bad count)."""


@dataclass(frozen=True, slots=True)
class Match:
    """What a rule is about; None matches anything. ``partitions`` needs a ``topics`` match or
    applies to every topic's partitions of that number."""

    apis: frozenset[int] | None = None
    versions: tuple[int, int] | None = None         # inclusive
    topics: frozenset[str] | None = None
    topic_ids: frozenset[str] | None = None         # str(uuid)
    partitions: frozenset[int] | None = None
    group_id: str | None = None
    transactional_id: str | None = None
    client_id: str | None = None
    principal: str | None = None                    # "User:alice"
    listener: str | None = None
    connection: str | None = None                   # the client's "host:port"

    def request_level(self) -> bool:
        """Whether only requests (not bare connections) can match: it names something in a request."""
        return any(v is not None for v in (self.apis, self.versions, self.topics, self.topic_ids, self.partitions,
                                           self.group_id, self.transactional_id))


@dataclass(slots=True)
class Count:
    """Which matches the rule acts on: from the ``after``-th (1-based) on, ``times`` of them
    (None: all), each with ``probability`` drawn from a generator seeded with ``seed``."""

    times: int | None = None
    after: int = 1
    probability: float | None = None
    seed: int | None = None
    _random: random.Random | None = None

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 0 or self.after < 1:
            raise FaultRuleError("count: times must be >= 0 and after >= 1")
        if self.probability is not None:
            if not 0.0 <= self.probability <= 1.0:
                raise FaultRuleError("probability must be between 0 and 1")
            self._random = random.Random(self.seed)

    def admits(self, matches: int, hits: int) -> bool:
        """``matches``: this one included; ``hits``: before this one."""
        if matches < self.after or (self.times is not None and hits >= self.times):
            return False
        return self._random is None or self._random.random() < self.probability


@dataclass(frozen=True, slots=True)
class Action:
    """What the broker does for a request the rule acts on.

    ``error``: answer this code (``scope`` "partitions": the matched partitions only, the
    others are handled; "request": all of it) instead of doing the work, or after it when
    ``after_work`` (the write lands, the client is told it did not). ``delay_ms``: hold the
    response; ``drop``: never send it; ``close``: "before" handling or "after" (no
    response either way); ``throttle_ms``: answer ``throttle_time_ms`` and read nothing
    more from the connection for that long (Kafka's muted channel, KIP-219);
    ``bandwidth``: bytes per second the responses on a matched connection are held to."""

    error: int | None = None
    error_message: str | None = None
    scope: str | None = None          # "partitions" | "request"; None: partitions where the API has them
    after_work: bool = False
    delay_ms: int = 0
    drop: bool = False
    close: str | None = None          # "before" | "after"
    throttle_ms: int = 0
    bandwidth: int | None = None      # bytes/s


@dataclass(slots=True)
class Rule:
    match: Match
    action: Action
    count: Count = field(default_factory=Count)
    id: int = 0
    matches: int = 0
    hits: int = 0
    source: Mapping[str, Any] | None = None     # the JSON it was made from, shown back by GET /faults


@dataclass(frozen=True, slots=True)
class Facts:
    """What a rule can match a request (or, with api_key None, a connection) on."""

    api_key: int | None = None
    api_version: int | None = None
    topics: Mapping[str, frozenset[int]] = field(default_factory=dict)   # name or topic id -> partitions
    group_id: str | None = None
    transactional_id: str | None = None
    client_id: str | None = None
    principal: str | None = None
    listener: str | None = None
    connection: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The sum of the actions that apply to one request; ``partitions`` are the (topic,
    partition) pairs the error is for (None: all of the request)."""

    error: int | None = None
    error_message: str | None = None
    partitions: frozenset[tuple[str, int]] | None = None
    after_work: bool = False
    delay_ms: int = 0
    drop: bool = False
    close: str | None = None
    throttle_ms: int = 0
    bandwidth: int | None = None

    def __bool__(self) -> bool:
        return (self.error is not None or self.delay_ms > 0 or self.drop or self.close is not None
                or self.throttle_ms > 0 or self.bandwidth is not None)


NO_DECISION = Decision()


def _matched_partitions(m: Match, facts: Facts) -> frozenset[tuple[str, int]] | None:
    """The request's (topic, partition) pairs the match names; None when it names none of
    the request's topics (no match), the whole request's pairs when it names no topic."""
    pairs = set()
    for topic, parts in facts.topics.items():
        if m.topics is not None or m.topic_ids is not None:
            if not ((m.topics is not None and topic in m.topics) or (m.topic_ids is not None and topic in m.topic_ids)):
                continue
        for p in parts:
            if m.partitions is None or p in m.partitions:
                pairs.add((topic, p))
        if not parts and m.partitions is None:   # a topic without partitions in the request (Metadata)
            pairs.add((topic, -1))
    if not pairs and (m.topics is not None or m.topic_ids is not None or m.partitions is not None):
        return None
    return frozenset(pairs)


def matches(m: Match, facts: Facts) -> frozenset[tuple[str, int]] | None:
    """None if ``facts`` do not match; otherwise the matched (topic, partition) pairs."""
    if facts.api_key is None and m.request_level():
        return None
    if m.apis is not None and facts.api_key not in m.apis:
        return None
    if m.versions is not None and not m.versions[0] <= (facts.api_version or 0) <= m.versions[1]:
        return None
    for want, got in ((m.group_id, facts.group_id), (m.transactional_id, facts.transactional_id),
                      (m.client_id, facts.client_id), (m.principal, facts.principal),
                      (m.listener, facts.listener), (m.connection, facts.connection)):
        if want is not None and want != got:
            return None
    return _matched_partitions(m, facts)


class FaultPlan:
    """The rules in force, their counters, and the connection-level switches."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self._ids = itertools.count(1)
        self.on_hit: Callable[[Rule], None] | None = None
        self.refuse_until: float = 0.0      # a monotonic time: new connections are closed before it

    def __bool__(self) -> bool:
        return bool(self.rules)

    def add(self, rule: Rule) -> Rule:
        rule.id = next(self._ids)
        self.rules.append(rule)
        return rule

    def get(self, rule_id: int) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def remove(self, rule_id: int) -> bool:
        before = len(self.rules)
        self.rules = [r for r in self.rules if r.id != rule_id]
        return len(self.rules) != before

    def clear(self) -> None:
        self.rules = []

    def refuse(self, now: float, duration_ms: int) -> None:
        self.refuse_until = now + duration_ms / 1000

    def refusing(self, now: float) -> bool:
        return now < self.refuse_until

    def decide(self, facts: Facts) -> Decision:
        """The actions for one request (or, ``facts.api_key`` None, one response written on a
        connection: only rules that name no request field apply)."""
        if not self.rules:
            return NO_DECISION
        out: dict[str, Any] = {}
        for rule in self.rules:
            a = rule.action
            if a.error is not None and "error" in out:
                continue        # the first error decides
            pairs = matches(rule.match, facts)
            if pairs is None:
                continue
            rule.matches += 1
            if not rule.count.admits(rule.matches, rule.hits):
                continue
            rule.hits += 1
            if a.error is not None:
                m = rule.match
                names_partitions = m.topics is not None or m.topic_ids is not None or m.partitions is not None
                by_partition = a.scope == "partitions" or (a.scope is None and names_partitions)
                out.update(error=a.error, error_message=a.error_message, after_work=a.after_work,
                           partitions=pairs if by_partition else None)
            out["delay_ms"] = out.get("delay_ms", 0) + a.delay_ms
            out["throttle_ms"] = max(out.get("throttle_ms", 0), a.throttle_ms)
            out["drop"] = out.get("drop", False) or a.drop
            out["close"] = out.get("close") or a.close
            if a.bandwidth is not None:
                out["bandwidth"] = min(out.get("bandwidth") or a.bandwidth, a.bandwidth)
            if self.on_hit is not None:
                self.on_hit(rule)
        return Decision(**out) if out else NO_DECISION


# -- JSON (the control plane's language) ------------------------------------------------------

MATCH_KEYS = ("api", "versions", "topic", "topic_id", "partition", "group_id", "transactional_id", "client_id",
              "principal", "listener", "connection")
ACTION_KEYS = ("error", "error_message", "scope", "after_work", "delay_ms", "drop", "close", "throttle_ms",
               "bandwidth")
COUNT_KEYS = ("count", "after", "probability", "seed")


def _names(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]


def _api_keys(value: Any, api_keys: Mapping[str, int]) -> frozenset[int]:
    out = set()
    for v in _names(value):
        if isinstance(v, int) and not isinstance(v, bool):
            out.add(v)
        elif isinstance(v, str) and v in api_keys:
            out.add(api_keys[v])
        else:
            raise FaultRuleError(f"api: unknown API {v!r} (a name such as Produce or a key number)")
    return frozenset(out)


def _error(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(ErrorCode[str(value)])
    except KeyError:
        raise FaultRuleError(f"error: unknown Kafka error {value!r} (a name such as NOT_LEADER_OR_FOLLOWER "
                             "or a code)") from None


def _int(doc: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    v = doc.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise FaultRuleError(f"{key}: expected a non-negative integer, got {v!r}")
    return v


def rule_from_json(doc: Mapping[str, Any], api_keys: Mapping[str, int]) -> Rule:
    """A rule from the control plane's JSON (README "Fault plane"); ``api_keys``: name -> key."""
    if not isinstance(doc, Mapping):
        raise FaultRuleError("a rule is a JSON object")
    unknown = set(doc) - set(MATCH_KEYS) - set(ACTION_KEYS) - set(COUNT_KEYS)
    if unknown:
        raise FaultRuleError(f"unknown rule field(s): {', '.join(sorted(unknown))}")
    versions = doc.get("versions")
    if versions is not None:
        if isinstance(versions, int):
            versions = [versions, versions]
        if not (isinstance(versions, list) and len(versions) == 2 and all(isinstance(v, int) for v in versions)):
            raise FaultRuleError("versions: expected [min, max] or one version")
        versions = (versions[0], versions[1])

    def strs(key: str) -> frozenset[str] | None:
        return None if doc.get(key) is None else frozenset(str(v) for v in _names(doc[key]))

    parts = doc.get("partition")
    match = Match(apis=None if doc.get("api") is None else _api_keys(doc["api"], api_keys), versions=versions,
                  topics=strs("topic"), topic_ids=strs("topic_id"),
                  partitions=None if parts is None else frozenset(int(p) for p in _names(parts)),
                  group_id=doc.get("group_id"), transactional_id=doc.get("transactional_id"),
                  client_id=doc.get("client_id"), principal=doc.get("principal"), listener=doc.get("listener"),
                  connection=doc.get("connection"))
    scope, close = doc.get("scope"), doc.get("close")
    if scope not in (None, "partitions", "request"):
        raise FaultRuleError("scope: expected \"partitions\" or \"request\"")
    if close not in (None, "before", "after"):
        raise FaultRuleError("close: expected \"before\" or \"after\"")
    bandwidth = _int(doc, "bandwidth")
    if bandwidth == 0:
        raise FaultRuleError("bandwidth: expected bytes per second > 0")
    action = Action(error=None if doc.get("error") is None else _error(doc["error"]),
                    error_message=doc.get("error_message"), scope=scope, after_work=bool(doc.get("after_work")),
                    delay_ms=_int(doc, "delay_ms", 0), drop=bool(doc.get("drop")), close=close,
                    throttle_ms=_int(doc, "throttle_ms", 0), bandwidth=bandwidth)
    if action == Action():
        raise FaultRuleError("a rule needs an action: error, delay_ms, drop, close, throttle_ms or bandwidth")
    count = doc.get("count")
    times = 1 if count == "once" else _int(doc, "count") if count is not None else None
    prob = doc.get("probability")
    if prob is not None and (isinstance(prob, bool) or not isinstance(prob, (int, float))):
        raise FaultRuleError("probability: expected a number between 0 and 1")
    return Rule(match, action, Count(times=times, after=_int(doc, "after", 1) or 1,
                                     probability=None if prob is None else float(prob), seed=doc.get("seed")),
                source=dict(doc))


def rule_to_json(rule: Rule) -> dict[str, Any]:
    return {"id": rule.id, **(rule.source or {}), "matches": rule.matches, "hits": rule.hits}


def describe(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    return [rule_to_json(r) for r in rules]
