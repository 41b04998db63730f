"""``kproto consume/produce --key-format/--value-format avro|protobuf|json-schema --schema-registry``
cross-checked with confluent-kafka's own serializers against a real registry (the
``schema_registry`` fixture): what confluent-kafka writes, kproto decodes (live, through
``--log-dir`` and from a capture) to exact JSON; what kproto writes, confluent-kafka's deserializers decode to the
exact objects; every error one line and a non-zero exit."""

from __future__ import annotations

import datetime
import decimal
import importlib
import json
import uuid
import subprocess
import sys

import pytest

pytest.importorskip("confluent_kafka.schema_registry.avro")
pytest.importorskip("grpc_tools")

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from kproto.records import NewRecord, build_record_batch  # noqa: E402
from kproto.testing import FIXTURE_DEFAULTS, Broker  # noqa: E402
from kproto.tools.console_format import json_to_bytes  # noqa: E402
from kproto.tools.schema_registry import message_indexes_bytes, read_message_indexes  # noqa: E402
from tests.helpers import create_topic, produce_raw  # noqa: E402
from tests.kafka_ref import free_port  # noqa: E402
from tests.tools.helpers import run_command  # noqa: E402

ORDER_AVRO = {
    "type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "blob", "type": "bytes"},
        {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 2}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
        {"name": "attrs", "type": {"type": "map", "values": "double"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
    ]}
UID = uuid.UUID("12345678-1234-5678-1234-567812345678")
AT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.timezone.utc)
# (the Python objects confluent-kafka's Avro serde holds, the JSON kproto prints)
AVRO_ROWS = [
    ({"id": 1, "note": None, "blob": b"\xff\x00", "tag": b"ab", "price": decimal.Decimal("12.34"), "at": AT,
      "day": datetime.date(2024, 5, 6), "state": "NEW", "lines": [{"sku": "x", "qty": 2}], "attrs": {"w": 1.5},
      "uid": UID, "clock": datetime.time(13, 14, 15, 16000)},
     {"id": 1, "note": None, "blob": {"base64": "/wA="}, "tag": "ab", "price": "12.34",
      "at": "2024-05-06T07:08:09.123000+00:00", "day": "2024-05-06", "state": "NEW",
      "lines": [{"sku": "x", "qty": 2}], "attrs": {"w": 1.5}, "uid": str(UID), "clock": "13:14:15.016000"}),
    ({"id": -7, "note": "ünï", "blob": b"", "tag": b"\x00\x01", "price": decimal.Decimal("-0.05"),
      "at": datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc), "day": datetime.date(1999, 12, 31),
      "state": "PAID", "lines": [], "attrs": {}, "uid": UID, "clock": datetime.time(0)},
     {"id": -7, "note": "ünï", "blob": "", "tag": "\x00\x01", "price": "-0.05",
      "at": "1970-01-01T00:00:00+00:00", "day": "1999-12-31", "state": "PAID", "lines": [], "attrs": {},
      "uid": str(UID), "clock": "00:00:00"}),
]
PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string note = 2;
  bytes blob = 3;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 4;
  enum State { NEW = 0; PAID = 1; }
  State state = 5;
}
message Refund { int32 order = 1; }
"""
JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
               "properties": {"id": {"type": "integer"}, "note": {"type": ["string", "null"]},
                              "lines": {"type": "array", "items": {"type": "object"}}},
               "required": ["id"], "additionalProperties": False}
JSON_ROWS = [{"id": 1, "note": None, "lines": [{"sku": "x", "qty": 2}]}, {"id": 2, "note": "ü", "lines": []}]


@pytest.fixture(scope="module")
def kbroker(tmp_path_factory):
    d = tmp_path_factory.mktemp("sr-broker")
    with Broker(d / "data", FIXTURE_DEFAULTS, log_path=d / "broker.log") as br:
        yield br


@pytest.fixture(scope="module")
def order_pb2(tmp_path_factory):
    """confluent-kafka's side of Protobuf: classes generated by protoc (grpcio-tools) from PROTO."""
    d = tmp_path_factory.mktemp("proto")
    (d / "sr_order.proto").write_text(PROTO)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"--python_out={d}", "sr_order.proto"],
                   check=True)
    sys.path.insert(0, str(d))
    try:
        yield importlib.import_module("sr_order_pb2")
    finally:
        sys.path.remove(str(d))


