"""Schema Registry formats for ``kproto consume`` and ``kproto produce``:
``--key-format/--value-format avro|protobuf|json-schema`` with ``--schema-registry URL``.

Confluent's wire format (AbstractKafkaSchemaSerDe): magic byte 0, the schema id as a 4-byte
big-endian int, then the payload; Protobuf's payload starts with the message indexes
(KafkaProtobufSerializer / MessageIndexes.toByteArray): a zig-zag varint count and that many
zig-zag varint indexes, the first message of the file ``[0]`` written as the single byte 0.

Values become JSON for printing and are read from JSON for producing:

- Avro (fastavro): records and maps are objects, unions the bare value (no type wrapper),
  ``bytes``/``fixed`` as kproto's JSON bytes (text when valid UTF-8, else ``{"base64": ...}``),
  ``decimal`` an exact decimal string ("12.34"; numbers are accepted when producing),
  ``timestamp-*`` ISO 8601 (``2024-05-06T07:08:09.123000+00:00``; ``local-timestamp-*``
  without zone), ``date``/``time-*`` ISO 8601, ``uuid`` its text.
- Protobuf: protobuf's own JSON mapping (json_format) with the .proto field names and every
  field printed (int64 as strings, bytes base64, enums by name).
- JSON Schema: the JSON document itself, validated against its schema both ways.

The optional dependencies are the ``schema-registry`` extra (fastavro, jsonschema, protobuf,
grpcio-tools for compiling .proto text offline)."""

from __future__ import annotations

import base64
import io
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from kproto.errors import KprotoError

FORMATS = ("raw", "avro", "protobuf", "json-schema")
#: the registry's schemaType per format (Confluent omits it for Avro)
SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}
MAGIC = 0
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaError(KprotoError):
    """A registry, schema or record problem: the message is the one line users see."""


# --- the registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegisteredSchema:
    id: int
    schema_type: str
    schema: str


class RegistryClient:
    """The parts of Confluent's REST API the formats need; schemas cached by id."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url, self.timeout = url.rstrip("/"), timeout
        self.by_id: dict[int, RegisteredSchema] = {}

    def _call(self, path: str, body: dict | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data,
                                     headers={"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                answer = json.loads(r.read())
            if not isinstance(answer, dict):
                raise SchemaError(f"Schema Registry {self.url}{path}: the answer is not a JSON object")
            return r.status, answer
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read())
            except ValueError:
                return e.code, {"message": e.reason}
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise SchemaError(f"Schema Registry {self.url} unreachable: {reason}") from None
        except ValueError:
            raise SchemaError(f"Schema Registry {self.url}{path}: the answer is not JSON") from None

    def _schema(self, answer: dict, sid: Any, path: str) -> RegisteredSchema:
        """The answer's schema, checked: a registry that answers something else is named."""
        schema, schema_type = answer.get("schema"), answer.get("schemaType") or "AVRO"
        if type(sid) is not int or not isinstance(schema, str) or not isinstance(schema_type, str):
            raise SchemaError(f"Schema Registry {self.url}{path}: the answer has no schema id and schema")
        return RegisteredSchema(sid, schema_type, schema)

    def schema(self, sid: int) -> RegisteredSchema:
        if sid not in self.by_id:
            path = f"/schemas/ids/{sid}"
            status, answer = self._call(path)
            if status == 404:
                raise SchemaError(f"schema id {sid} not found in the Schema Registry")
            if status != 200:
                raise SchemaError(f"Schema Registry: schema id {sid}: {answer.get('message', status)}")
            self.by_id[sid] = self._schema(answer, sid, path)
        return self.by_id[sid]

    def register(self, subject: str, schema_type: str, schema: str) -> RegisteredSchema:
        body = {"schema": schema, **({"schemaType": schema_type} if schema_type != "AVRO" else {})}
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions"
        status, answer = self._call(path, body)
        if status != 200:
            raise SchemaError(f"Schema Registry refused the schema for subject {subject}: "
                              f"{answer.get('message', status)}")
        rs = self._schema({"schema": schema, "schemaType": schema_type}, answer.get("id"), path)
        return self.by_id.setdefault(rs.id, rs)

    def latest(self, subject: str) -> RegisteredSchema:
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest"
        status, answer = self._call(path)
        if status == 404:
            raise SchemaError(f"subject {subject} not found in the Schema Registry "
                              f"(give a schema file to register one)")
        if status != 200:
            raise SchemaError(f"Schema Registry: subject {subject}: {answer.get('message', status)}")
        rs = self._schema(answer, answer.get("id"), path)
        return self.by_id.setdefault(rs.id, rs)


