"""Every table in kproto/schemas/protocol against Kafka's definitions, version by version.

Three readings of Kafka's message definitions, all installed by ``make test``
(a missing one fails, never skips; the jar, like every Kafka-backed test, skips
outside CI when Kafka was not fetched):

* Kafka 4.4.0's own JSON, inside the kafka-clients jar ``make kafka`` fetches
  (``common/message/*.json``): the release kproto's broker answers as, newest
  and authoritative (Produce v13, Fetch v18, DeleteGroups v3, ...);
* the JSON files bundled with kafka-python 3.0.12 (Kafka 4.x's
  clients/src/main/resources/common/message/*.json): every version in each
  file's ``validVersions``;
* kio 0.6.5's generated dataclasses (a newer Kafka 4.x, with keys 88-92):
  every version it has, read back field by field (kio drops the ``_ms`` of
  duration fields and reads a zero uuid as None; generators.definitions
  undoes both).

For each (API, version, direction) the field list kproto's codec uses (name,
type, nullability, tag, default, nested structs) must equal Kafka's; each
deliberate difference is listed by name in ``DEVIATIONS`` and reported.
Versions neither source defines (those Kafka 4.0 dropped, and the
ZooKeeper-era keys 4-7) come from apache/kafka's git history; they are checked
against aiokafka's hand-written classes where it has them
(test_protocol_conformance.py) and on third-party bytes
(test_protocol_thirdparty.py), and ``python -m generators.protocol --check``
compares them with a Kafka checkout.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import kafka.protocol.schemas as kafka_schemas   # a missing source is an error, never a skip
import kio.schema.index as kio_index

from generators import definitions as G  # the readers of all sources
from kproto.schemas import protocol as P
from kproto.schemas.message import ArrayOf, Scalar, Sized, Struct
from tests.kafka_ref import KAFKA_LIB, KAFKA_VERSION, unavailable

JSON_DIR = Path(kafka_schemas.__file__).parent / "resources"
JAR = KAFKA_LIB / f"kafka-clients-{KAFKA_VERSION}.jar"

# What Kafka 4.4's jar defines that kproto does not have yet, and whose work it is, by
# (key, version, direction): each is a strict xfail, so the case fails (and its entry must
# go) once kproto has it.
NOT_YET = {
    (93, 0, "request"): "StreamsGroupTopologyDescriptionUpdate: a new API, not a new version",
    (93, 0, "response"): "StreamsGroupTopologyDescriptionUpdate: a new API, not a new version",
    (94, 0, "request"): "UnregisterController: a new API (controller listener), not a new version",
    (94, 0, "response"): "UnregisterController: a new API (controller listener), not a new version",
}

# (api, direction, field path): why kproto differs from Kafka's definition on purpose.
DEVIATIONS = {
    ("ListOffsets", "request", "replica_id"):
        "default -1 (a consumer) instead of the JSON's implicit 0 (broker 0)",
}


def _json_sources() -> dict[tuple[int, str], dict]:
    out = {}
    for stem, data in G.dir_messages(JSON_DIR).items():
        out[(data["apiKey"], data["type"])] = data
    return out


JSON = _json_sources()
JAR_JSON = {(d["apiKey"], d["type"]): d for d in G.jar_messages(JAR).values()} if JAR.exists() else {}


def _kio(key: int, kind: str) -> dict[int, type]:
    name = kio_index.api_key_map.get(key)
    return G.kio_messages(name, kind) if name else {}


def ours(struct: Struct, version: int) -> list[tuple]:
    """The fields kproto's codec has at ``version``, as comparable tuples."""
    out = []
    for f in struct.fields:
        if not f.present(version):
            continue
        t = f.type
        inner = t.elem if isinstance(t, ArrayOf) else t
        name = inner.kafka if isinstance(inner, (Scalar, Sized)) else inner.name
        sub = ours(inner, version) if isinstance(inner, Struct) else None
        default = f.default_value()
        if isinstance(inner, Struct) and not isinstance(t, ArrayOf) and default is not None:
            default = ...
        out.append((f.name, ("[]" if isinstance(t, ArrayOf) else "") + name, f.nullable_in(version),
                    f.tag if f.tagged_in(version) else None, default, sub))
    return out


def theirs(fields: list) -> list[tuple]:
    return [(f.name, f.type, f.nullable, f.tag, f.default, theirs(f.fields) if f.fields is not None else None)
            for f in fields]


