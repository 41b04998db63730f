"""``kproto serve --control HOST:PORT``: the fault plane over HTTP and JSON.

A test suite in any language drives the broker's faults (server/faults.py) with
plain HTTP/1.1 requests, one per connection (``Connection: close``)::

    POST   /faults                     a rule (JSON object)     -> 201 {"id": 1}
    GET    /faults                                              -> 200 [{"id": 1, ..., "hits": 0}]
    GET    /faults/{id}                                         -> 200 {"id": 1, ..., "hits": 0}
    GET    /faults/{id}/wait?hits=N&timeout_ms=T                -> 200 the rule once it has N hits,
                                                                   408 the rule if T passed first
    DELETE /faults/{id}                                         -> 200 {"removed": 1}
    DELETE /faults                                              -> 200 {"removed": <count>}
    POST   /connections/cut      {"listener": "PLAINTEXT"}?     -> 200 {"cut": <count>}
    POST   /connections/refuse   {"duration_ms": T}             -> 200 {}

Errors answer 400 (a bad rule: ``{"error": "..."}``) or 404. README "Fault plane"
documents the rule fields.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kproto import protocol
from kproto.server.faults import FaultPlan, FaultRuleError, Rule, describe, rule_from_json, rule_to_json

log = logging.getLogger("kproto.server.control")

API_NAMES = {spec.name: key for key, spec in protocol.API_KEYS.items()}
MAX_BODY = 1 << 20
REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           408: "Request Timeout", 413: "Payload Too Large"}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlPlane:
    """The HTTP endpoint over one broker's ``FaultPlan`` and network server."""

    def __init__(self, plan: FaultPlan, server: Any) -> None:
        self.plan, self.server = plan, server
        self._waiters: list[tuple[int, int, asyncio.Future]] = []
        plan.on_hit = self._hit
        self._http: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._http = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        sock = self._http.sockets[0].getsockname()
        return sock[0], sock[1]

    async def close(self) -> None:
        if self._http is not None:
            self._http.close()
            await self._http.wait_closed()

    def _hit(self, rule: Rule) -> None:
        keep = []
        for rid, n, fut in self._waiters:
            if rid == rule.id and rule.hits >= n:
                if not fut.done():
                    fut.set_result(None)
            elif not fut.done():
                keep.append((rid, n, fut))
        self._waiters = keep

    async def wait(self, rule: Rule, hits: int, timeout: float) -> bool:
        if rule.hits >= hits:
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((rule.id, hits, fut))
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except asyncio.TimeoutError:
            return rule.hits >= hits

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, doc = await self._answer(reader)
        except HttpError as e:
            status, doc = e.status, {"error": str(e)}
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, ValueError):
            writer.close()
            return
        body = json.dumps(doc).encode()
        head = (f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        try:
            writer.write(head + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, Any]:
        line = (await reader.readuntil(b"\r\n")).decode("latin-1").split()
        if len(line) != 3:
            raise HttpError(400, "malformed request line")
        method, target = line[0], line[1]
        length = 0
        while True:
            h = (await reader.readuntil(b"\r\n")).decode("latin-1")
            if h == "\r\n":
                break
            name, _, value = h.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if not 0 <= length <= MAX_BODY:
            raise HttpError(413, f"a body of at most {MAX_BODY} bytes")
        raw = await reader.readexactly(length) if length else b""
        url = urlsplit(target)
        parts = [p for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        doc = None
        if raw:
            try:
                doc = json.loads(raw)
            except json.JSONDecodeError as e:
                raise HttpError(400, f"the body is not JSON: {e}") from None
        return await self._route(method, parts, query, doc)

    def _rule(self, text: str) -> Rule:
        rule = self.plan.get(int(text)) if text.isdigit() else None
        if rule is None:
            raise HttpError(404, f"no fault rule {text}")
        return rule

    async def _route(self, method: str, parts: list[str], query: dict[str, str], doc: Any) -> tuple[int, Any]:
        if parts[:1] == ["faults"]:
            if len(parts) == 1:
                if method == "POST":
                    try:
                        rule = self.plan.add(rule_from_json(doc, API_NAMES))
                    except FaultRuleError as e:
                        raise HttpError(400, str(e)) from None
                    log.info("fault rule %d: %s", rule.id, json.dumps(doc))
                    return 201, {"id": rule.id}
                if method == "GET":
                    return 200, describe(self.plan.rules)
                if method == "DELETE":
                    n = len(self.plan.rules)
                    self.plan.clear()
                    return 200, {"removed": n}
            elif len(parts) == 2:
                rule = self._rule(parts[1])
                if method == "GET":
                    return 200, rule_to_json(rule)
                if method == "DELETE":
                    self.plan.remove(rule.id)
                    return 200, {"removed": 1}
            elif len(parts) == 3 and parts[2] == "wait" and method == "GET":
                rule = self._rule(parts[1])
                try:
                    hits = int(query.get("hits", "1"))
                    timeout_ms = int(query.get("timeout_ms", "30000"))
                except ValueError:
                    raise HttpError(400, "hits and timeout_ms are integers") from None
                reached = await self.wait(rule, hits, timeout_ms / 1000)
                return (200 if reached else 408), rule_to_json(rule)
            else:
                raise HttpError(404, "unknown path")
            raise HttpError(405, f"{method} is not allowed here")
        if parts[:1] == ["connections"] and len(parts) == 2 and method == "POST":
            doc = doc or {}
            if parts[1] == "cut":
                return 200, {"cut": self.server.cut_connections(doc.get("listener"))}
            if parts[1] == "refuse":
                ms = doc.get("duration_ms")
                if not isinstance(ms, int) or ms < 0:
                    raise HttpError(400, "duration_ms: a non-negative integer")
                self.plan.refuse(time.monotonic(), ms)
                return 200, {}
        raise HttpError(404, "unknown path")
