"""The conformance corpus: Kafka bytes made by third parties, with their decoded values.

Shipped as package data so that authors of Kafka codecs in any language can
check a decoder against it (``kproto conformance run``) or take the plain
files (``kproto conformance export``). kproto's own tests read the same files;
there is one copy.

Layout (``corpus/``)::

    records/NAME.bin        record batches or message sets, as a producer library wrote them
    records/NAME.json       provenance + the decoded batches (the producer's inputs)
    records/manifest.json   who made each fixture, with which codec library, how
    protocol/NAME.bin       one request or response frame (header included, no size prefix)
    protocol/NAME.json      provenance + ``expected``: the decoded header and body

A *decoder's answer* is one JSON object, the form ``expected()`` returns:

- records: ``{"records": [{"offset", "timestamp", "key", "value", "headers"}, ...]}``,
  every record of every batch in order (control records included);
- frames: ``{"header": {...}, "body": {...}}`` with Kafka's field names in
  snake_case, only the fields the frame's version has.

Bytes are lowercase hex, absent (null) bytes are ``null``; UUIDs are their
canonical 36-character form; headers are ``[key, value]`` pairs.
"""

from __future__ import annotations

import fnmatch
import json
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

CORPUS = Path(__file__).resolve().parent / "corpus"
RECORDS_DIR = CORPUS / "records"
PROTOCOL_DIR = CORPUS / "protocol"

KINDS = ("records", "request", "response")
#: The record fields a decoder answers with, in this order.
RECORD_FIELDS = ("offset", "timestamp", "key", "value", "headers")
#: Header fields compared for each frame direction (Kafka's RequestHeader/ResponseHeader).
HEADER_FIELDS = {"request": ("request_api_key", "request_api_version", "correlation_id", "client_id"),
                 "response": ("correlation_id",)}


@dataclass(frozen=True)
class Fixture:
    """One corpus file: ``path`` is the bytes, ``meta_path`` its JSON sidecar."""

    name: str
    kind: str
    path: Path
    meta_path: Path

    @cached_property
    def meta(self) -> dict:
        return json.loads(self.meta_path.read_text(encoding="utf-8"))

    @property
    def id(self) -> str:
        """``records/NAME`` or ``protocol/NAME``: unique across the corpus."""
        return f"{self.path.parent.name}/{self.name}"

    @property
    def api_key(self) -> int | None:
        return self.meta.get("api_key")

    @property
    def api_version(self) -> int | None:
        return self.meta.get("api_version")

    @property
    def written_by(self) -> str:
        return self.meta.get("written_by") or self.meta.get("producer", "")

    def expected(self) -> dict:
        """The answer a correct decoder gives for this fixture."""
        if self.kind == "records":
            return {"records": [{k: r[k] for k in RECORD_FIELDS}
                                for b in self.meta["batches"] for r in b["records"]]}
        try:
            return self.meta["expected"]
        except KeyError:
            raise LookupError(f"{self.meta_path}: no 'expected' values; run "
                              "tests/fixtures/capture_protocol.py --expected-only") from None

    def placeholders(self) -> dict[str, str]:
        """What ``{file}``, ``{kind}``, ``{api_key}``, ``{api_version}`` stand for."""
        none = "none"
        return {"file": str(self.path), "kind": self.kind, "name": self.name,
                "api_key": none if self.api_key is None else str(self.api_key),
                "api_version": none if self.api_version is None else str(self.api_version)}


def fixtures(kinds: Iterable[str] | None = None, patterns: Iterable[str] = ()) -> list[Fixture]:
    """Every fixture in the corpus, records first, each group sorted by name.

    ``kinds`` keeps only those kinds ("frames" means both directions);
    ``patterns`` are shell globs matched against the name or ``id``.
    """
    wanted = set(KINDS)
    if kinds:
        wanted = {k for kind in kinds for k in (("request", "response") if kind == "frames" else (kind,))}
    out = [Fixture(p.stem, "records", p, p.with_suffix(".json")) for p in sorted(RECORDS_DIR.glob("*.bin"))]
    for p in sorted(PROTOCOL_DIR.glob("*.bin")):
        meta = p.with_suffix(".json")
        side = json.loads(meta.read_text(encoding="utf-8"))
        if "writer_bug" not in side:   # frames that break Kafka's schema have no expected value
            out.append(Fixture(p.stem, side["direction"], p, meta))
    pats = list(patterns)
    return [f for f in out if f.kind in wanted
            and (not pats or any(fnmatch.fnmatchcase(n, p) for p in pats for n in (f.name, f.id)))]


def to_json(value: Any) -> Any:
    """Decoded values (construct Containers, lists, bytes, UUIDs) in the corpus's JSON form."""
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def differences(expected: Any, got: Any, path: str = "", *, limit: int = 5) -> list[str]:
    """Where ``got`` differs from ``expected``: one ``path: expected X, got Y`` per leaf.

    Objects must have exactly the expected keys, except at the top level, under
    ``header``, and in each record, where a decoder may say more than is asked.
    """
    out: list[str] = []
    _diff(expected, got, path, out, limit)
    return out


def _lenient(path: str) -> bool:
    return path in ("", ".header") or (path.startswith(".records[") and path.endswith("]"))


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _diff(exp: Any, got: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit:
        return
    where = path.lstrip(".") or "(top)"
    if isinstance(exp, dict):
        if not isinstance(got, dict):
            out.append(f"{where}: expected an object, got {_show(got)}")
            return
        for k, v in exp.items():
            if k not in got:
                out.append(f"{path.lstrip('.') + '.' if path else ''}{k}: missing")
            else:
                _diff(v, got[k], f"{path}.{k}", out, limit)
        if not _lenient(path):
            out.extend(f"{path.lstrip('.') + '.' if path else ''}{k}: not in this version"
                       for k in got if k not in exp)
    elif isinstance(exp, list):
        if not isinstance(got, list):
            out.append(f"{where}: expected a list, got {_show(got)}")
            return
        if len(exp) != len(got):
            out.append(f"{where}: expected {len(exp)} items, got {len(got)}")
        for i, (e, g) in enumerate(zip(exp, got)):
            _diff(e, g, f"{path}[{i}]", out, limit)
    elif exp != got or type(exp) is not type(got):   # 1 is not true, 1.0 is not 1
        out.append(f"{where}: expected {_show(exp)}, got {_show(got)}")
    del out[limit:]
