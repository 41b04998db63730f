"""Kafka's message definitions, one version at a time, from any of four sources.

Kafka keeps one JSON file per message (clients/src/main/resources/common/message);
its readers are generated per version from it. This module reads the same
definitions into one small form, ``MessageV`` (the fields a version has, each
with its type, nullability, tag, default and doc), from:

* Kafka's JSON, from a release's kafka-clients jar (``jar_messages``: the jar
  ships them as ``common/message/*.json``), a git tree (``git_messages``) or a
  directory (``dir_messages``: kafka-python 3.0.12 bundles Kafka 4.x's,
  ``kafka_python_dir``);
* kio's generated dataclasses (``from_kio``), whose names and types are read
  back into Kafka's (kio drops the ``Ms`` of durations and timestamps, reads a
  zero uuid and a -1 timestamp as None, and keeps no default for required fields:
  ``UNKNOWN``).

``collect`` merges them per API key and version (newest source first: the jar,
when given, is the release kproto's broker answers as, so it wins).
generators.protocol folds the result into field trees and writes the
modules; tests/schemas/test_protocol_definitions.py compares kproto's tables with
what this module reads from the jar, kafka-python and kio, version by version.
Nothing here runs when kproto decodes: it is for making and checking tables.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import re
import subprocess
import sys
import types
import typing
import uuid
import zipfile
from pathlib import Path

from kproto.schemas.message import snake

MESSAGES = "clients/src/main/resources/common/message"

_SCALARS = {"int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "uint16": "UINT16",
            "float64": "FLOAT64", "bool": "BOOL", "uuid": "UUID", "string": "STRING", "bytes": "BYTES",
            "records": "RECORDS"}
_ZERO_UUID = uuid.UUID(int=0)
UNKNOWN = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()  # kio: a required field


def versions_of(text: str | None, top: int = 0x7FFF) -> range:
    if text is None or text == "none":
        return range(0)
    if text.endswith("+"):
        return range(int(text[:-1]), top + 1)
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


# --- one version of one message, whatever the source -----------------------------------

@dataclasses.dataclass
class FieldV:
    """A field as one version of a message has it."""

    name: str                    # snake_case
    type: str                    # Kafka's type: int32, []int32, Foo, []Foo
    nullable: bool
    tag: int | None              # None: on the wire in order
    default: object              # a Python value; ... = the struct's own defaults
    about: str
    fields: list["FieldV"] | None = None   # struct types

    @property
    def elem(self) -> str:
        return self.type[2:] if self.type.startswith("[]") else self.type


@dataclasses.dataclass
class MessageV:
    name: str                    # Kafka's struct name, e.g. FetchRequest
    version: int
    flexible: bool
    fields: list[FieldV]


def json_default(jtype: str, text, nullable: bool):
    if text == "null":
        return None
    if jtype.startswith("[]"):
        return []
    if jtype not in _SCALARS:
        return ...
    text = "" if text is None else str(text)
    if jtype == "bool":
        return text.lower() == "true"
    if jtype in ("int8", "int16", "int32", "int64", "uint16"):
        return int(text, 0) if text else 0
    if jtype == "float64":
        return float(text) if text else 0.0
    if jtype == "string":
        return text
    if jtype == "bytes":
        return b""
    if jtype == "records":
        return None
    return _ZERO_UUID


def field_versions(jf: dict) -> str:
    """A field's ``versions``; a tagged field may give only ``taggedVersions``
    (TransactionLogValue does), which then are its versions."""
    return jf.get("versions") or jf["taggedVersions"]


def from_json(data: dict, version: int) -> MessageV:
    """One version of a Kafka JSON message definition."""
    common = {s["name"]: s for s in data.get("commonStructs", [])}
    flexible = version in versions_of(data.get("flexibleVersions"))

    def walk(jfields: list) -> list[FieldV]:
        out = []
        for jf in jfields:
            if version not in versions_of(field_versions(jf)):
                continue
            tagged = jf.get("tag") is not None and \
                version in versions_of(jf.get("taggedVersions", field_versions(jf)))
            nullable = version in versions_of(jf.get("nullableVersions"))
            elem = jf["type"][2:] if jf["type"].startswith("[]") else jf["type"]
            sub = None
            if elem not in _SCALARS:
                sub = walk(jf["fields"] if "fields" in jf else common[elem]["fields"])
            out.append(FieldV(snake(jf["name"]), jf["type"], nullable, int(jf["tag"]) if tagged else None,
                              # an explicit "default": null (JSON null) is the text "null"
                              json_default(jf["type"], "null" if "default" in jf and jf["default"] is None
                                           else jf.get("default"), nullable),
                              jf.get("about", ""), sub))
        return out

    return MessageV(data["name"], version, flexible, walk(data["fields"]))


def strip_comments(text: str) -> dict:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


# --- kio: its dataclasses read back into the same form ------------------------------------

_KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
              "datetime_i64": "int64"}


def _kio_docs(module) -> dict[tuple[str, str], str]:
    """(class, field) -> the docstring kio's generator put under the field."""
    tree = ast.parse(Path(module.__file__).read_text())
    out = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        body = cls.body
        for a, b in zip(body, body[1:]):
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and \
                    isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant):
                out[(cls.name, a.target.id)] = str(b.value.value)
    return out