def put(bootstrap: str, topic: str, values: list[bytes | None], keys: list[bytes | None] | None = None) -> None:
    create_topic(bootstrap, topic)
    keys = keys or [None] * len(values)
    batch = build_record_batch([NewRecord(k, v, (), 1000 + i) for i, (k, v) in enumerate(zip(keys, values))])
    assert produce_raw(bootstrap, topic, 0, batch).error_code == 0


def consumed(bootstrap: str | None, topic: str, *args: str, source: tuple[str, ...] = ()) -> list[dict]:
    status, out, err = run_command("consume", bootstrap, *source, "--topic", topic, "--json",
                                   *(("--from-beginning", "-e") if bootstrap else ()), *args)
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


def raw_values(bootstrap: str, topic: str, field: str = "value") -> list[bytes | None]:
    return [json_to_bytes(r[field], "test") for r in consumed(bootstrap, topic)]


def ctx(topic: str, field=MessageField.VALUE) -> SerializationContext:
    return SerializationContext(topic, field)


def both_sources(kbroker, topic: str, *args: str) -> list[dict]:
    """consume's records live, checked equal to the --log-dir ones read offline."""
    live = consumed(kbroker.bootstrap_servers, topic, *args)
    assert consumed(None, topic, *args, source=("--log-dir", str(kbroker.data_dir))) == live
    return live


# --- confluent-kafka writes, kproto reads ------------------------------------------------------

def test_avro_written_by_confluent_is_decoded(kbroker, schema_registry):
    b, sr = kbroker.bootstrap_servers, SchemaRegistryClient({"url": schema_registry})
    ser = AvroSerializer(sr, json.dumps(ORDER_AVRO))
    key_ser = AvroSerializer(sr, '"string"')
    put(b, "ck-avro", [ser(obj, ctx("ck-avro")) for obj, _ in AVRO_ROWS] + [None],
        [key_ser("k1", ctx("ck-avro", MessageField.KEY)), None, key_ser("", ctx("ck-avro", MessageField.KEY))])
    got = both_sources(kbroker, "ck-avro", "--key-format", "avro", "--value-format", "avro",
                       "--schema-registry", schema_registry)
    assert [r["value"] for r in got] == [js for _, js in AVRO_ROWS] + [None]
    assert [r["key"] for r in got] == ["k1", None, ""]
    status, out, err = run_command("consume", b, "--topic", "ck-avro", "--from-beginning", "--max-messages", "1",
                                   "--value-format", "avro", "--key-format", "avro",
                                   "--schema-registry", schema_registry, "--property", "print.key=true")
    assert (status, out) == (0, '"k1"\t' + json.dumps(AVRO_ROWS[0][1], ensure_ascii=False,
                                                        separators=(",", ":")) + "\n"), err


def test_capture_source_decodes_too(kbroker, schema_registry, tmp_path):
    from tests.capture.capture_session import tcpdump
    from tests.components import require_executable
    require_executable("tcpdump", "apt-get install tcpdump")
    b, sr = kbroker.bootstrap_servers, SchemaRegistryClient({"url": schema_registry})
    ser = AvroSerializer(sr, json.dumps(ORDER_AVRO))
    pcap = tmp_path / "sr.pcap"
    with tcpdump(pcap, "lo", f"tcp port {b.rsplit(':', 1)[1]}"):
        put(b, "ck-cap", [ser(obj, ctx("ck-cap")) for obj, _ in AVRO_ROWS])
    got = consumed(None, "ck-cap", "--value-format", "avro", "--schema-registry", schema_registry,
                   source=("--capture", str(pcap)))
    assert [(r["offset"], r["value"]) for r in got] == [(0, AVRO_ROWS[0][1]), (1, AVRO_ROWS[1][1])]


