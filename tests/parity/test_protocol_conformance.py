"""kproto's protocol schemas against kafka-python 3.0.12, byte for byte.

Two independent readings of the same Kafka JSON definitions:

* ``test_tables_match_kafka_json``: every field table in
  kproto/schemas/protocol equals Kafka's JSON as bundled with kafka-python
  (names in snake_case, order, types, versions, nullable versions, tags,
  defaults), with the few deliberate deviations listed in ``DEVIATIONS``.
* ``test_same_bytes``: for every (API, version, direction) kafka-python can
  encode inside kproto's range, a message with a non-default value in every
  field of that version (and a second one with every nullable field null),
  encoded by kafka-python (header included) and by kproto's registry, must be
  the same bytes; kproto must decode kafka-python's bytes back to the values.

kafka-python quirks worked around here (reference/codec-peers.md):
* F5: ``Response.encode(version=N, header=True)`` after ``with_header()``
  raises AttributeError; we encode once without a header (which sets the
  version) and then again with it.
* F4: kafka-python drops unknown tagged fields on encode, so unknown tags are
  not part of these samples (they are tested in test_protocol_roundtrip.py).
* kafka-python renames the authorized-operations int32 fields of Metadata,
  DescribeCluster responses to ``authorized_operations`` and reads them as a
  set of bit positions (``bitfield``); we convert.
* ``MetadataRequest.encode`` turns topics=None into [] at v0 and
  ``DeleteTopicsRequest.encode`` copies ``topics`` into ``topic_names`` at
  v0-5; the samples never rely on either.

A third reading, independent of Kafka's JSON: aiokafka 0.14's hand-written
Struct classes (``test_same_body_as_aiokafka``) for every non-flexible
version it defines, bodies only. They cover the versions Kafka 4.0 dropped
from its JSON ranges (Produce v0-2, Fetch v0-3, ListOffsets v0, ...), whose
fields kproto takes from the JSON's version annotations.
"""

from __future__ import annotations

import itertools
import re
import uuid

import pytest

from kafka.protocol.schemas import load_json

from kproto import protocol as P
from kproto.schemas.message import ArrayOf, Scalar, Sized, Struct, parse_versions
from tests.protocol_samples import AIO, AIO_BUGS, CLIENT_ID, CORRELATION_ID, KP, kp_encode, sample, to_aio