def _kio_default(value, ktype: str):
    import datetime
    if value is dataclasses.MISSING:
        return UNKNOWN            # kio keeps no default for a required field
    if value is None and ktype.removeprefix("[]") == "uuid":
        return _ZERO_UUID
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, tuple):
        return list(value)
    if dataclasses.is_dataclass(value):
        return ...
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return value


def from_kio(cls) -> MessageV:
    module = sys.modules[cls.__module__]
    docs = _kio_docs(module)

    def walk(c) -> list[FieldV]:
        hints = typing.get_type_hints(c)
        out = []
        for f in dataclasses.fields(c):
            hint = hints[f.name]
            args = typing.get_args(hint)
            nullable = type(None) in args and typing.get_origin(hint) in (typing.Union, types.UnionType)
            if nullable:
                hint = next(a for a in args if a is not type(None))
            array = typing.get_origin(hint) is tuple
            inner = typing.get_args(hint)[0] if array else hint
            kt = f.metadata.get("kafka_type")
            name = f.name
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            if kt is not None:
                if kt.startswith(("timedelta_", "datetime_")):
                    name += "_ms"      # kio drops Kafka's Ms suffix for durations and times
                if kt.startswith("datetime_") and nullable:
                    nullable = False   # and reads the timestamp -1 as None
                    default = -1 if default is None else default
                kt = _KIO_TYPES.get(kt, kt)
                if kt == "uuid":
                    nullable = False   # kio reads the zero uuid as None
                sub, elem = None, kt
            else:
                sub, elem = walk(inner), inner.__name__
            jtype = ("[]" if array else "") + elem
            default = None if nullable and default is None else _kio_default(default, jtype)
            out.append(FieldV(name.rstrip("_"), jtype, nullable, f.metadata.get("tag"), default,
                              docs.get((c.__name__, f.name), ""), sub))
        return out

    return MessageV(cls.__name__, int(cls.__version__), bool(cls.__flexible__), walk(cls))


def kio_messages(api: str, kind: str) -> dict[int, object]:
    """version -> kio's class for ``api`` (snake_case) ``kind`` (request/response)."""
    from kio.schema.index import schema_name_map
    from kio.static.constants import EntityType
    out = {}
    for version, paths in schema_name_map.get(api, {}).items():
        module, name = paths[EntityType[kind]].split(":")
        out[int(version)] = getattr(importlib.import_module(module), name)
    return out


# --- sources --------------------------------------------------------------------------

def kafka_python_dir() -> Path:
    import kafka.protocol.schemas as s
    return Path(s.__file__).parent / "resources"


