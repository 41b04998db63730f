"""Protocol values from the field tables: hypothesis strategies for every API
and version, and the fixtures' known writer quirks."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kproto import protocol as P
from kproto.schemas.message import ArrayOf, Scalar, Sized, Struct


PROTOCOL_SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
PROTOCOL_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def plain(value):
    """Containers -> dicts, keeping ``_unknown`` (Container.__eq__ skips it)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@lru_cache(maxsize=None)
def _type_strategy(t, version: int, flexible: bool):
    if isinstance(t, Scalar):
        if t.kafka in _INTS:
            bits = _INTS[t.kafka]
            return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if t.kafka == "uint16":
            return st.integers(0, 0xFFFF)
        if t.kafka == "float64":
            return st.floats(allow_nan=False)   # NaN != NaN; its bytes round-trip all the same
        return st.booleans() if t.kafka == "bool" else st.uuids()
    if isinstance(t, Sized):
        return PROTOCOL_TEXT if t.text else st.binary(max_size=8)
    if isinstance(t, ArrayOf):
        return st.lists(_type_strategy(t.elem, version, flexible), max_size=2)
    return values(t, version, flexible)


@lru_cache(maxsize=None)
def values(spec: Struct, version: int, flexible: bool):
    """Values of ``spec`` at ``version``, shaped as decoding returns them."""
    fields = {}
    for f in spec.fields:
        if not f.present(version):
            fields[f.name] = st.builds(f.default_value)
            continue
        s = _type_strategy(f.type, version, flexible)
        if f.nullable_in(version):
            s = st.none() | s
        if f.tagged_in(version):
            s = st.builds(f.default_value) | s
        fields[f.name] = s
    base = st.fixed_dictionaries(fields)
    if not flexible:
        return base
    known = {f.tag for f in spec.fields if f.tag is not None}
    unknown = st.dictionaries(st.integers(0, 300).filter(lambda t: t not in known),
                              st.binary(max_size=5), max_size=2)
    return st.tuples(base, unknown).map(lambda p: {**p[0], "_unknown": p[1]} if p[1] else p[0])


PROTOCOL_CASES = [pytest.param(spec, v, kind, id=f"{spec.name}-v{v}-{kind}")
         for spec in P.API_KEYS.values() for v in spec.versions for kind in ("request", "response")]


# Frames whose writer encoded tagged fields at their default value.
DEFAULT_TAGS_WRITTEN = {
    "api_versions_response_v3_tansu-0.6.0_000", "api_versions_response_v4_tansu-0.6.0_000",
    "create_topics_response_v7_tansu-0.6.0_000", "fetch_response_v16_tansu-0.6.0_000",
}


# Frames with bytes after the body, which Kafka's readers ignore (so the
# broker does: decode_request(allow_trailing=True)): stem -> how many.
TRAILING_BYTES = {
    # librdkafka 2.16 ends AlterUserScramCredentials v0 with one more 0 byte
    # after the request's tag buffer.
    "alter_user_scram_credentials_request_v0_librdkafka-2.16.0_000": 1,
}


# Frames that break Kafka's schema: stem -> (byte position, why). kproto must
# refuse them with a located error, as Kafka's readers would.
WRITER_BUGS = {
    "describe_user_scram_credentials_response_v0_tansu-0.6.0_000":
        (13, "tansu 0.6.0 writes a null results array; Kafka's schema has no nullable versions"),
}