def test_protobuf_written_by_confluent_is_decoded(kbroker, schema_registry, order_pb2):
    b, sr = kbroker.bootstrap_servers, SchemaRegistryClient({"url": schema_registry})
    order = order_pb2.Order(id=1 << 40, note="n", blob=b"\xff", state=order_pb2.Order.PAID,
                            lines=[order_pb2.Order.Line(sku="x", qty=3)])
    values = [ProtobufSerializer(order_pb2.Order, sr, {"use.deprecated.format": False})(order, ctx("ck-proto")),
              ProtobufSerializer(order_pb2.Order, sr, {"use.deprecated.format": False})(order_pb2.Order(),
                                                                                         ctx("ck-proto")),
              # a second message of the file and a nested one: message indexes [1] and [0, 0]
              ProtobufSerializer(order_pb2.Refund, sr, {"use.deprecated.format": False})(
                  order_pb2.Refund(order=7), ctx("ck-proto-r")),
              ProtobufSerializer(order_pb2.Order.Line, sr, {"use.deprecated.format": False})(
                  order_pb2.Order.Line(sku="y"), ctx("ck-proto-l"))]
    assert (values[0][5], values[1][5:], values[2][5:7], values[3][5:8]) == (
        0, b"\x00", b"\x02\x02", b"\x04\x00\x00")
    put(b, "ck-proto", values)
    got = both_sources(kbroker, "ck-proto", "--value-format", "protobuf", "--schema-registry", schema_registry)
    assert [r["value"] for r in got] == [
        {"id": str(1 << 40), "note": "n", "blob": "/w==", "lines": [{"sku": "x", "qty": 3}], "state": "PAID"},
        {"id": "0", "note": "", "blob": "", "lines": [], "state": "NEW"},
        {"order": 7},
        {"sku": "y", "qty": 0}]


def test_json_schema_written_by_confluent_is_decoded(kbroker, schema_registry):
    b, sr = kbroker.bootstrap_servers, SchemaRegistryClient({"url": schema_registry})
    ser = JSONSerializer(json.dumps(JSON_SCHEMA), sr)
    put(b, "ck-json", [ser(v, ctx("ck-json")) for v in JSON_ROWS])
    got = both_sources(kbroker, "ck-json", "--value-format", "json-schema", "--schema-registry", schema_registry)
    assert [r["value"] for r in got] == JSON_ROWS


# --- kproto writes, confluent-kafka reads ------------------------------------------------------

def produce(bootstrap: str, topic: str, lines: list, *args: str, tmp_path, as_json: bool = True):
    src = tmp_path / f"{topic}.in"
    src.write_text("".join((json.dumps(x) if as_json else x) + "\n" for x in lines))
    return run_command("produce", bootstrap, "--topic", topic, *(("--json",) if as_json else ()),
                       "--file", str(src), *args)


def test_avro_written_by_kproto_is_confluents(kbroker, schema_registry, tmp_path):
    b = kbroker.bootstrap_servers
    create_topic(b, "kp-avro")
    schema = tmp_path / "order.avsc"
    schema.write_text(json.dumps(ORDER_AVRO))
    key_schema = tmp_path / "key.avsc"
    key_schema.write_text('"string"')
    rows = [{"key": "k1", "value": AVRO_ROWS[0][1]}, {"key": None, "value": AVRO_ROWS[1][1]}]
    # numbers are taken for a decimal too; "Z" for UTC
    rows.append({"key": "k3", "value": {**AVRO_ROWS[1][1], "price": 3, "at": "2024-05-06T07:08:09.123Z"}})
    assert produce(b, "kp-avro", rows, "--value-format", "avro", "--key-format", "avro", "--value-schema",
                   str(schema), "--key-schema", str(key_schema), "--schema-registry", schema_registry,
                   tmp_path=tmp_path) == (0, "", "3 records acknowledged to kp-avro (1 partitions), 0 failed\n")
    # the subject's latest version when no schema file is given
    assert produce(b, "kp-avro", [{"value": AVRO_ROWS[0][1]}], "--value-format", "avro", "--schema-registry",
                   schema_registry, tmp_path=tmp_path)[0] == 0
    sr = SchemaRegistryClient({"url": schema_registry})
    values, keys = raw_values(b, "kp-avro"), raw_values(b, "kp-avro", "key")
    de, key_de = AvroDeserializer(sr), AvroDeserializer(sr)
    assert [de(v, ctx("kp-avro")) for v in values] == [
        AVRO_ROWS[0][0], AVRO_ROWS[1][0], {**AVRO_ROWS[1][0], "price": decimal.Decimal(3), "at": AT},
        AVRO_ROWS[0][0]]
    assert [key_de(k, ctx("kp-avro", MessageField.KEY)) for k in keys] == ["k1", None, "k3", None]
    assert len({v[1:5] for v in values}) == 1
    assert sr.get_latest_version("kp-avro-value").schema_id == int.from_bytes(values[0][1:5], "big")