def diff(api: str, kind: str, mine: list, kafka: list, prefix: str = "") -> list[str]:
    errors = []
    if [m[0] for m in mine] != [k[0] for k in kafka]:
        return [f"{prefix or '.'}: fields {[m[0] for m in mine]} != Kafka {[k[0] for k in kafka]}"]
    for m, k in zip(mine, kafka):
        path = prefix + m[0]
        for i, what in ((1, "type"), (2, "nullable"), (3, "tag"), (4, "default")):
            if i == 4 and (k[4] is G.UNKNOWN or (api, kind, path) in DEVIATIONS):
                continue            # kio keeps no default for required fields
            if m[i] != k[i]:
                if i == 1 and m[5] is not None:   # struct names: compare the contents instead
                    continue
                errors.append(f"{path}: {what} {m[i]!r} != Kafka {k[i]!r}")
        if m[5] is not None and k[5] is not None:
            errors.extend(diff(api, kind, m[5], k[5], path + "."))
    return errors


CASES = []
for (_key, _kind), _data in sorted(JAR_JSON.items()):
    for _v in G.versions_of(_data["validVersions"]):
        _why = NOT_YET.get((_key, _v, _kind))
        _name = P.API_KEYS[_key].name if _key in P.API_KEYS else f"key{_key}"
        CASES.append(pytest.param(_key, _v, _kind, "jar", id=f"{_name}-v{_v}-{_kind}-jar",
                                  marks=[pytest.mark.xfail(reason=_why, strict=True)] if _why else []))
if not JAR_JSON:
    CASES.append(pytest.param(None, None, None, "jar", id="jar-missing"))
for _key, _spec in P.API_KEYS.items():
    for _kind in ("request", "response"):
        # the older readings, for the versions the jar does not define (it supersedes them:
        # Kafka 4.4 changed BrokerHeartbeat v2 and StreamsGroupHeartbeat v0 since kio 0.6.5)
        _jar = JAR_JSON.get((_key, _kind))
        _newer = set(G.versions_of(_jar["validVersions"])) if _jar else set()
        if (_key, _kind) in JSON:
            for _v in sorted(set(G.versions_of(JSON[(_key, _kind)]["validVersions"])) - _newer):
                CASES.append(pytest.param(_key, _v, _kind, "json", id=f"{_spec.name}-v{_v}-{_kind}-json"))
        for _v in sorted(set(_kio(_key, _kind)) - _newer):
            CASES.append(pytest.param(_key, _v, _kind, "kio", id=f"{_spec.name}-v{_v}-{_kind}-kio"))


@pytest.mark.parametrize("key, version, kind, source", CASES)
def test_fields_equal_kafka(key, version, kind, source):
    if source == "jar" and not JAR_JSON:
        unavailable(FileNotFoundError(f"{JAR} (make kafka fetches it)"))
    assert key in P.API_KEYS, f"kproto lacks API key {key}"
    spec = P.API_KEYS[key]
    assert spec.min_version <= version <= spec.max_version, f"kproto lacks {spec.name} v{version}"
    if source == "jar":
        kafka = G.from_json(JAR_JSON[(key, kind)], version)
    elif source == "json":
        kafka = G.from_json(JSON[(key, kind)], version)
    else:
        kafka = G.from_kio(_kio(key, kind)[version])
    assert kafka.flexible == spec.is_flexible(version)
    schema = getattr(spec, f"{kind}_schema")
    assert schema.name == kafka.name or source == "kio"
    errors = diff(spec.name, kind, ours(schema, version), theirs(kafka.fields))
    assert not errors, "\n".join(errors)


def test_every_key_and_version_has_a_source():
    """All 89 keys of Kafka 4.x (kio) plus 4-7; every version in kproto's
    range is defined by one of the sources or by apache/kafka's history."""
    keys = set(kio_index.api_key_map) | {4, 5, 6, 7}
    assert set(P.API_KEYS) == keys and len(keys) == 93
    newest = {}
    for key in keys:
        versions = set(_kio(key, "request"))
        for source in (JSON, JAR_JSON):
            if (key, "request") in source:
                versions |= set(G.versions_of(source[(key, "request")]["validVersions"]))
        newest[key] = max(versions, default=None)
    for key, spec in P.API_KEYS.items():
        if newest[key] is not None and (key, newest[key], "request") not in NOT_YET:
            assert spec.max_version == newest[key], spec.name


def test_deviations_are_reported():
    """Each deliberate deviation names an API and a field that exist."""
    for (api, kind, path), why in DEVIATIONS.items():
        spec = next(s for s in P.API_KEYS.values() if s.name == api)
        struct = getattr(spec, f"{kind}_schema")
        for part in path.split("."):
            f = next(f for f in struct.fields if f.name == part)
            struct = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        assert why
        print(f"deviation: {api} {kind} {path}: {why}")


def test_served_versions_are_decodable():
    for key, (lo, hi) in P.served_versions().items():
        spec = P.API_KEYS[key]
        assert spec.min_version <= lo <= hi <= spec.max_version, spec.name


def test_zero_uuid_default():
    assert P.API_KEYS[3].request_schema.fields[0].type.elem.fields[0].default_value() == uuid.UUID(int=0)
