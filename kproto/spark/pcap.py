"""The ``kafka-pcap`` source: one row per request/response exchange in
packet captures, with the fields of ``kproto decode --json``
(``kproto.capture.Exchange.to_json``); the decoded bodies are JSON strings.

One input partition per capture file (a capture is read front to back: TCP
reassembly and request/response pairing need the whole stream). Paths: a
file, a directory of ``*.pcap``/``*.pcapng``/``*.cap`` files (gzipped too), local or any
URI pyarrow.fs opens. Option ``ports``: the Kafka ports (comma-separated),
default kproto decode's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from kproto.errors import UsageError

COLUMNS: list[tuple[str, str, pa.DataType]] = [
    ("ts", "TIMESTAMP", pa.timestamp("us", tz="UTC")),
    ("connection", "STRING", pa.string()),
    ("api_key", "INT", pa.int32()),
    ("api_name", "STRING", pa.string()),
    ("api_version", "INT", pa.int32()),
    ("correlation_id", "INT", pa.int32()),
    ("client_id", "STRING", pa.string()),
    ("latency_ms", "DOUBLE", pa.float64()),
    ("error_codes", "ARRAY<INT>", pa.list_(pa.field("element", pa.int32()))),
    ("request", "STRING", pa.string()),
    ("response", "STRING", pa.string()),
    ("warnings", "ARRAY<STRING>", pa.list_(pa.field("element", pa.string()))),
    ("request_size", "INT", pa.int32()),
    ("response_size", "INT", pa.int32()),
    ("capture", "STRING", pa.string()),
]
DDL = ", ".join(f"`{n}` {sql}" for n, sql, _ in COLUMNS)
SCHEMA = pa.schema([pa.field(n, t) for n, _, t in COLUMNS])
SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")
BATCH_ROWS = 4096


@dataclass(frozen=True, slots=True)
class CaptureFile:
    uri: str
    ports: tuple[int, ...] | None


def find_captures(uri: str) -> list[str]:
    from pyarrow import fs as pafs
    from kproto.spark.segments import _uri_prefix, filesystem
    fs, root = filesystem(uri)
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise UsageError(f"{uri}: no such file or directory")
    prefix = _uri_prefix(uri, root)
    if info.type == pafs.FileType.File:
        return [prefix + info.path]
    return sorted(prefix + f.path for f in fs.get_file_info(pafs.FileSelector(root, recursive=True))
                  if f.type == pafs.FileType.File and f.base_name.endswith(SUFFIXES))


def parse_ports(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise UsageError(f"option ports: expected comma-separated port numbers, not {text!r}") from None


def read_capture(part: CaptureFile) -> Iterator[pa.RecordBatch]:
    from kproto.capture import exchanges
    from kproto.capture.body import json_default
    from kproto.spark.segments import filesystem
    fs, path = filesystem(part.uri)
    cols: dict[str, list] = {n: [] for n, _, _ in COLUMNS}

    def flush() -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(cols, schema=SCHEMA)
        for v in cols.values():
            v.clear()
        return batch

    with fs.open_input_file(path) as f:
        kw = {} if part.ports is None else {"ports": part.ports}
        for x in exchanges(f, **kw):
            j = x.to_json()
            for name in ("connection", "api_key", "api_name", "api_version", "correlation_id", "client_id",
                         "latency_ms", "warnings"):
                cols[name].append(j[name])
            cols["ts"].append(x.ts_ns // 1000)
            cols["error_codes"].append(x.error_codes())
            for side in ("request", "response"):
                body = j[side]
                cols[side].append(None if body is None else json.dumps(body, default=json_default))
            cols["request_size"].append(x.request_size)
            cols["response_size"].append(x.response_size)
            cols["capture"].append(part.uri)
            if len(cols["ts"]) >= BATCH_ROWS:
                yield flush()
    if cols["ts"]:
        yield flush()
