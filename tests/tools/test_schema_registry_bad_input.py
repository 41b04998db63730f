"""Bad input for consume/produce --value-format avro|protobuf|json-schema --schema-registry URL
(kproto/tools/schema_registry.py), without a real registry: a stand-in HTTP server answers
what a broken or foreign registry might. Every error is one line and a non-zero exit (run in
process: a traceback would raise here), naming the record, the registry path or the file."""

from __future__ import annotations

import http.server
import json
import threading
import uuid

import pytest

from kproto.records import NewRecord, build_record_batch
from kproto.testing import FIXTURE_DEFAULTS, Broker
from tests.helpers import create_topic, produce_raw
from tests.tools.helpers import run_command

#: path -> (HTTP status, body) of the stand-in registry; anything else is Confluent's 404
ANSWERS = {
    "/schemas/ids/1": (200, b'{"schema": "not json"}'),
    "/schemas/ids/2": (200, b"<html>oops"),
    "/schemas/ids/3": (200, b'{"schemaType": "PROTOBUF", "schema": "garbage"}'),
    "/schemas/ids/4": (200, b'{"nothing": 1}'),
    "/schemas/ids/5": (200, b"[1, 2]"),
    "/schemas/ids/6": (500, b'{"message": "boom"}'),
    "/schemas/ids/7": (200, b'{"schemaType": "XML", "schema": "x"}'),
    "/subjects/odd-value/versions/latest": (200, b'{"id": "x", "schema": 5}'),
}


@pytest.fixture(scope="module")
def registry():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = ANSWERS.get(self.path, (404, b'{"error_code": 40403, "message": "Schema not found"}'))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory):
    with Broker(tmp_path_factory.mktemp("sr-bad") / "data", FIXTURE_DEFAULTS) as b:
        yield b.bootstrap_servers


def put(bootstrap: str, topic: str, value: bytes) -> None:
    create_topic(bootstrap, topic)
    assert produce_raw(bootstrap, topic, 0, build_record_batch([NewRecord(None, value, ())])).error_code == 0


def consume(bootstrap: str, topic: str, fmt: str, url: str):
    return run_command("consume", bootstrap, "--topic", topic, "--from-beginning", "-e", "--value-format", fmt,
                       "--schema-registry", url)


@pytest.mark.parametrize("sid, fmt, line", [
    (1, "avro", "bad Avro schema: Expecting value: line 1 column 1 (char 0)"),
    (2, "avro", "Schema Registry {url}/schemas/ids/2: the answer is not JSON"),
    (3, "protobuf", 'the .proto schema does not compile: schema.proto:1:1: Expected top-level statement '
                    '(e.g. "message").'),
    (3, "avro", "schema id 3 is PROTOBUF, not AVRO (--value-format avro)"),
    (4, "json-schema", "Schema Registry {url}/schemas/ids/4: the answer has no schema id and schema"),
    (5, "avro", "Schema Registry {url}/schemas/ids/5: the answer is not a JSON object"),
    (6, "protobuf", "Schema Registry: schema id 6: boom"),
    (7, "json-schema", "schema id 7 is XML, not JSON (--value-format json-schema)"),
    (99, "avro", "schema id 99 not found in the Schema Registry"),
])
def test_a_registry_answer_that_is_no_schema_is_one_line(bootstrap, registry, sid, fmt, line):
    topic = f"sr-bad-{sid}-{fmt}"
    put(bootstrap, topic, b"\x00" + sid.to_bytes(4, "big") + b"\x00\x02")
    assert consume(bootstrap, topic, fmt, registry) == (
        1, "", f"kproto: error: {topic}-0 offset 0: value: {line.format(url=registry)}\n")


@pytest.mark.parametrize("value", [b"", b"\x00\x00", b"\x01\x00\x00\x00\x01\x02", b"plain"])
def test_a_record_without_magic_byte_and_schema_id_is_one_line(bootstrap, registry, value):
    topic = f"sr-bad-wire-{len(value)}-{value[:1].hex()}"
    put(bootstrap, topic, value)
    assert consume(bootstrap, topic, "avro", registry) == (
        1, "", f"kproto: error: {topic}-0 offset 0: value: not in Confluent's wire format "
               "(no magic byte 0 and schema id)\n")


@pytest.mark.parametrize("url", ["notaurl", "http://", "ftp://127.0.0.1/x", "http://[::1", "http://h:x"])
def test_a_registry_url_that_is_no_http_url_is_a_usage_error(bootstrap, url):
    for command in ("consume", "produce"):
        assert run_command(command, bootstrap, "--topic", "t", "--value-format", "avro", "--schema-registry", url) \
            == (2, "", f"--schema-registry {url}: not an http:// or https:// URL\n")


def produce(bootstrap: str, topic: str, tmp_path, *args: str):
    src = tmp_path / "in.json"
    src.write_text(json.dumps({"value": {"id": 1}}) + "\n")
    create_topic(bootstrap, topic)
    return run_command("produce", bootstrap, "--topic", topic, "--json", "--file", str(src), *args)


def test_produce_with_an_unreachable_registry_or_an_odd_latest_is_one_line(bootstrap, registry, tmp_path):
    status, out, err = produce(bootstrap, "sr-down", tmp_path, "--value-format", "avro",
                               "--schema-registry", "http://127.0.0.1:1")
    assert (status, out) == (1, "") and err.startswith(
        "kproto: error: Schema Registry http://127.0.0.1:1 unreachable: ") and err.count("\n") == 1
    assert produce(bootstrap, "sr-none", tmp_path, "--value-format", "avro", "--schema-registry", registry) == (
        1, "", "kproto: error: subject sr-none-value not found in the Schema Registry "
               "(give a schema file to register one)\n")
    assert produce(bootstrap, "odd", tmp_path, "--value-format", "avro", "--schema-registry", registry) == (
        1, "", f"kproto: error: Schema Registry {registry}/subjects/odd-value/versions/latest: the answer has no "
               "schema id and schema\n")


@pytest.mark.parametrize("fmt, content, line", [
    ("avro", b"{not json", "bad Avro schema: Expecting property name enclosed in double quotes: line 1 column 2 "
                           "(char 1)"),
    ("avro", b'{"type": "record"}', "bad Avro schema: \"name\" is a required field missing from the schema: "
                                    "{'type': 'record'}"),
    ("avro", b"", "bad Avro schema: Expecting value: line 1 column 1 (char 0)"),
    ("json-schema", b'{"type": 5}', "bad JSON Schema: 5 is not valid under any of the given schemas"),
    ("protobuf", b'syntax = "proto3";\nmessage A { int64 x = 1 }\n',
     'the .proto schema does not compile: schema.proto:2:25: Expected ";".'),
    ("avro", b"\xff\xfe", None),
])
def test_a_bad_schema_file_names_itself_before_the_registry_is_asked(bootstrap, registry, tmp_path, fmt, content,
                                                                     line):
    """Checked here first: nothing is registered (the stand-in would refuse any registration
    with "Schema not found")."""
    schema = tmp_path / "schema.txt"
    schema.write_bytes(content)
    line = line or "@ byte 0: not UTF-8 text"
    sep = " " if line.startswith("@") else ": "
    assert produce(bootstrap, f"sr-file-{uuid.uuid4().hex[:8]}", tmp_path, "--value-format", fmt, "--value-schema", str(schema),
                   "--schema-registry", registry) == (1, "", f"kproto: error: {schema}{sep}{line}\n")
