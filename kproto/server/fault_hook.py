"""Carrying out the fault plane's decisions (server/faults.py) for one request.

One call from the broker's dispatch, ``handle``, taken only while rules are set:
it reads the request's facts, asks the plan, and then answers an error instead
of the work (whole request, or the matched partitions only, the others
handled), or after it, holds or drops the response, closes the connection, or
answers ``throttle_time_ms``. What the network layer does it is told through
``ConnectionInfo``: ``throttle_ms`` mutes the channel (as a quota's throttle
does), ``fault`` carries a bandwidth cap.

Partition-level errors reuse the per-entry answers of server/access.py (what
Kafka answers for a partition it refuses), merged into the topic's entry.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any, Awaitable, Callable

from construct import Container

from kproto import protocol
from kproto.server import access, handlers
from kproto.server.faults import Decision, Facts, FaultPlan
from kproto.server.network import CloseConnection, ConnectionInfo

P = protocol


class Layout:
    """Where an API keeps its topics and partitions, in the request and in the response."""

    def __init__(self, rule: str, req_parts: str, req_index: str, resp_topic: str, resp_parts: str,
                 resp_index: str) -> None:
        self._rule, self.req_parts, self.req_index = rule, req_parts, req_index
        self.resp_topic, self.resp_parts, self.resp_index = resp_topic, resp_parts, resp_index

    @property
    def rule(self) -> access.PerEntry:
        """The handler module's entry rule ("module:NAME" under kproto.server.handlers),
        imported when a fault first needs it: a broker starts without its handler modules."""
        module, name = self._rule.split(":")
        return getattr(importlib.import_module(f"kproto.server.handlers.{module}"), name)


LAYOUTS = {
    P.produce.API.key: Layout("produce:PRODUCE", "partition_data", "index", "name", "partition_responses", "index"),
    P.fetch.API.key: Layout("fetch:FETCH", "partitions", "partition", "topic", "partitions", "partition_index"),
    P.list_offsets.API.key: Layout("list_offsets:LIST_OFFSETS", "partitions", "partition_index", "name",
                                   "partitions", "partition_index"),
    P.offset_commit.API.key: Layout("groups:OFFSET_COMMIT_TOPICS", "partitions", "partition_index", "name",
                                    "partitions", "partition_index"),
    P.delete_records.API.key: Layout("delete_records:DELETE_RECORDS", "partitions", "partition_index", "name",
                                     "partitions", "partition_index"),
}


def _entries(key: int, version: int) -> access.PerEntry | None:
    """How the API answers a refused entry, from its authorization rule: an error
    instead of the work must not do the work (a topic created, then called failed)."""
    if key == P.delete_topics.API.key:
        from kproto.server.handlers.topics import delete_topics_entries
        return delete_topics_entries(version)
    api = handlers.table().get(key)
    rule = api.authorize if api is not None else None
    return rule if isinstance(rule, access.PerEntry) else None


def _topic(e: Any) -> str | None:
    for k in ("name", "topic"):
        v = e.get(k) if hasattr(e, "get") else None
        if v:
            return v
    tid = e.get("topic_id") if hasattr(e, "get") else None
    return str(tid) if tid is not None else None


def facts(header: Any, body: Any, conn: ConnectionInfo) -> Facts:
    """What rules can match this request on: its topics and partitions (any list of entries
    naming a topic, with their partition numbers), group, transactional id and connection."""
    topics: dict[str, frozenset[int]] = {}
    for value in body.values() if hasattr(body, "values") else ():
        if not isinstance(value, list):
            continue
        for e in value:
            if not hasattr(e, "get"):
                continue
            name = _topic(e)
            if name is None:
                continue
            parts: set[int] = set()
            for pv in e.values():
                if isinstance(pv, list):
                    for p in pv:
                        idx = next((p.get(k) for k in ("index", "partition_index", "partition") if hasattr(p, "get")
                                    and p.get(k) is not None), None) if hasattr(p, "get") else p
                        if isinstance(idx, int):
                            parts.add(idx)
            topics[name] = topics.get(name, frozenset()) | parts
    get = body.get if hasattr(body, "get") else (lambda k: None)
    group, txn = get("group_id"), get("transactional_id")
    if header.request_api_key == P.find_coordinator.API.key:     # key_type 0: a group, 1: a transactional id
        keys = get("coordinator_keys") or ([get("key")] if get("key") else [])
        if keys and get("key_type"):
            txn = keys[0]
        elif keys:
            group = keys[0]
    sec = conn.security
    principal = str(sec.principal) if sec is not None else None
    listener = sec.listener.name if sec is not None else None
    return Facts(header.request_api_key, header.request_api_version, topics, group, txn, header.client_id,
                 principal, listener, conn.peer)


def _has(key: int, version: int, field: str) -> bool:
    return field in P.api(key).response(version).wire_names


def _split(body: Any, layout: Layout, pairs: frozenset[tuple[str, int]] | None) -> list:
    """Take the matched partitions out of ``body`` (all of them when ``pairs`` is None); -> the
    request entries (topic with its matched partitions) to answer with the error."""
    kept, denied = [], []
    for e in getattr(body, layout.rule.request) or []:
        name = _topic(e)
        parts = getattr(e, layout.req_parts) or []
        hit = [p for p in parts if pairs is None or (name, getattr(p, layout.req_index)) in pairs]
        rest = [p for p in parts if not (pairs is None or (name, getattr(p, layout.req_index)) in pairs)]
        if hit:
            d = Container(e)
            d[layout.req_parts] = hit
            denied.append(d)
        if rest or not hit:
            k = Container(e)
            k[layout.req_parts] = rest
            kept.append(k)
    setattr(body, layout.rule.request, kept)
    return denied


def _merge(response: Any, layout: Layout, denied: list, error: int) -> None:
    """Add the denied partitions' error entries, into their topic's entry when it has one."""
    entries = list(response.get(layout.rule.response) or [])
    for e in denied:
        out = layout.rule.denied(e, error)
        same = next((r for r in entries if r.get(layout.resp_topic) == out.get(layout.resp_topic)
                     and out.get(layout.resp_topic)), None)
        if same is not None:
            same[layout.resp_parts] = list(same[layout.resp_parts]) + out[layout.resp_parts]
        else:
            entries.append(out)
    response[layout.rule.response] = entries


def _set_errors(response: Any, layout: Layout | None, pairs: frozenset[tuple[str, int]] | None, error: int) -> None:
    """After the work: the matched partitions' (or every) error_code becomes ``error``."""
    if layout is not None and pairs is not None:
        for t in response.get(layout.rule.response) or []:
            for p in t.get(layout.resp_parts) or []:
                if (t.get(layout.resp_topic), p.get(layout.resp_index)) in pairs:
                    p["error_code"] = error
        return
    _set_every_error(response, error)


