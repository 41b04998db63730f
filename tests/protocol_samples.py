"""Protocol values shared by the conformance tests and the fixture writer:
a sampler that sets every field of a schema version to a non-default value,
kafka-python's generated classes and an encoder through them (header
included), and aiokafka's hand-written Struct classes with the converter to
their positional fields. Used by test_protocol_conformance.py,
test_protocol_wireshark.py and tests/fixtures/protocol_codecs.py; the quirks
worked around are described in test_protocol_conformance.py.
"""

from __future__ import annotations

import uuid

import kafka.protocol.admin  # noqa: F401  (registers the classes)
import kafka.protocol.consumer  # noqa: F401
import kafka.protocol.metadata  # noqa: F401
import kafka.protocol.producer  # noqa: F401
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs.types import BitField

from kproto.schemas.message import ArrayOf, Scalar, Sized, Struct

CORRELATION_ID = 0x01020304
CLIENT_ID = "kproto-conformance"


def _kp_classes() -> dict[tuple[int, str], type]:
    out, todo = {}, list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            out[(cls.API_KEY, cls.type)] = cls
    return out


KP = _kp_classes()


# --- values, and their bytes through kafka-python ------------------------------------------

_INT_RANGES = {"int8": (1, 120), "int16": (1000, 30000), "int32": (100000, 2**31 - 1),
               "int64": (2**40, 2**63 - 1), "uint16": (40000, 65535)}


def _scalar_sample(t, default, k: int):
    if t.kafka == "bool":
        return not default
    if t.kafka == "uuid":
        return uuid.UUID(int=(k + 1) * 0x1000100010001)
    if t.kafka == "float64":
        return k + 0.25
    lo, hi = _INT_RANGES[t.kafka]
    value = lo + (k * 7919) % (hi - lo)
    return value + 1 if value == default else value


def sample(spec: Struct, version: int, counter, *, nulls: bool) -> dict:
    """A value for ``spec`` at ``version``: every field on the wire set to a
    non-default value (or null, with ``nulls``, where the version allows it);
    fields the version lacks at their defaults, as decoding produces them."""
    out = {}
    for f in spec.fields:
        if not f.present(version):
            out[f.name] = f.default_value()
            continue
        if nulls and f.nullable_in(version):
            out[f.name] = None
            continue
        out[f.name] = _value(f.type, f.default_value(), version, counter, nulls, f.name)
    return out


def _value(t, default, version, counter, nulls, name):
    k = next(counter)
    if isinstance(t, Scalar):
        return _scalar_sample(t, default, k)
    if isinstance(t, Sized):
        return f"{name}-{k}-é" if t.text else f"{name}{k}".encode() + bytes([k % 256, 0, 255])
    if isinstance(t, ArrayOf):
        n = 1 if nulls else 2
        if isinstance(t.elem, Struct):
            return [sample(t.elem, version, counter, nulls=nulls) for _ in range(n)]
        return [_value(t.elem, t.elem.default, version, counter, nulls, name) for _ in range(n)]
    return sample(t, version, counter, nulls=nulls)


def _to_kp(kp_fields, spec: Struct, value: dict, version: int) -> dict:
    """Our value as kafka-python constructor kwargs (fields in JSON order, paired by position
    among the fields of ``version``: a field renamed since kafka-python's copy pairs all the same)."""
    kwargs = {}
    ours = [f for f in spec.fields if f.present(version)]
    for kf, f in zip([kf for kf in kp_fields if kf.for_version_q(version)], ours):
        v = value[f.name]
        if v is None:
            kwargs[kf.name] = None
        elif kf.is_struct_array():
            cls = kf.data_class
            kwargs[kf.name] = [cls(**_to_kp(kf.array_of._fields, f.type.elem, e, version)) for e in v]
        elif kf.is_struct():
            kwargs[kf.name] = kf.data_class(**_to_kp(kf._fields, f.type, v, version))
        elif kf.type_str == "bitfield":
            kwargs[kf.name] = None if v == -2**31 else BitField.from_32_bit_field(v & 0xFFFFFFFF)
        else:
            kwargs[kf.name] = v
    return kwargs


def kp_encode(spec, kind: str, version: int, value: dict) -> bytes:
    cls = KP[(spec.key, kind)]
    obj = cls(version=version, **_to_kp(cls._struct._fields, getattr(spec, f"{kind}_schema"),
                                        value, version))
    if kind == "request":
        obj.with_header(correlation_id=CORRELATION_ID, client_id=CLIENT_ID)
        return obj.encode(version=version, header=True)
    obj.encode(version=version)  # F5: set the version before a ResponseHeader exists
    obj.with_header(correlation_id=CORRELATION_ID)
    return obj.encode(header=True)


# --- aiokafka's hand-written classes ------------------------------------------------------

def _aiokafka_classes() -> dict[tuple[int, int, str], type]:
    import importlib
    import pkgutil
    import re

    import aiokafka.protocol as AP
    from aiokafka.protocol.api import Response
    from aiokafka.protocol.struct import Struct as AStruct
    out = {}
    for m in pkgutil.iter_modules(AP.__path__):
        for name, cls in vars(importlib.import_module(f"aiokafka.protocol.{m.name}")).items():
            # The version comes from the class name: ListGroupsRequest_v2 says API_VERSION = 1
            # (harmless: v1 and v2 bodies are the same).
            match = re.fullmatch(r"\w+?(Request|Response)_v(\d+)", name)
            if match and isinstance(cls, type) and issubclass(cls, AStruct) and hasattr(cls, "API_KEY"):
                kind = "response" if issubclass(cls, Response) else "request"
                out[(cls.API_KEY, int(match.group(2)), kind)] = cls
    return out


AIO = _aiokafka_classes()

# (api, version, direction): aiokafka's schema is wrong; kproto follows Kafka.
AIO_BUGS = {
    ("ListOffsets", 4, "request"): "current_leader_epoch declared Int64 (Kafka: int32); "
                                   "aiokafka only sends v0-3",
    ("ListOffsets", 5, "request"): "same as v4",
}


def to_aio(spec: Struct, version: int, value: dict) -> list:
    """Our value as aiokafka positional fields; a one-field struct in an array
    is aiokafka's Array(<type>) (Metadata topics before v10, CreatePartitions)."""
    out = []
    for f in spec.fields:
        if not f.present(version):
            continue
        v, t = value[f.name], f.type
        if isinstance(t, ArrayOf) and isinstance(t.elem, Struct) and v is not None:
            present = [g for g in t.elem.fields if g.present(version)]
            v = [e[present[0].name] if len(present) == 1 else tuple(to_aio(t.elem, version, e))
                 for e in v]
        elif isinstance(t, Struct) and v is not None:
            v = tuple(to_aio(t, version, v))
        out.append(v)
    return out

