"""The ``schema_registry`` fixture (tests/schema_registry.py) serves what the console tools'
registry formats will need of Confluent's API: a schema registered under a TopicNameStrategy
subject (``<topic>-value``) gets an id, the same schema again gets the same id, the schema is
fetched back by id, and Avro, Protobuf and JSON Schema are all accepted.

kproto's ``--key-format/--value-format`` over it: tests/tools/test_schema_registry_formats.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
AVRO = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                                   {"name": "note", "type": ["null", "string"]}]})
PROTOBUF = 'syntax = "proto3";\nmessage Order {\n  int64 id = 1;\n  string note = 2;\n}\n'
JSON_SCHEMA = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                          "properties": {"id": {"type": "integer"}}})


def call(url: str, body: dict | None = None) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def register(registry: str, subject: str, schema: str, schema_type: str | None = None) -> int:
    body = {"schema": schema, **({"schemaType": schema_type} if schema_type else {})}
    status, answer = call(f"{registry}/subjects/{subject}/versions", body)
    assert status == 200, answer
    return answer["id"]


def test_registers_and_serves_by_id(schema_registry):
    sid = register(schema_registry, "orders-value", AVRO)
    assert register(schema_registry, "orders-value", AVRO) == sid
    status, got = call(f"{schema_registry}/schemas/ids/{sid}")
    assert status == 200 and json.loads(got["schema"]) == json.loads(AVRO)
    assert "orders-value" in call(f"{schema_registry}/subjects")[1]
    status, latest = call(f"{schema_registry}/subjects/orders-value/versions/latest")
    assert status == 200 and (latest["id"], latest["version"], latest["subject"]) == (sid, 1, "orders-value")


@pytest.mark.parametrize("schema_type, schema", [("PROTOBUF", PROTOBUF), ("JSON", JSON_SCHEMA)])
def test_protobuf_and_json_schema(schema_registry, schema_type, schema):
    sid = register(schema_registry, f"fmt-{schema_type.lower()}-value", schema, schema_type)
    status, got = call(f"{schema_registry}/schemas/ids/{sid}")
    assert status == 200 and got.get("schemaType") == schema_type


def test_unknown_id_is_confluents_40403(schema_registry):
    status, answer = call(f"{schema_registry}/schemas/ids/999999")
    assert (status, answer["error_code"]) == (404, 40403)