# --- the wire format ----------------------------------------------------------------------------

def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        out.append(b | 0x80 if z else b)
        if not z:
            return bytes(out)


def _read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    z = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise SchemaError("truncated Protobuf message indexes")
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (z >> 1) ^ -(z & 1), pos


def message_indexes_bytes(indexes: list[int]) -> bytes:
    """MessageIndexes.toByteArray: [0] is the single byte 0."""
    if indexes == [0]:
        return b"\x00"
    return _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)


def read_message_indexes(buf: bytes, pos: int) -> tuple[list[int], int]:
    count, pos = _read_zigzag(buf, pos)
    if count == 0:
        return [0], pos
    if not 0 < count <= 100:
        raise SchemaError(f"bad Protobuf message index count {count}")
    out = []
    for _ in range(count):
        i, pos = _read_zigzag(buf, pos)
        out.append(i)
    return out, pos


# --- Avro ---------------------------------------------------------------------------------------

_TIMESTAMPS = ("timestamp-millis", "timestamp-micros", "timestamp-nanos",
               "local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos")


def _avro_to_json(v):
    """fastavro's Python values -> JSON values (the mapping in the module docstring)."""
    import datetime
    import decimal
    import uuid
    from kproto.tools.console_format import bytes_to_json
    if isinstance(v, dict):
        return {k: _avro_to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_avro_to_json(x) for x in v]
    if isinstance(v, bytes):
        return bytes_to_json(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


class _NoMatch(ValueError):
    pass


def _avro_from_json(schema, v, named: dict):
    """A JSON value -> the Python value fastavro writes for ``schema`` (parsed); a union takes
    its first branch the value converts to."""
    import datetime
    import decimal
    from kproto.errors import UsageError
    from kproto.tools.console_format import json_to_bytes
    if isinstance(schema, list):
        for branch in schema:
            try:
                return _avro_from_json(branch, v, named)
            except (_NoMatch, UsageError, ValueError, TypeError):
                continue
        raise _NoMatch(f"{json.dumps(v)[:60]} matches no branch of the union")
    if isinstance(schema, str):
        if schema in named:
            return _avro_from_json(named[schema], v, named)
        schema = {"type": schema}
    t, logical = schema["type"], schema.get("logicalType")
    if isinstance(t, (dict, list)) or (isinstance(t, str) and t in named):
        return _avro_from_json(t, v, named)
    if logical == "decimal" and isinstance(v, (str, int, float)) and not isinstance(v, bool):
        try:
            return decimal.Decimal(str(v))
        except decimal.InvalidOperation:
            raise _NoMatch(f"{v!r} is not a decimal") from None
    if isinstance(v, str):
        if logical in _TIMESTAMPS:
            dt = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
            if logical.startswith("timestamp") and dt.tzinfo is None:
                dt = dt.replace(tzinfo=datetime.timezone.utc)
            return dt
        if logical == "date":
            return datetime.date.fromisoformat(v)
        if logical in ("time-millis", "time-micros"):
            return datetime.time.fromisoformat(v)
    checks = {"null": lambda x: x is None, "boolean": lambda x: isinstance(x, bool),
              "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
              "long": lambda x: isinstance(x, int) and not isinstance(x, bool),
              "float": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
              "double": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
              "string": lambda x: isinstance(x, str),
              "enum": lambda x: isinstance(x, str) and x in schema.get("symbols", ())}
    if t in checks:
        if not checks[t](v):
            raise _NoMatch(f"{json.dumps(v)[:60]} is not {t}")
        return v
    if t in ("bytes", "fixed"):
        if v is None:
            raise _NoMatch("null is not bytes")
        b = json_to_bytes(v, "value")
        if t == "fixed" and len(b) != schema["size"]:
            raise _NoMatch(f"fixed {schema.get('name')} takes {schema['size']} bytes, not {len(b)}")
        return b
    if t == "array":
        if not isinstance(v, list):
            raise _NoMatch(f"{json.dumps(v)[:60]} is not an array")
        return [_avro_from_json(schema["items"], x, named) for x in v]
    if t == "map":
        if not isinstance(v, dict):
            raise _NoMatch(f"{json.dumps(v)[:60]} is not a map")
        return {k: _avro_from_json(schema["values"], x, named) for k, x in v.items()}
    if t in ("record", "error"):
        if not isinstance(v, dict):
            raise _NoMatch(f"{json.dumps(v)[:60]} is not a record {schema.get('name')}")
        fields = {f["name"]: f for f in schema["fields"]}
        extra = set(v) - set(fields)
        if extra:
            raise _NoMatch(f"record {schema.get('name')} has no field {sorted(extra)[0]}")
        out = {}
        for name, f in fields.items():
            if name in v:
                out[name] = _avro_from_json(f["type"], v[name], named)
            elif "default" not in f:
                raise _NoMatch(f"record {schema.get('name')}: field {name} missing")
        return out
    raise _NoMatch(f"Avro type {t} is not supported")


class AvroFormat:
    def __init__(self, schema: str) -> None:
        import fastavro
        from fastavro.schema import SchemaParseException, UnknownType
        try:
            self.named: dict = {}
            self.schema = fastavro.parse_schema(json.loads(schema), named_schemas=self.named)
        except (SchemaParseException, UnknownType, ValueError, TypeError, KeyError, AttributeError) as e:
            raise SchemaError(f"bad Avro schema: {str(e).splitlines()[0][:200]}") from None

    def decode(self, payload: bytes):
        import fastavro
        try:
            return _avro_to_json(fastavro.schemaless_reader(io.BytesIO(payload), self.schema, None))
        except (EOFError, ValueError, IndexError, TypeError, UnicodeDecodeError) as e:
            raise SchemaError(f"not Avro of its schema: {type(e).__name__}: {e}") from None

    def encode(self, value) -> bytes:
        import fastavro
        try:
            datum = _avro_from_json(self.schema, value, self.named)
            out = io.BytesIO()
            fastavro.schemaless_writer(out, self.schema, datum, strict=True)
        except (ValueError, TypeError, KeyError) as e:
            raise SchemaError(f"does not match its Avro schema: {e}") from None
        return out.getvalue()


# --- JSON Schema --------------------------------------------------------------------------------

class JsonSchemaFormat:
    def __init__(self, schema: str) -> None:
        import jsonschema
        try:
            doc = json.loads(schema)
            cls = jsonschema.validators.validator_for(doc)
            cls.check_schema(doc)
        except (ValueError, jsonschema.SchemaError) as e:
            raise SchemaError(f"bad JSON Schema: {str(e).splitlines()[0]}") from None
        self.validator = cls(doc)

    def _valid(self, value):
        err = next(iter(self.validator.iter_errors(value)), None)
        if err is not None:
            where = "/".join(map(str, err.absolute_path))
            raise SchemaError(f"does not match its JSON Schema{' at ' + where if where else ''}: {err.message}")
        return value

    def decode(self, payload: bytes):
        try:
            return self._valid(json.loads(payload))
        except (ValueError, UnicodeDecodeError) as e:
            raise SchemaError(f"not JSON: {e}") from None

    def encode(self, value) -> bytes:
        from kproto.tools.console_format import json_text
        return json_text(self._valid(value))


# --- Protobuf -----------------------------------------------------------------------------------

def _file_descriptor_proto(schema: str):
    """The registry's Protobuf schema -> a FileDescriptorProto: a base64 FileDescriptorProto (what
    confluent-kafka-python registers) or .proto text, compiled by protoc (grpcio-tools) offline."""
    import binascii
    import os
    import tempfile
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(schema, validate=True))
        if fdp.message_type:
            return fdp, ()
    except (binascii.Error, ValueError, DecodeError):
        pass        # not base64, or not a descriptor: .proto text
    import importlib.util
    import subprocess
    import sys
    spec = importlib.util.find_spec("grpc_tools")
    if spec is None:
        raise SchemaError("compiling .proto text needs grpcio-tools (pip install 'kproto[schema-registry]')")
    include = os.path.join(os.path.dirname(spec.origin), "_proto")     # protobuf's well-known types
    with tempfile.TemporaryDirectory(prefix="kproto-proto-") as d:
        src, out = os.path.join(d, "schema.proto"), os.path.join(d, "schema.desc")
        with open(src, "w") as f:
            f.write(schema)
        # a child: protoc writes its complaints to fd 2, here taken to make one line of
        proc = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"-I{include}",
                               "--include_imports", f"--descriptor_set_out={out}", src],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not os.path.exists(out):
            # the first complaint about the file (protoc's "file:line:column: ..."), past its warnings
            lines = proc.stderr.strip().splitlines()
            first = ([line for line in lines if line.startswith(src + ":")] or lines or ["protoc failed"])[0]
            first = first.replace(src, "schema.proto")
            raise SchemaError(f"the .proto schema does not compile: {first}")
        with open(out, "rb") as f:
            fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    return fds.file[-1], tuple(fds.file[:-1])