def plain(value):
    """Containers -> dicts (keeping ``_unknown``, which Container.__eq__ skips)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in ("_io",)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# --- the field tables against Kafka's JSON ----------------------------------------------

# (api name, direction, field path): why kproto deliberately differs from the JSON.
DEVIATIONS = {
    ("ListOffsets", "request", "replica_id"):
        "default -1 (consumer) instead of the JSON's implicit 0 (= broker 0)",
}

_JSON_TYPES = {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "uuid", "string", "bytes",
               "records"}


def _snake(name: str) -> str:
    # Kafka-python's (and our) mechanical rule: an underscore before each capital.
    import re
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _json_default(jf: dict):
    t, d = jf["type"], jf.get("default", "")
    if d == "null":
        return None
    if t.startswith("[]"):
        return []
    if t == "bool":
        return str(d).lower() == "true"
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        return int(str(d), 0) if d != "" else 0
    if t == "float64":
        return float(d) if d != "" else 0.0
    if t == "string":
        return d
    if t == "bytes":
        return b""
    if t == "records":
        return None
    if t == "uuid":
        return uuid.UUID(int=0)
    return ...  # structs: compared field by field


# Fields Kafka 4.4 renamed since kafka-python's copy: (api, kind) -> {kproto's: kafka-python's}.
RENAMED = {("TxnOffsetCommit", "request"): {"generation_id_or_member_epoch": "generation_id"}}    # KIP-848


def _compare(api_name: str, kind: str, jfields: list, spec: Struct, prefix: str, errors: list):
    renamed = RENAMED.get((api_name, kind), {}) if not prefix else {}
    ours = [renamed.get(f.name, f.name) for f in spec.fields]
    theirs = [_snake(jf["name"]) for jf in jfields]
    if ours != theirs:
        errors.append(f"{prefix or spec.name}: fields {ours} != JSON {theirs}")
        return
    for f, jf in zip(spec.fields, jfields):
        path = f"{prefix}{f.name}"
        where = (api_name, kind, path)
        for attr, mine, json_text in (
                ("versions", f.versions, jf["versions"]),
                ("nullable", f.nullable, jf.get("nullableVersions")),
                ("tagged", f.tagged if f.tagged is not None or f.tag is None else f.versions,
                 jf.get("taggedVersions"))):
            if parse_versions(mine) != parse_versions(json_text):
                errors.append(f"{path}: {attr} {mine!r} != JSON {json_text!r}")
        if f.tag != jf.get("tag"):
            errors.append(f"{path}: tag {f.tag} != JSON {jf.get('tag')}")
        jt = jf["type"]
        elem_json = jt[2:] if jt.startswith("[]") else jt
        t = f.type
        if jt.startswith("[]") != isinstance(t, ArrayOf):
            errors.append(f"{path}: array-ness differs from JSON type {jt}")
            continue
        inner = t.elem if isinstance(t, ArrayOf) else t
        if elem_json in _JSON_TYPES:
            if not isinstance(inner, (Scalar, Sized)) or inner.kafka != elem_json:
                errors.append(f"{path}: type {t!r} != JSON {jt}")
        else:
            if not isinstance(inner, Struct) or inner.name != elem_json:
                errors.append(f"{path}: type {t!r} != JSON {jt}")
                continue
            _compare(api_name, kind, jf["fields"], inner, path + ".", errors)
        expected = _json_default(jf)
        if expected is not ... and f.default_value() != expected and where not in DEVIATIONS:
            errors.append(f"{path}: default {f.default_value()!r} != JSON {expected!r}")


JSON_APIS = [spec for spec in P.API_KEYS.values() if (spec.key, "request") in KP]
# Versions Kafka 4.4 defines beyond kafka-python 3.0.12's copy: checked field by field against
# Kafka 4.4's own jar (tests/schemas/test_protocol_definitions.py), not byte for byte here.
NEWER_THAN_KAFKA_PYTHON = {"DeleteGroups": 3, "TxnOffsetCommit": 6, "ApiVersions": 5}
_ENDS_AT = re.compile(r"^(\S+): versions '(\d+)-(\d+)' != JSON '(\d+)\+'$")


@pytest.mark.parametrize("spec", JSON_APIS, ids=lambda s: s.name)
@pytest.mark.parametrize("kind", ["request", "response"])
def test_tables_match_kafka_json(spec, kind):
    data = load_json(f"{spec.name}{kind.capitalize()}")
    assert data["apiKey"] == spec.key
    flexible = parse_versions(data["flexibleVersions"])
    assert (flexible[0] if flexible else None) == spec.flexible_from
    valid = parse_versions(data["validVersions"])
    assert spec.max_version <= NEWER_THAN_KAFKA_PYTHON.get(spec.name, valid[1]), \
        "kproto claims versions Kafka does not define"
    schema = spec.request_schema if kind == "request" else spec.response_schema
    assert schema.name == data["name"]
    errors: list[str] = []
    _compare(spec.name, kind, data["fields"], schema, "", errors)
    if spec.name in NEWER_THAN_KAFKA_PYTHON:    # the fields of the newer versions: Kafka 4.4's jar checks them
        newer = {f.name for f in schema.fields if not f.present(valid[1])}
        errors = [e for e in errors if not any(f"'{n}'" in e for n in newer)] if errors else errors
        # and a field the newer versions dropped ends where kafka-python's copy ends
        errors = [e for e in errors if not ((m := _ENDS_AT.match(e)) and m[2] == m[4] and int(m[3]) == valid[1])]
        for struct in (f.type.elem if isinstance(f.type, ArrayOf) else f.type for f in schema.fields):
            if isinstance(struct, Struct):
                gone = {f.name for f in struct.fields if not f.present(valid[1])}
                errors = [e for e in errors if not any(f"'{n}'" in e for n in gone)]
    assert not errors, "\n".join(errors)


def test_headers_match_kafka_json():
    from kproto.schemas.protocol.header import REQUEST_HEADER, RESPONSE_HEADER
    for schema, name in ((REQUEST_HEADER, "RequestHeader"), (RESPONSE_HEADER, "ResponseHeader")):
        errors: list[str] = []
        data = load_json(name)
        _compare(name, "header", data["fields"], schema, "", errors)
        assert not errors, "\n".join(errors)
    assert REQUEST_HEADER.fields[-1].flexible == "none"


# --- byte-exact encoding against kafka-python ------------------------------------------


CASES = [pytest.param(spec, v, kind, id=f"{spec.name}-v{v}-{kind}")
         for spec in P.API_KEYS.values() for v in spec.versions
         for kind in ("request", "response") if (spec.key, kind) in KP
         and v <= parse_versions(load_json(f"{spec.name}{kind.capitalize()}")["validVersions"])[1]]


@pytest.mark.parametrize("spec, version, kind", CASES)
def test_same_bytes(spec, version, kind):
    for nulls in (False, True):
        value = sample(getattr(spec, f"{kind}_schema"), version, itertools.count(1), nulls=nulls)
        theirs = kp_encode(spec, kind, version, value)
        if kind == "request":
            ours = P.encode_request(spec.key, version, CORRELATION_ID, CLIENT_ID, value)
            header, body = P.decode_request(theirs)
            assert (header.request_api_key, header.request_api_version, header.correlation_id,
                    header.client_id) == (spec.key, version, CORRELATION_ID, CLIENT_ID)
        else:
            ours = P.encode_response(spec.key, version, CORRELATION_ID, value)
            header, body = P.decode_response(spec.key, version, theirs)
            assert header.correlation_id == CORRELATION_ID
        assert ours.hex() == theirs.hex(), f"nulls={nulls}"
        assert plain(body) == value, f"nulls={nulls}"


def test_every_supported_api_is_checked_or_explained():
    """APIs kafka-python has no classes for (broker- and controller-internal
    ones, KIP-848/932/1071 groups, telemetry) are proven on kio's bytes
    (test_protocol_thirdparty.py); 4-7 existed only before Kafka 4.0."""
    import kio.schema.index as kio_index
    missing = {spec.key for spec in P.API_KEYS.values() if (spec.key, "request") not in KP}
    assert len(missing) < len(P.API_KEYS) / 2
    assert missing <= set(kio_index.api_key_map) | {4, 5, 6, 7}


# --- bodies against aiokafka's hand-written classes -------------------------------

AIO_CASES = [pytest.param(spec, v, kind, id=f"{spec.name}-v{v}-{kind}")
             for (key, v, kind) in sorted(AIO) if (spec := P.API_KEYS.get(key)) is not None
             and v in spec.versions and not spec.is_flexible(v)]


@pytest.mark.parametrize("spec, version, kind", AIO_CASES)
def test_same_body_as_aiokafka(spec, version, kind):
    from kproto.schemas import build
    schema = getattr(spec, f"{kind}_schema")
    for nulls in (False, True):
        value = sample(schema, version, itertools.count(1), nulls=nulls)
        ours = build(getattr(spec, kind)(version), value)
        fields = to_aio(schema, version, value)
        if (spec.name, kind) == ("CreatePartitions", "request"):
            # aiokafka nests (count, assignment) in a sub-Schema: same bytes, other shape.
            fields[0] = [(name, (count, assignment)) for name, count, assignment in fields[0]]
        theirs = AIO[(spec.key, version, kind)](*fields).encode()
        if (spec.name, version, kind) in AIO_BUGS:
            assert ours != theirs
        else:
            assert ours.hex() == theirs.hex(), f"nulls={nulls}"