def git_messages(repo: str, ref: str) -> dict[str, dict]:
    names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", f"{ref}:{MESSAGES}"],
                           check=True, capture_output=True, text=True).stdout.split()
    out = {}
    for n in names:
        if n.endswith(("Request.json", "Response.json")):
            text = subprocess.run(["git", "-C", repo, "show", f"{ref}:{MESSAGES}/{n}"], check=True,
                                  capture_output=True, text=True).stdout
            out[n[:-5]] = strip_comments(text)
    return out


def dir_messages(path: Path) -> dict[str, dict]:
    return {p.stem: strip_comments(p.read_text()) for p in sorted(path.glob("*.json"))
            if p.stem.endswith(("Request", "Response"))}


def jar_messages(jar: Path) -> dict[str, dict]:
    """The definitions a kafka-clients jar was built from (``common/message/*.json``)."""
    prefix = MESSAGES.rsplit("resources/", 1)[1] + "/"
    out = {}
    with zipfile.ZipFile(jar) as z:
        for n in sorted(z.namelist()):
            stem = n[len(prefix):-5]
            if n.startswith(prefix) and n.endswith(".json") and stem.endswith(("Request", "Response")):
                out[stem] = strip_comments(z.read(n).decode())
    return out


@dataclasses.dataclass
class Api:
    key: int
    name: str                         # newest name, e.g. ListConfigResources
    request: dict[int, MessageV]
    response: dict[int, MessageV]
    flexible_from: int | None
    sources: dict[int, str]           # version -> where it came from
    json: dict[str, dict]             # kind -> the newest JSON definition


def collect(repo: str, ref: str, jar: Path | None = None) -> dict[int, Api]:
    """``jar``: a kafka-clients jar, authoritative for every version it defines."""
    layers = [*([(jar.name, jar_messages(jar))] if jar is not None else []),
              ("kafka-python 3.0.12", dir_messages(kafka_python_dir())),
              ("kio 0.6.5", None),
              (f"apache/kafka@{ref}", git_messages(repo, ref))]
    by_key: dict[int, dict[str, dict]] = {}
    for label, messages in layers:
        for stem, data in (messages or {}).items():
            kind = data["type"]
            by_key.setdefault(data["apiKey"], {}).setdefault(kind, []).append((label, data))
    from kio.schema.index import api_key_map
    apis = {}
    for key in sorted(set(by_key) | set(api_key_map)):
        req, resp, sources = {}, {}, {}
        name = None
        for kind, into in (("request", req), ("response", resp)):
            for label, messages in layers:
                if messages is None:
                    if key in api_key_map:
                        for v, cls in kio_messages(api_key_map[key], kind).items():
                            if v not in into:
                                into[v] = from_kio(cls)
                                sources.setdefault(v, label)
                    continue
                for _, data in [x for x in by_key.get(key, {}).get(kind, []) if x[0] == label]:
                    name = name or data["name"][: -len(kind)]
                    for v in versions_of(data["validVersions"]):
                        if v not in into:
                            into[v] = from_json(data, v)
                            sources.setdefault(v, label)
            if name is None:
                name = "".join(p.capitalize() for p in api_key_map[key].split("_"))
        if sorted(req) != sorted(resp):
            raise SystemExit(f"key {key}: request versions {sorted(req)} != response {sorted(resp)}")
        flex = sorted(v for v, m in req.items() if m.flexible)
        if flex and flex != list(range(flex[0], max(req) + 1)):
            raise SystemExit(f"key {key}: flexible versions {flex} not open-ended")
        if sorted(req) != list(range(min(req), max(req) + 1)):
            raise SystemExit(f"key {key}: versions {sorted(req)} not contiguous")
        # the newest JSON that still defines a version (Kafka 4's files for keys 4-7 say "none")
        newest_json = {kind: next((d for label, m in layers if m is not None
                                   for _, d in [x for x in by_key.get(key, {}).get(kind, []) if x[0] == label]
                                   if versions_of(d["validVersions"])),
                                  None) for kind in ("request", "response")}
        apis[key] = Api(key, name, req, resp, flex[0] if flex else None, sources,
                        {k: d for k, d in newest_json.items() if d is not None})
    return apis
