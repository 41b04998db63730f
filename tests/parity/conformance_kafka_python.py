"""kafka-python 3.0.12's decoders behind the ``kproto conformance run`` contract.

    kproto conformance run --decoder "python tests/parity/conformance_kafka_python.py {kind} {file} {api_key} {api_version}"

The adapter a codec author would write, for a decoder kproto did not write:
records through ``kafka.record.MemoryRecords``; frames through the message
classes kafka-python generates from Kafka's own message JSON
(``kafka.protocol``), header included. It renames nothing: it converts bytes to
hex and fills absent tagged structs with their defaults (see ``plain``), so agreement with the corpus is kafka-python's, not kproto's.
"""

from __future__ import annotations

import importlib
import json
from importlib.metadata import version
import pkgutil
import sys
import uuid


def hexed(b):
    return None if b is None else bytes(b).hex()


def records(data: bytes) -> dict:
    from kafka.record.memory_records import MemoryRecords
    out, mr = [], MemoryRecords(data)
    while mr.has_next():
        batch = mr.next_batch()
        for r in batch:
            out.append({"offset": r.offset, "timestamp": r.timestamp, "key": hexed(r.key),
                        "value": hexed(r.value), "headers": [[k, hexed(v)] for k, v in r.headers]})
    return {"records": out}


def message_classes() -> dict:
    """(api_key, is_request) -> kafka-python's JSON-schema message class."""
    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage
    for m in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if not any(part in m.name for part in (".old", ".schemas", "generate_stubs")):
            importlib.import_module(m.name)
    found, todo = {}, list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls._class_version is None and getattr(cls, "_json", None):
            found[(cls.API_KEY, cls.is_request())] = cls
    return found


def defaults(struct_field, version: int) -> dict:
    """A struct with each of its fields at kafka-python's default for them."""
    return {f.name: defaults(f, version) if f.is_struct() else f.default
            for f in struct_field.fields.values() if f.for_version_q(version)}


def plain(value, version: int):
    """A kafka-python message as the corpus's JSON. Its one gap: kafka-python leaves a
    tagged struct that is not on the wire as None, where Kafka's rule (and the corpus)
    gives the field its default, the struct with every field at its default."""
    if hasattr(value, "_struct"):
        out = {}
        for field in value._struct._fields:
            if not field.for_version_q(version):
                continue
            v = getattr(value, field.name)
            if v is None and field.is_struct() and field.tagged_field_q(version) \
                    and not field.nullable_for_version_q(version):
                v = defaults(field, version)
            out[field.name] = plain(v, version)
        return out
    if isinstance(value, dict):
        return {k: plain(v, version) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, version) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def frame(kind: str, data: bytes, api_key: int, api_version: int) -> dict:
    cls = message_classes().get((api_key, kind == "request"))
    if cls is None:
        raise SystemExit(f"kafka-python {version('kafka-python')} has no class for API key {api_key}")
    msg = cls.decode(data, version=api_version, header=True)
    header = msg._header.to_dict(json=False)
    keep = ("request_api_key", "request_api_version", "correlation_id", "client_id") \
        if kind == "request" else ("correlation_id",)
    return {"header": {k: header[k] for k in keep}, "body": plain(msg, api_version)}


def main(argv: list[str]) -> int:
    kind, path = argv[0], argv[1]
    data = open(path, "rb").read()
    answer = records(data) if kind == "records" else frame(kind, data, int(argv[2]), int(argv[3]))
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
