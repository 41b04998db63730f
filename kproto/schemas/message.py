"""Kafka message definitions as data, and the construct codecs derived from them.

Kafka describes every request and response once, as a JSON field tree
(clients/src/main/resources/common/message/*.json): each field has a type,
the ``versions`` it exists in, the ``nullableVersions`` in which it may be
null, an optional ``tag`` (+ ``taggedVersions``) and a ``default``. Kafka's
generator turns that tree into one reader/writer per version. This module is
the same idea in miniature: the API modules (kproto.schemas.protocol) and the
internal topics' records (consumer_offsets, transaction_log) hold the trees
(as ``Field``/``Struct`` values, names in snake_case), and ``codec(struct,
version, flexible)`` expands a tree into a construct for one version:

* fields whose ``versions`` exclude the version are left off the wire;
* flexible versions (KIP-482) use COMPACT_* strings/bytes/arrays (unsigned
  varint length + 1, 0 = null) and end *every* struct, nested ones included,
  with a TAG_BUFFER; non-flexible versions use int16/int32 lengths (-1 = null);
* tagged fields live in the TAG_BUFFER and are written only when they differ
  from their default (Kafka does the same, and librdkafka <= 2.1 misreads
  non-empty tag buffers, as kcat 1.7.1 on Debian shows);
* unknown tags are kept, raw, under ``_unknown`` ({tag: bytes}) and written
  back, so a proxy or capture rewriter never drops what it cannot read.

The decoded value is a construct ``Container`` in Kafka's object model: it
has *every* field of the message, those not on the wire in this version set
to their default (Metadata v0 says ``allow_auto_topic_creation=True``, which
is what v0 means). Building accepts a mapping; missing fields take their
default, fields the version lacks are not written, and a key that names no
field of the struct is an error (it is always a typo). Note that
``Container.__eq__`` skips keys starting with ``_``, so ``_unknown`` is not
compared by ``==``.

Each API module's docstring carries the grammar of its newest version,
rendered from its tables by ``ApiSpec.grammar_block()``; after editing a
table, paste the new block (tests/schemas/test_protocol_registry.py checks it).
"""

from __future__ import annotations

import copy
import io
import re
import uuid as _uuid
from dataclasses import dataclass, field as _dc_field
from functools import lru_cache

from construct import (
    Adapter, Construct, ConstructError, Container, StreamError, Subconstruct, Switch, TerminatedError, this,
)
from construct import Struct as _CStruct
from construct.core import ExplicitError

from kproto.errors import MalformedMessageError, UnsupportedVersionError
from kproto.schemas import primitives as P

__all__ = [
    "INT8", "INT16", "INT32", "INT64", "UINT16", "FLOAT64", "BOOL", "UUID", "STRING", "BYTES", "RECORDS",
    "ArrayOf", "Struct", "Field", "ApiSpec", "codec", "parse_versions", "MalformedMessageError",
    "MAX_VERSION", "Message", "versioned", "present_only", "carries", "snake", "exact",
]