def _well_known(name: str):
    """google/protobuf/timestamp.proto and its kind, from protobuf's runtime."""
    import importlib
    from google.protobuf import descriptor_pb2, descriptor_pool
    try:
        if not name.startswith("google/protobuf/"):
            raise ImportError(name)
        importlib.import_module("google.protobuf." + name.removeprefix("google/protobuf/")[:-len(".proto")] + "_pb2")
        d = descriptor_pb2.FileDescriptorProto()
        descriptor_pool.Default().FindFileByName(name).CopyToProto(d)
        return d
    except (ImportError, KeyError):
        raise SchemaError(f"the Protobuf schema imports {name}: schema references are not supported") from None


class ProtobufFormat:
    def __init__(self, schema: str) -> None:
        from google.protobuf import descriptor_pool
        fdp, deps = _file_descriptor_proto(schema)
        pool = descriptor_pool.DescriptorPool()
        known = {d.name for d in deps}
        for name in fdp.dependency:    # what a base64 descriptor imports: protobuf's well-known types only
            if name not in known:
                deps += (_well_known(name),)
        try:
            for d in (*deps, fdp):
                pool.AddSerializedFile(d.SerializeToString())
            self.file = pool.FindFileByName(fdp.name)
        except (TypeError, KeyError) as e:
            raise SchemaError(f"bad Protobuf schema: {e}") from None
        self.classes: dict[tuple[int, ...], type] = {}

    def message_class(self, indexes: list[int]):
        key = tuple(indexes)
        if key not in self.classes:
            from google.protobuf import message_factory
            try:
                desc = list(self.file.message_types_by_name.values())[indexes[0]]
                for i in indexes[1:]:
                    desc = desc.nested_types[i]
            except IndexError:
                raise SchemaError(f"message indexes {indexes} name no message of the schema") from None
            self.classes[key] = message_factory.GetMessageClass(desc)
        return self.classes[key]

    def decode_indexed(self, indexes: list[int], payload: bytes):
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
        try:
            msg = self.message_class(indexes).FromString(payload)
        except DecodeError as e:
            raise SchemaError(f"not Protobuf of its schema: {e}") from None
        return json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True)

    def encode(self, value) -> bytes:
        from google.protobuf import json_format
        try:
            return json_format.ParseDict(value, self.message_class([0])()).SerializeToString()
        except (json_format.ParseError, TypeError, AttributeError) as e:
            raise SchemaError(f"does not match its Protobuf schema: {e}") from None


