"""kproto's own decoder in the corpus's answer form: the reference a conformance run checks.

    python -m kproto.conformance.decode KIND FILE [API_KEY API_VERSION]

prints the JSON a correct decoder prints for FILE (see ``kproto.conformance``),
so ``kproto conformance run --decoder "python -m kproto.conformance.decode
{kind} {file} {api_key} {api_version}"`` runs kproto through the same door as
any other decoder. It imports only the codecs (no click, no broker), because a
run starts it once per fixture.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

from kproto.conformance import HEADER_FIELDS, to_json


def decode_records(data: bytes) -> dict:
    """Every record of every batch, in order; magic 0 has no timestamp (null)."""
    from kproto.records import iter_batches
    out = []
    for batch in iter_batches(data):
        for r in batch.records():
            ts = None if batch.magic == 0 else r.timestamp
            out.append({"offset": r.offset, "timestamp": ts, "key": to_json(r.key),
                        "value": to_json(r.value), "headers": [[k, to_json(v)] for k, v in r.headers]})
    return {"records": out}


def decode_frame(frame: bytes, kind: str, api_key: int, api_version: int) -> dict:
    """Header and body of one frame, with only the fields its version has."""
    header, body, _ = _decoded(frame, kind, api_key, api_version)
    return {"header": {k: to_json(header[k]) for k in HEADER_FIELDS[kind]}, "body": to_json(body)}


def _decoded(frame: bytes, kind: str, api_key: int, api_version: int):
    """(header, body with only its version's fields, body schema) of one frame."""
    from kproto import protocol as P
    from kproto.schemas.message import present_only
    spec = P.api(api_key)
    if kind == "request":
        header, body = P.decode_request(frame, allow_trailing=True)   # as Kafka's readers
        schema = spec.request_schema
    else:
        header, body = P.decode_response(api_key, api_version, frame)
        schema = spec.response_schema
    return header, present_only(schema, api_version, body), schema


def decode_frame_as_kafka(frame: bytes, kind: str, api_key: int, api_version: int) -> dict:
    """kproto's decoding of one frame in the form Kafka's generated classes print it:
    header and body through ``kafka_json`` (camelCase names, UUIDs as Uuid.toString(),
    tagged fields at their default left out, records as ``recordsSizeInBytes``), bytes
    as Jackson's base64. tests/java/KprotoClient.java ``decode`` prints Kafka's side:
    ``<Header>DataJsonConverter.write`` and ``<Message>JsonConverter.write(data, version, false)``."""
    from kproto.schemas.internal_records import camel, kafka_json
    header, body, schema = _decoded(frame, kind, api_key, api_version)
    answer = {"header": {camel(k): header[k] for k in HEADER_FIELDS[kind]},
              "body": kafka_json(body, schema, api_version)}
    return json.loads(json.dumps(answer, ensure_ascii=False, default=_base64))


def _base64(value) -> str:
    """Jackson's BinaryNode: standard base64, padded."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def decode(kind: str, data: bytes, api_key: int | None = None, api_version: int | None = None) -> dict:
    if kind == "records":
        return decode_records(data)
    if api_key is None or api_version is None:
        raise ValueError(f"a {kind} frame needs its API key and version")
    return decode_frame(data, kind, api_key, api_version)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4) or argv[0] not in ("records", "request", "response"):
        print("usage: python -m kproto.conformance.decode records|request|response FILE "
              "[API_KEY API_VERSION]", file=sys.stderr)
        return 2
    key, version = (int(argv[2]), int(argv[3])) if len(argv) == 4 and argv[0] != "records" else (None, None)
    try:
        answer = decode(argv[0], Path(argv[1]).read_bytes(), key, version)
    except Exception as e:   # one line for the runner to show, never a traceback
        print(f"{argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    json.dump(answer, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