MAX_VERSION = 0x7FFF  # "3+" is open-ended; versions are int16 on the wire


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """Kafka's range syntax: ``"3+"``, ``"1"``, ``"0-4"``, ``"none"`` (None)."""
    if text is None or text == "none":
        return None
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def _within(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


# --- types ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Scalar:
    """A fixed-width type: the same bytes in every version."""

    kafka: str
    con: Construct
    default: object

    def __repr__(self) -> str:
        return self.kafka.upper()


@dataclass(frozen=True, eq=False)
class Sized:
    """string / bytes / records: a length prefix whose form depends on the version."""

    kafka: str
    text: bool
    default: object

    def __repr__(self) -> str:
        return self.kafka.upper()


INT8 = Scalar("int8", P.Int8, 0)
INT16 = Scalar("int16", P.Int16, 0)
INT32 = Scalar("int32", P.Int32, 0)
INT64 = Scalar("int64", P.Int64, 0)
BOOL = Scalar("bool", P.Boolean, False)
UUID = Scalar("uuid", P.UUID, _uuid.UUID(int=0))
UINT16 = Scalar("uint16", P.UInt16, 0)      # StreamsGroup endpoints' port
FLOAT64 = Scalar("float64", P.Float64, 0.0)  # client quota values
STRING = Sized("string", True, "")
BYTES = Sized("bytes", False, b"")
# Record batches stay raw bytes here; kproto.records.iter_batches decodes them.
RECORDS = Sized("records", False, None)

_SIZED = {  # (text, compact, nullable) -> construct
    (True, False, False): P.String, (True, False, True): P.NullableString,
    (True, True, False): P.CompactString, (True, True, True): P.CompactNullableString,
    (False, False, False): P.Bytes, (False, False, True): P.NullableBytes,
    (False, True, False): P.CompactBytes, (False, True, True): P.CompactNullableBytes,
}

_GRAMMAR_NAMES = {"int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
                  "bool": "BOOLEAN", "uuid": "UUID",
                  "uint16": "UINT16", "float64": "FLOAT64"}


@dataclass(frozen=True, eq=False)
class ArrayOf:
    """Kafka's ``[]T``: elements are never null; the array may be (``nullable``)."""

    elem: "Scalar | Sized | Struct"

    def __repr__(self) -> str:
        return f"[]{self.elem!r}"


class Struct:
    """A named list of fields: a message body, or a nested struct type."""

    def __init__(self, name: str, *fields: "Field") -> None:
        names = [f.name for f in fields]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"{name}: duplicate fields {sorted(dup)}")
        tags: dict[int, str] = {}
        for f in fields:
            if f.tag is not None:
                if f.tag in tags:
                    raise ValueError(f"{name}: tag {f.tag} used by {tags[f.tag]} and {f.name}")
                tags[f.tag] = f.name
        self.name = name
        self.fields: tuple[Field, ...] = fields
        self.names = frozenset(names)

    def __repr__(self) -> str:
        return self.name

    def defaults(self) -> Container:
        """Every field at its default: the value of an absent tagged struct."""
        return Container((f.name, f.default_value()) for f in self.fields)


_SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


@dataclass(frozen=True, eq=False)
class Field:
    """One field of a Kafka message definition.

    ``versions``/``nullable``/``tagged`` use Kafka's range syntax; ``tag``
    puts the field in the TAG_BUFFER for ``tagged`` versions (default: all of
    ``versions``); ``flexible`` overrides compactness for this field alone
    (Kafka's field-level ``flexibleVersions``: only RequestHeader.client_id,
    which stays a plain NULLABLE_STRING so any broker can read it).
    ``default`` is Kafka's default; when omitted, the type's zero value.
    """

    name: str
    type: "Scalar | Sized | ArrayOf | Struct"
    versions: str = "0+"
    nullable: str | None = None
    default: object = ...
    tag: int | None = None
    tagged: str | None = None
    flexible: str | None = None
    doc: str = ""
    _ranges: dict = _dc_field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _SNAKE.fullmatch(self.name):
            raise ValueError(f"field name {self.name!r} is not snake_case")
        tagged = self.tagged if self.tagged is not None or self.tag is None else self.versions
        self._ranges.update(
            versions=parse_versions(self.versions), nullable=parse_versions(self.nullable),
            tagged=parse_versions(tagged) if self.tag is not None else None,
            flexible=parse_versions(self.flexible) if self.flexible is not None else (0, MAX_VERSION))
        if self._ranges["nullable"] and isinstance(self.type, Scalar):
            raise ValueError(f"{self.name}: {self.type!r} cannot be nullable")

    def present(self, version: int) -> bool:
        return _within(self._ranges["versions"], version)

    def nullable_in(self, version: int) -> bool:
        return _within(self._ranges["nullable"], version)

    def tagged_in(self, version: int) -> bool:
        return _within(self._ranges["tagged"], version)

    def non_nullable_rule(self, version: int) -> str:
        """The rule a null breaks in ``version``: ``non-nullable (versions 0+)``,
        the field's versions outside its ``nullable`` ones around ``version``."""
        lo, hi = self._ranges["versions"]
        null = self._ranges["nullable"]
        if null is not None:
            lo, hi = (lo, null[0] - 1) if version < null[0] else (null[1] + 1, hi)
        text = f"{lo}+" if hi == MAX_VERSION else str(lo) if lo == hi else f"{lo}-{hi}"
        return f"non-nullable (versions {text})"

    def compact_in(self, version: int, flexible: bool) -> bool:
        return flexible and _within(self._ranges["flexible"], version)

    def default_value(self):
        """A fresh default (lists and structs are never shared between values)."""
        if self.default is not ...:
            d = self.default
            return d if isinstance(d, _IMMUTABLE) else copy.deepcopy(d)
        t = self.type
        if isinstance(t, (Scalar, Sized)):
            return t.default
        if isinstance(t, ArrayOf):
            return []
        return t.defaults()