_CLASSES = {"avro": AvroFormat, "protobuf": ProtobufFormat, "json-schema": JsonSchemaFormat}


# --- serde --------------------------------------------------------------------------------------

class Serde:
    """One side (key or value) of a topic in a registry format."""

    def __init__(self, fmt: str, registry: RegistryClient, what: str) -> None:
        self.fmt, self.registry, self.what = fmt, registry, what
        self.formats: dict[int, Any] = {}
        self.writer: tuple[int, Any] | None = None

    def _format(self, rs: RegisteredSchema):
        if rs.id not in self.formats:
            if rs.schema_type != SCHEMA_TYPES[self.fmt]:
                raise SchemaError(f"schema id {rs.id} is {rs.schema_type}, not {SCHEMA_TYPES[self.fmt]} "
                                  f"(--{self.what}-format {self.fmt})")
            self.formats[rs.id] = self._parse(rs.schema)
        return self.formats[rs.id]

    def _parse(self, schema: str):
        try:
            return _CLASSES[self.fmt](schema)
        except ImportError as e:
            raise SchemaError(f"--{self.what}-format {self.fmt} needs {e.name}: "
                              "pip install 'kproto[schema-registry]'") from None

    def deserialize(self, data: bytes):
        if len(data) < 5 or data[0] != MAGIC:
            raise SchemaError("not in Confluent's wire format (no magic byte 0 and schema id)")
        sid = int.from_bytes(data[1:5], "big")
        f = self._format(self.registry.schema(sid))
        if self.fmt == "protobuf":
            indexes, pos = read_message_indexes(data, 5)
            return f.decode_indexed(indexes, data[pos:])
        return f.decode(data[5:])

    def use_schema(self, subject: str, schema_file: str | None) -> None:
        """The schema produce writes with: ``schema_file``'s, checked here then registered
        under ``subject`` (TopicNameStrategy), else the subject's latest version."""
        if schema_file is None:
            rs = self.registry.latest(subject)
            self.writer = rs.id, self._format(rs)
            return
        try:
            with open(schema_file, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError as e:
            raise SchemaError(f"{schema_file} @ byte {e.start}: not UTF-8 text") from None
        except OSError as e:
            raise SchemaError(f"{schema_file}: {e.strerror}") from None
        try:
            parsed = self._parse(text)
        except SchemaError as e:
            raise SchemaError(f"{schema_file}: {e}") from None
        rs = self.registry.register(subject, SCHEMA_TYPES[self.fmt], text)
        self.formats.setdefault(rs.id, parsed)
        self.writer = rs.id, self._format(rs)

    def serialize(self, value) -> bytes:
        sid, f = self.writer
        head = bytes([MAGIC]) + sid.to_bytes(4, "big")
        if self.fmt == "protobuf":
            head += message_indexes_bytes([0])
        return head + f.encode(value)


def decoding_formatter(inner, as_json: bool, key: Serde | None, value: Serde | None):
    """``consume``'s formatter over decoded keys/values: JSON objects under ``--json``, their JSON
    text for the other formatters (nulls stay null)."""
    import dataclasses
    from kproto.tools.console_format import json_text, record_json

    def decode(serde, data, topic, partition, offset, what):
        if serde is None or data is None:
            return data
        try:
            return serde.deserialize(data)
        except SchemaError as e:
            raise SchemaError(f"{topic}-{partition} offset {offset}: {what}: {e}") from None

    def fmt(topic, partition, cr, state) -> bytes:
        r = cr.record
        k = decode(key, r.key, topic, partition, r.offset, "key")
        v = decode(value, r.value, topic, partition, r.offset, "value")
        if as_json:
            obj = record_json(topic, partition, cr)
            if key is not None:
                obj["key"] = k
            if value is not None:
                obj["value"] = v
            return json_text(obj) + b"\n"
        if key is not None and k is not None:
            k = json_text(k)
        if value is not None and v is not None:
            v = json_text(v)
        return inner(topic, partition, cr._replace(record=dataclasses.replace(r, key=k, value=v)), state)

    return fmt


def encoder(serde: Serde | None):
    """``produce``'s JSON key or value -> its bytes (None: raw); null stays null."""
    if serde is None:
        return None

    def encode(v, where: str):
        if v is None:
            return None
        try:
            return serde.serialize(v)
        except SchemaError as e:
            raise SchemaError(f"{where}: {e}") from None
    return encode


def serdes(registry_url: str | None, key_format: str, value_format: str,
           problem: Callable[[str], Exception]) -> tuple[Serde | None, Serde | None]:
    """The key and value serdes the flags ask for (None: raw bytes)."""
    if key_format == "raw" and value_format == "raw":
        if registry_url is not None:
            raise problem("--schema-registry needs --key-format or --value-format")
        return None, None
    if registry_url is None:
        raise problem("--key-format/--value-format avro|protobuf|json-schema need --schema-registry URL")
    try:
        url = urllib.parse.urlsplit(registry_url)
        fine = url.scheme in ("http", "https") and bool(url.hostname) and url.port != 0
    except ValueError:          # "http://[::1": a bracket left open, a port that is no number
        fine = False
    if not fine:
        raise problem(f"--schema-registry {registry_url}: not an http:// or https:// URL")
    registry = RegistryClient(registry_url)
    return (None if key_format == "raw" else Serde(key_format, registry, "key"),
            None if value_format == "raw" else Serde(value_format, registry, "value"))
