"""What the internal topics' records share: ``key_version``, the type tag both
topics' keys start with (read by the coordinators' loading, e.g.
kproto.server.coordinator.persistence, and by dump-log's decoders), and
``kafka_json``, a parsed value in the JSON form Kafka's generated JsonConverter
writes. The dump-log lines made from them are kproto.tools.dump_log.decoders.
"""

from __future__ import annotations

import base64
import uuid

from kproto.schemas.message import RECORDS, ArrayOf, Field, Struct

__all__ = ["key_version", "camel", "kafka_json", "kafka_uuid"]


def key_version(buf: bytes) -> int | None:
    """The int16 an internal record's key (or value) starts with: its type
    (or schema version); None when fewer than two bytes are there."""
    if len(buf) < 2:
        return None
    return int.from_bytes(buf[:2], "big", signed=True)


def camel(name: str) -> str:
    """Kafka's JSON field name for a kproto (snake_case) field name."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def kafka_json(value, spec: Struct | None = None, version: int = 0):
    """A parsed construct value as Kafka's generated JsonConverter writes it:
    camelCase keys in schema order, UUIDs as Uuid.toString(), bytes as base64
    (on dumping), private and unknown-tag entries left out. Given the value's
    ``spec`` and ``version``, a tagged field still at its default is left out
    too: the generated ``<Message>JsonConverter.write`` writes a tagged field
    only when it differs from its default (e.g. PartitionRecord's
    leaderRecoveryState, OffsetCommitValue's topicId); a records field is
    its size, ``<name>SizeInBytes``, as ``write(data, version, false)`` prints it."""
    if isinstance(value, dict):
        fields = {f.name: f for f in spec.fields} if spec is not None else {}
        out = {}
        for k, v in value.items():
            if k.startswith("_") or k == "tagged_fields":
                continue
            f = fields.get(k)
            if f is not None and f.tag is not None and f.tagged_in(version) and v == f.default_value():
                continue
            if f is not None and f.type is RECORDS and v is not None:
                out[camel(k) + "SizeInBytes"] = len(v)
                continue
            out[camel(k)] = kafka_json(v, _inner(f), version)
        return out
    if isinstance(value, list):
        return [kafka_json(v, spec, version) for v in value]
    if isinstance(value, uuid.UUID):
        return kafka_uuid(value)
    return value


def _inner(f: Field | None) -> Struct | None:
    t = f.type if f is not None else None
    t = t.elem if isinstance(t, ArrayOf) else t
    return t if isinstance(t, Struct) else None