_IMMUTABLE = (int, float, str, bytes, type(None), _uuid.UUID)


# --- expansion to construct ----------------------------------------------------------

class _NullableStruct(Subconstruct):
    """KIP-893 nullable struct: int8 -1 = null, 1 = present, then the struct."""

    def _parse(self, stream, context, path):
        marker = P.Int8._parsereport(stream, context, path)
        if marker < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj, stream, context, path):
        P.Int8._build(-1 if obj is None else 1, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj


def _field_con(f: Field, version: int, flexible: bool, lenient: bool = False) -> Construct:
    compact = f.compact_in(version, flexible)
    nullable = f.nullable_in(version)
    t = f.type
    if isinstance(t, Scalar):
        return t.con
    rule = f.non_nullable_rule(version) if lenient and not nullable else None
    if isinstance(t, Sized):
        con = _SIZED[(t.text, compact, nullable)]
        return con if rule is None else P.Sized(con.length, nullable=False, compact=compact, text=t.text,
                                                null_rule=rule)
    if isinstance(t, ArrayOf):
        e = t.elem
        if isinstance(e, Struct):
            elem = codec(e, version, flexible, lenient)
        elif isinstance(e, Sized):
            elem = _SIZED[(e.text, compact, False)]     # elements are never null, leniently or not
        else:
            elem = e.con
        return (P.CompactArray if compact else P.Array)(elem, nullable=nullable, null_rule=rule)
    con = codec(t, version, flexible, lenient)
    return _NullableStruct(con) if nullable else con


class StructCodec(Adapter):
    """One struct at one version: the wire Struct, presented as a full Kafka object."""

    def __init__(self, spec: Struct, version: int, flexible: bool, lenient: bool = False) -> None:
        self.spec = spec
        self.version = version
        self.flexible = flexible
        self.lenient = lenient
        self.wire = tuple(f for f in spec.fields if f.present(version) and not f.tagged_in(version))
        self.wire_names = frozenset(f.name for f in self.wire)
        self.tagged = {f.tag: (f, _field_con(f, version, flexible, lenient))
                       for f in spec.fields if f.present(version) and f.tagged_in(version)}
        if self.tagged and not flexible:
            raise ValueError(f"{spec.name} v{version}: tagged fields in a non-flexible version")
        self.by_name = {f.name: (tag, con) for tag, (f, con) in self.tagged.items()}
        members = [f.name / _field_con(f, version, flexible, lenient) for f in self.wire]
        if flexible:
            members.append("_tagged_fields" / P.TaggedFields())
        super().__init__(_CStruct(*members))

    def _decode(self, obj, context, path):
        raw = dict(obj["_tagged_fields"]["_unknown"]) if self.flexible else {}
        out = Container()
        for f in self.spec.fields:
            if f.name in self.wire_names:
                out[f.name] = obj[f.name]
            elif f.name in self.by_name and self.by_name[f.name][0] in raw:
                tag, con = self.by_name[f.name]
                out[f.name] = _parse_whole(con, raw.pop(tag), context, f"{path} -> {f.name}")
            else:
                out[f.name] = f.default_value()
        if raw:
            out["_unknown"] = raw
        return out

    def _encode(self, obj, context, path):
        if not hasattr(obj, "get"):
            raise ConstructError(f"{self.spec.name}: expected a mapping, got {type(obj).__name__}",
                                 path=path)
        stray = [k for k in obj if not (isinstance(k, str) and k.startswith("_")) and k not in self.spec.names]
        if stray:
            raise ConstructError(f"{self.spec.name} has no field(s) {', '.join(map(str, stray))}", path=path)
        wire = Container()
        for f in self.wire:
            wire[f.name] = obj[f.name] if f.name in obj else f.default_value()
        if self.flexible:
            raw = dict(obj.get("_unknown") or {})
            for tag, (f, con) in self.tagged.items():
                if tag in raw:
                    raise ConstructError(f"tag {tag} is {f.name}; it cannot also be in _unknown", path=path)
                value = obj.get(f.name, f.default_value())
                if not _is_default(value, f.default_value()):
                    out = io.BytesIO()
                    con._build(value, out, context, f"{path} -> {f.name}")
                    raw[tag] = out.getvalue()
            wire["_tagged_fields"] = {"_unknown": raw}
        return wire


def _is_default(value, default) -> bool:
    """Kafka omits a tagged field equal to its default; a struct carrying
    unknown tags is never "default" (Container.__eq__ would ignore them)."""
    return value == default and not _has_unknown(value)


def _has_unknown(value) -> bool:
    if isinstance(value, dict):
        return bool(value.get("_unknown")) or any(_has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_unknown(v) for v in value)
    return False


def _parse_whole(con: Construct, raw: bytes, context, path: str):
    stream = io.BytesIO(raw)
    value = con._parsereport(stream, context, path)
    if stream.tell() != len(raw):
        raise StreamError(f"tagged field has {len(raw) - stream.tell()} bytes past its value", path=path)
    return value


@lru_cache(maxsize=None)
def codec(spec: Struct, version: int, flexible: bool, lenient: bool = False) -> StructCodec:
    """The construct for ``spec`` at ``version`` (cached; specs are immutable).

    ``lenient``: a decoder's codec, for what a broker or client actually sent:
    a null (-1) string, bytes or array where the schema allows none parses as
    None when the parse is given a ``null_warnings`` list, and each such field
    is added to it as ``(construct path, rule)`` (``P.null_where_required``).
    Elsewhere such a null is an error, as in Kafka's generated readers."""
    return StructCodec(spec, version, flexible, lenient)


def carries(spec: Struct, kind: "Scalar | Sized") -> bool:
    """Whether a field of type ``kind`` appears anywhere in ``spec``, in any version
    (the broker asks which responses can hold RECORDS)."""
    for f in spec.fields:
        t = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        if t is kind or (isinstance(t, Struct) and carries(t, kind)):
            return True
    return False


# --- grammar (for module docstrings, checked by the tests) ----------------------------

def _type_name(t, version: int, compact: bool, nullable: bool) -> str:
    if isinstance(t, Scalar):
        return _GRAMMAR_NAMES[t.kafka]
    if isinstance(t, Sized):
        base = {"string": "STRING", "bytes": "BYTES", "records": "RECORDS"}[t.kafka]
        if t.kafka == "records":
            return "COMPACT_RECORDS" if compact else "RECORDS"
        return ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + base
    if isinstance(t, ArrayOf):
        return ("COMPACT_" if compact else "") + ("NULLABLE_" if nullable else "") + "ARRAY"
    return t.name + ("?" if nullable else "")


def grammar(spec: Struct, version: int, flexible: bool, title: str) -> str:
    """Kafka-protocol-guide style grammar of one version, one field a line."""
    lines = [f"{title} v{version}{' (flexible)' if flexible else ''}:"]

    def walk(s: Struct, depth: int) -> None:
        pad = "  " * depth
        for f in s.fields:
            if not f.present(version) or f.tagged_in(version):
                continue
            _line(f, pad, depth)
        if flexible:
            tagged = [f for f in s.fields if f.present(version) and f.tagged_in(version)]
            lines.append(f"{pad}TAG_BUFFER" + (" {" if tagged else ""))
            for f in sorted(tagged, key=lambda f: f.tag):
                _line(f, pad + f"  [{f.tag}] ", depth + 1)
            if tagged:
                lines.append(f"{pad}}}")

    def _line(f: Field, pad: str, depth: int) -> None:
        compact = f.compact_in(version, flexible)
        t = f.type
        lines.append(f"{pad}{f.name} {_type_name(t, version, compact, f.nullable_in(version))}"
                     + (f" of {_type_name(t.elem, version, compact, False)}"
                        if isinstance(t, ArrayOf) else ""))
        sub = t.elem if isinstance(t, ArrayOf) else t
        if isinstance(sub, Struct):
            walk(sub, depth + 1)

    walk(spec, 1)
    return "\n".join(lines)


# --- one API -----------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ApiSpec:
    """One API key: its supported versions and its request/response definitions.

    ``min_version..max_version`` is what kproto can encode and decode: every
    version Kafka ever defined. ``served`` is the part of it kproto's broker
    answers (None: none), which is what its ApiVersions advertises and the
    one place that says so (the handlers read it). ``flexible_from`` follows Kafka's open-ended ``flexibleVersions``
    so that header versions are known even for versions past ``max_version``
    (a newer client's ApiVersions request must still be readable, KIP-511).
    """

    name: str
    key: int
    min_version: int
    max_version: int
    flexible_from: int | None
    request_schema: Struct
    response_schema: Struct
    # ApiVersions answers with response header v0 in every version: a client
    # must read the answer before it knows which versions the broker speaks.
    flexible_response_header: bool = True
    # ApiVersions: an error-35 answer is a v0 body whatever was asked (KIP-511).
    unsupported_version_body: int | None = None
    served: tuple[int, int] | None = None
    # ControlledShutdown v0 is the one body with request header v0 (no client_id).
    header_v0_through: int = -1

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise UnsupportedVersionError(
                f"{self.name} v{version} is not supported (v{self.min_version}-{self.max_version})")

    def request(self, version: int) -> Construct:
        """Construct for the request body at ``version``."""
        self.check_version(version)
        return codec(self.request_schema, version, self.is_flexible(version))

    def response(self, version: int) -> Construct:
        """Construct for the response body at ``version``."""
        self.check_version(version)
        return codec(self.response_schema, version, self.is_flexible(version))

    def request_header_version(self, version: int) -> int:
        if version <= self.header_v0_through:
            return 0
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        return 1 if self.is_flexible(version) and self.flexible_response_header else 0

    def grammar(self, kind: str, version: int) -> str:
        spec = self.request_schema if kind == "request" else self.response_schema
        return grammar(spec, version, self.is_flexible(version), f"{self.name} {kind.capitalize()}")

    def grammar_block(self) -> str:
        """The block each API module's docstring carries (tests check it is current)."""
        body = "\n\n".join(self.grammar(kind, self.max_version) for kind in ("request", "response"))
        return ("Grammar of the newest supported version (generated from the tables\n"
                "below by ApiSpec.grammar_block; tests keep it current)::\n\n"
                + "\n".join("    " + line if line else "" for line in body.splitlines()))


# --- version-prefixed records (Kafka's internal topics) -----------------------------------

def present_only(spec: Struct, version: int, value):
    """``value`` with only the fields ``version`` has: the record as written,
    which is what Kafka's JSON converters print (dump-log's decoders)."""
    out = Container()
    for name, sub, is_array in _present_plan(spec, version):
        v = value[name]
        if sub is not None and v is not None:
            v = [present_only(sub, version, e) for e in v] if is_array else present_only(sub, version, v)
        out[name] = v
    if "_unknown" in value:
        out["_unknown"] = value["_unknown"]
    return out


@lru_cache(maxsize=None)
def _present_plan(spec: Struct, version: int) -> tuple[tuple[str, "Struct | None", bool], ...]:
    """(name, nested struct or None, is array) of each field ``version`` has:
    worked out once, as the capture decoder projects thousands of bodies."""
    plan = []
    for f in spec.fields:
        if f.present(version):
            sub = f.type.elem if isinstance(f.type, ArrayOf) else f.type
            plan.append((f.name, sub if isinstance(sub, Struct) else None, isinstance(f.type, ArrayOf)))
    return tuple(plan)


class _Present(Adapter):
    def __init__(self, spec: Struct, version: int, flexible: bool) -> None:
        super().__init__(codec(spec, version, flexible))
        self.spec, self.version = spec, version

    def _decode(self, obj, context, path):
        return present_only(self.spec, self.version, obj)

    def _encode(self, obj, context, path):
        return obj


@dataclass(frozen=True, eq=False)
class Message:
    """A standalone versioned message (an internal topic's key or value):
    Kafka's ``validVersions``/``flexibleVersions`` and its field tree."""

    spec: Struct
    valid: str
    flexible: str = "none"

    @property
    def name(self) -> str:
        return self.spec.name

    def versions(self) -> range:
        lo, hi = parse_versions(self.valid)
        return range(lo, hi + 1)

    def is_flexible(self, version: int) -> bool:
        return _within(parse_versions(self.flexible), version)

    def struct(self, version: int) -> Construct:
        """The body of ``version``; decodes to the fields that version has."""
        if version not in self.versions():
            raise ValueError(f"{self.name} has no version {version}")
        return _Present(self.spec, version, self.is_flexible(version))


class _Unsupported(Construct):
    """A version the message does not define; Kafka's generated readers
    say "Can't read version N of <Message>"."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.message = name

    def _parse(self, stream, context, path):
        raise StreamError(f"Can't read version {context.version} of {self.message}", path=path)

    def _build(self, obj, stream, context, path):
        raise StreamError(f"Can't write version {context.version} of {self.message}", path=path)

    def _sizeof(self, context, path):
        raise ExplicitError("no fixed size", path=path)


def versioned(*cases: tuple[Message, tuple[int, ...] | None]) -> Construct:
    """``version int16`` then the body that version selects. Each case is a
    message and the version numbers that select it (None: its own versions,
    each selecting its own body); internal-topic keys use explicit numbers
    because there the key version IS the record type."""
    table = {}
    for message, numbers in cases:
        if numbers is None:
            table.update({v: message.struct(v) for v in message.versions()})
        else:
            body = message.struct(message.versions()[0])
            table.update({v: body for v in numbers})
    names = "/".join(m.name for m, _ in cases)
    return _CStruct("version" / P.Int16, "data" / Switch(this.version, table, _Unsupported(names)))


def snake(name: str) -> str:
    """Kafka's CamelCase as kproto's snake_case (one underscore before each capital)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Exact(Subconstruct):
    """``subcon``, then the end of the frame: bytes past it are an error
    located at the first of them."""

    def _parse(self, stream, context, path):
        value = self.subcon._parsereport(stream, context, path)
        rest = stream.read()
        if rest:
            stream.seek(-len(rest), 1)
            raise TerminatedError(f"{len(rest)} bytes left after the body", path=path)
        return value

    def _build(self, obj, stream, context, path):
        return self.subcon._build(obj, stream, context, path)


@lru_cache(maxsize=None)
def exact(con: Construct) -> Construct:
    """``con`` that must end where the data ends (a frame's body, a record's value)."""
    return _Exact(con)