def test_protobuf_written_by_kproto_is_confluents(kbroker, schema_registry, order_pb2, tmp_path):
    b = kbroker.bootstrap_servers
    create_topic(b, "kp-proto")
    schema = tmp_path / "order.proto"
    schema.write_text(PROTO)
    # plain lines: each line's text is the JSON of the value
    assert produce(b, "kp-proto", ['{"id": "1099511627776", "note": "n", "blob": "/w==", "state": "PAID", '
                                   '"lines": [{"sku": "x", "qty": 3}]}', "{}"],
                   "--value-format", "protobuf", "--value-schema", str(schema), "--schema-registry", schema_registry,
                   tmp_path=tmp_path, as_json=False)[0] == 0
    values = raw_values(b, "kp-proto")
    assert [v[5] for v in values] == [0, 0]       # message indexes [0]: the single byte 0
    de = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False})
    assert [de(v, ctx("kp-proto")) for v in values] == [
        order_pb2.Order(id=1 << 40, note="n", blob=b"\xff", state=order_pb2.Order.PAID,
                        lines=[order_pb2.Order.Line(sku="x", qty=3)]), order_pb2.Order()]
    # what kproto registered is the .proto text, served back by id
    sr = SchemaRegistryClient({"url": schema_registry})
    assert sr.get_schema(int.from_bytes(values[0][1:5], "big")).schema_str.strip() == PROTO.strip()


def test_json_schema_written_by_kproto_is_confluents(kbroker, schema_registry, tmp_path):
    b = kbroker.bootstrap_servers
    create_topic(b, "kp-json")
    schema = tmp_path / "order.json"
    schema.write_text(json.dumps(JSON_SCHEMA))
    assert produce(b, "kp-json", [{"value": v} for v in JSON_ROWS], "--value-format", "json-schema",
                   "--value-schema", str(schema), "--schema-registry", schema_registry, tmp_path=tmp_path)[0] == 0
    sr = SchemaRegistryClient({"url": schema_registry})
    de = JSONDeserializer(None, schema_registry_client=sr)
    assert [de(v, ctx("kp-json")) for v in raw_values(b, "kp-json")] == JSON_ROWS
    # and consume --json | produce --json through the formats copies the values
    dump = consumed(b, "kp-json", "--value-format", "json-schema", "--schema-registry", schema_registry)
    create_topic(b, "kp-json-copy")
    assert produce(b, "kp-json-copy", dump, "--value-format", "json-schema", "--schema-registry", schema_registry,
                   tmp_path=tmp_path)[0] == 1      # no kp-json-copy-value subject yet: one line, below
    assert produce(b, "kp-json-copy", dump, "--value-format", "json-schema", "--value-schema", str(schema),
                   "--schema-registry", schema_registry, tmp_path=tmp_path)[0] == 0
    assert [de(v, ctx("kp-json-copy")) for v in raw_values(b, "kp-json-copy")] == JSON_ROWS


# --- the wire format and the errors -------------------------------------------------------------

@pytest.mark.parametrize("indexes, wire", [([0], b"\x00"), ([1], b"\x02\x02"), ([0, 0], b"\x04\x00\x00"),
                                           ([2, 1, 64], b"\x06\x04\x02\x80\x01")])
