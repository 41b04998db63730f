"""The kafka-log source's columns, in Spark and Arrow terms.

Spark's own Kafka source comes first, in its order and types
(``KafkaRecordToRowConverter``: key, value, topic, partition, offset,
timestamp, timestampType, then headers), then what only a log file knows:
the batch each record came from and where it sits in which segment, and
``error`` (null unless the row stands for bytes that held no valid batch).

Arrow types are what ``pyspark.sql.pandas.types.to_arrow_schema`` makes of
the Spark types (the Python data source rejects any other): ``binary`` not
``large_binary``, ``timestamp[us, UTC]``, every field nullable.
"""

from __future__ import annotations

import pyarrow as pa

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])

# name, Spark SQL type, Arrow type
COLUMNS: list[tuple[str, str, pa.DataType]] = [
    ("key", "BINARY", pa.binary()),
    ("value", "BINARY", pa.binary()),
    ("topic", "STRING", pa.string()),
    ("partition", "INT", pa.int32()),
    ("offset", "BIGINT", pa.int64()),
    ("timestamp", "TIMESTAMP", pa.timestamp("us", tz="UTC")),
    ("timestampType", "INT", pa.int32()),
    ("headers", "ARRAY<STRUCT<key: STRING, value: BINARY>>", pa.list_(pa.field("element", HEADER))),
    ("base_offset", "BIGINT", pa.int64()),
    ("magic", "INT", pa.int32()),
    ("compression", "STRING", pa.string()),
    ("producer_id", "BIGINT", pa.int64()),
    ("producer_epoch", "INT", pa.int32()),
    ("base_sequence", "INT", pa.int32()),
    ("is_transactional", "BOOLEAN", pa.bool_()),
    ("is_control", "BOOLEAN", pa.bool_()),
    ("crc_valid", "BOOLEAN", pa.bool_()),
    ("segment", "STRING", pa.string()),
    ("position", "BIGINT", pa.int64()),
    ("error", "STRING", pa.string()),
]

NAMES = [c[0] for c in COLUMNS]
ARROW_TYPES = {name: t for name, _, t in COLUMNS}
DDL = ", ".join(f"`{name}` {sql}" for name, sql, _ in COLUMNS)

# Columns whose values need the records decoded (and decompressed).
RECORD_COLUMNS = frozenset({"key", "value", "timestamp", "headers"})
# Columns of Spark's Kafka source (what df.write.format("kafka-log") reads back).
KAFKA_SOURCE = NAMES[:8]


def arrow_schema(names: list[str]) -> pa.Schema:
    unknown = [n for n in names if n not in ARROW_TYPES]
    if unknown:
        from kproto.errors import UsageError
        raise UsageError(f"kafka-log has no column {unknown[0]!r}; its columns: {', '.join(NAMES)}")
    return pa.schema([pa.field(n, ARROW_TYPES[n]) for n in names])


def ddl(names: list[str]) -> str:
    sql = {name: s for name, s, _ in COLUMNS}
    arrow_schema(names)
    return ", ".join(f"`{n}` {sql[n]}" for n in names)
