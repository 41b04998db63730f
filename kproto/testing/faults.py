"""The fault plane from Python: a client of ``kproto serve --control`` (server/control.py).

    with kafka_broker.faults.inject(api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=3) as rule:
        producer.produce(...)
        rule.wait(3, timeout=30)

``inject`` takes the rule's JSON fields as keyword arguments (README "Fault plane");
the handle's ``.hits`` asks the broker each time, ``.wait(n, timeout)`` blocks in
the broker until the rule has acted ``n`` times, ``.remove()`` (or leaving the
``with``) takes it out.
"""

from __future__ import annotations

import json
from typing import Any

from kproto.errors import KprotoError

__all__ = ["FaultPlaneError", "Faults", "FaultRule"]


class FaultPlaneError(KprotoError):
    """The control endpoint refused a request (a bad rule, an unknown id)."""


class Faults:
    """The fault plane of one running broker, at ``base`` (``http://host:port``)."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def call(self, method: str, path: str, doc: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
        # imported here: urllib.request (with http.client, email, ssl) is ~10-30 ms of every
        # process importing kproto.testing, the pytest plugin's and its fork server's included
        import urllib.error
        import urllib.request
        data = None if doc is None else json.dumps(doc).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            body = json.loads(e.read() or b"null")
            if e.code == 408:
                return e.code, body
            raise FaultPlaneError(f"{method} {path}: {e.code} {(body or {}).get('error', '')}".rstrip()) from None

    def inject(self, **rule: Any) -> "FaultRule":
        """Add a rule (fields as in the JSON: api, error, count, topic, partition, group_id,
        after_work, delay_ms, drop, close, throttle_ms, ...); -> its handle."""
        _, doc = self.call("POST", "/faults", rule)
        return FaultRule(self, doc["id"])

    def rules(self) -> list[dict]:
        return self.call("GET", "/faults")[1]

    def clear(self) -> int:
        return self.call("DELETE", "/faults")[1]["removed"]

    def cut_connections(self, listener: str | None = None) -> int:
        """Abort every open client connection now (a broker restart, as clients see it)."""
        return self.call("POST", "/connections/cut", {"listener": listener} if listener else {})[1]["cut"]

    def refuse_connections(self, duration_ms: int) -> None:
        """Close every new connection at once for ``duration_ms``."""
        self.call("POST", "/connections/refuse", {"duration_ms": duration_ms})


class FaultRule:
    """One rule in the broker."""

    def __init__(self, faults: Faults, rule_id: int) -> None:
        self.faults, self.id = faults, rule_id

    def __repr__(self) -> str:
        return f"<FaultRule {self.id} at {self.faults.base}>"

    def describe(self) -> dict:
        return self.faults.call("GET", f"/faults/{self.id}")[1]

    @property
    def hits(self) -> int:
        """How many requests the rule has acted on so far."""
        return self.describe()["hits"]

    def wait(self, hits: int = 1, timeout: float = 30.0) -> int:
        """Block until the rule has acted ``hits`` times; TimeoutError after ``timeout`` seconds."""
        status, doc = self.faults.call("GET", f"/faults/{self.id}/wait?hits={hits}&timeout_ms={int(timeout * 1000)}",
                                       timeout=timeout + 10)
        if status == 408:
            raise TimeoutError(f"fault rule {self.id}: {doc['hits']} of {hits} hits after {timeout:g}s")
        return doc["hits"]

    def remove(self) -> None:
        try:
            self.faults.call("DELETE", f"/faults/{self.id}")
        except FaultPlaneError:     # already gone (cleared, or the broker restarted)
            pass

    def __enter__(self) -> "FaultRule":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