def test_message_indexes(indexes, wire):
    assert message_indexes_bytes(indexes) == wire
    assert read_message_indexes(wire + b"rest", 0) == (indexes, len(wire))


def test_errors_are_one_line(kbroker, schema_registry, tmp_path):
    b = kbroker.bootstrap_servers
    fmt = ("--value-format", "avro", "--schema-registry", schema_registry)
    put(b, "sr-err", [b"plain text"])
    assert run_command("consume", b, "--topic", "sr-err", "--from-beginning", "-e", *fmt) == (
        1, "", "kproto: error: sr-err-0 offset 0: value: not in Confluent's wire format "
               "(no magic byte 0 and schema id)\n")
    put(b, "sr-err-id", [b"\x00\x00\x0f\x42\x3f\x02"])
    assert run_command("consume", b, "--topic", "sr-err-id", "--from-beginning", "-e", *fmt) == (
        1, "", "kproto: error: sr-err-id-0 offset 0: value: schema id 999999 not found in the Schema Registry\n")
    down = f"http://127.0.0.1:{free_port()}"
    status, out, err = run_command("consume", b, "--topic", "sr-err-id", "--from-beginning", "-e",
                                   "--value-format", "avro", "--schema-registry", down)
    assert (status, out) == (1, "") and err.startswith(f"kproto: error: sr-err-id-0 offset 0: value: Schema "
                                                       f"Registry {down} unreachable: ") and err.count("\n") == 1
    schema = tmp_path / "order.avsc"
    schema.write_text(json.dumps(ORDER_AVRO))
    create_topic(b, "sr-err-p")
    status, out, err = produce(b, "sr-err-p", [{"value": {"id": "one"}}], "--value-schema", str(schema), *fmt,
                               tmp_path=tmp_path)
    assert (status, out, err) == (1, "", "kproto: error: line 1 value: does not match its Avro schema: "
                                         "\"one\" is not long\n")
    json_schema = tmp_path / "s.json"
    json_schema.write_text(json.dumps(JSON_SCHEMA))
    sid = SchemaRegistryClient({"url": schema_registry}).register_schema(
        "sr-err-js-value", Schema(json.dumps(JSON_SCHEMA), "JSON"))
    assert produce(b, "sr-err-p", [{"value": {"id": 1, "extra": 2}}], "--value-format", "json-schema",
                   "--value-schema", str(json_schema), "--schema-registry", schema_registry, tmp_path=tmp_path) == (
        1, "", "kproto: error: line 1 value: does not match its JSON Schema: Additional properties are not "
               "allowed ('extra' was unexpected)\n")
    put(b, "sr-err-js", [b"\x00" + sid.to_bytes(4, "big") + b'{"id": "one"}'])
    assert run_command("consume", b, "--topic", "sr-err-js", "--from-beginning", "-e", "--value-format",
                       "json-schema", "--schema-registry", schema_registry) == (
        1, "", "kproto: error: sr-err-js-0 offset 0: value: does not match its JSON Schema at id: "
               "'one' is not of type 'integer'\n")
    bad_proto = tmp_path / "bad.proto"
    bad_proto.write_text('syntax = "proto3";\nmessage A { int64 x = 1 }\n')
    status, out, err = produce(b, "sr-err-p", [{"value": {}}], "--value-format", "protobuf", "--value-schema",
                               str(bad_proto), "--schema-registry", schema_registry, tmp_path=tmp_path)
    assert (status, out, err.count("\n")) == (1, "", 1) and err.startswith("kproto: error: "), err
    create_topic(b, "sr-err-s")
    assert produce(b, "sr-err-s", [{"value": {}}], "--value-format", "avro", "--schema-registry", schema_registry,
                   tmp_path=tmp_path) == (
        1, "", "kproto: error: subject sr-err-s-value not found in the Schema Registry "
               "(give a schema file to register one)\n")
    assert run_command("consume", b, "--topic", "sr-err", "--value-format", "avro") == (
        2, "", "--key-format/--value-format avro|protobuf|json-schema need --schema-registry URL\n")