def _set_every_error(value: Any, error: int) -> None:
    if hasattr(value, "items"):
        for k, v in list(value.items()):
            if k == "error_code":
                value[k] = error
            else:
                _set_every_error(v, error)
    elif isinstance(value, list):
        for v in value:
            _set_every_error(v, error)


async def error_response(key: int, version: int, body: Any, pairs: frozenset[tuple[str, int]] | None, error: int,
                         run: Callable[[Any], Awaitable[Any]]) -> Any:
    """``error`` instead of the work, for the ``pairs`` partitions (None: all of the request);
    the other partitions are handled by ``run``."""
    layout = LAYOUTS.get(key)
    if layout is not None:
        denied = _split(body, layout, pairs)
        response = await run(body) if getattr(body, layout.rule.request) else {layout.rule.response: []}
        if response is not None:
            _merge(response, layout, denied, error)
        return response
    if _has(key, version, "error_code"):
        return {"error_code": error}
    entries = _entries(key, version)
    if entries is not None:         # each entry answered as a refused one (CreateTopics, DeleteTopics...)
        return {entries.response: [entries.denied(e, error) for e in getattr(body, entries.request) or []]}
    response = await run(body)      # no top-level error: its entries carry it (Metadata's topics)
    if response is not None:
        _set_every_error(response, error)
    return response


async def handle(plan: FaultPlan, header: Any, body: Any, conn: ConnectionInfo,
                 run: Callable[[Any], Awaitable[Any]]) -> Any:
    """The response to one request with the plan's decision carried out (None: no response)."""
    d: Decision = plan.decide(facts(header, body, conn))
    conn.fault = d if d.bandwidth else None
    conn.throttle_ms = max(conn.throttle_ms, d.throttle_ms)
    if not d:
        return await run(body)
    key, version = header.request_api_key, header.request_api_version
    if d.close == "before":
        raise CloseConnection(f"fault plane: close before {P.api(key).name}")
    if d.error is None or d.after_work:
        response = await run(body)
        if response is not None and d.error is not None:
            _set_errors(response, LAYOUTS.get(key), d.partitions, d.error)
    else:
        response = await error_response(key, version, body, d.partitions, d.error, run)
    if response is not None:
        if d.error_message is not None and _has(key, version, "error_message"):
            response["error_message"] = d.error_message
        if d.throttle_ms and _has(key, version, "throttle_time_ms"):
            response["throttle_time_ms"] = max(response.get("throttle_time_ms") or 0, d.throttle_ms)
    if d.delay_ms:
        await asyncio.sleep(d.delay_ms / 1000)
    if d.close == "after":
        raise CloseConnection(f"fault plane: close after {P.api(key).name}")
    return None if d.drop else response
