"""The PySpark data sources (Python Data Source API, PySpark 4.1+).

Thin: options and planning are kproto.spark.plan, decoding
kproto.spark.reader, writing kproto.spark.write. Spark pickles these classes
by reference, so kproto must be importable where the tasks run (see
``kproto.spark.session`` for a cluster).
"""

from __future__ import annotations

import json
from typing import Iterator

from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
    InputPartition, LessThan, LessThanOrEqual, StringStartsWith, WriterCommitMessage,
)
from pyspark.sql.types import StructType

from kproto.errors import UsageError
from kproto.spark import columns as C
from kproto.spark.plan import Bounds, parse_options, plan_splits
from kproto.spark.reader import read_split
from kproto.spark.write import Staged, abort, commit, stage, write_options


class SplitPartition(InputPartition):
    """One kproto.spark.reader.Split (plain data, pickled to the task)."""


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log").load(path)`` and ``df.write.format("kafka-log").save(dir)``."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> str:
        """All columns, or those of the ``columns`` option (the others are
        then never computed: Python data sources get no column pruning)."""
        picked = self.options.get("columns")
        if picked:
            return C.ddl([c.strip() for c in picked.split(",") if c.strip()])
        return C.DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaLogReader(dict(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> "KafkaLogWriter":
        return KafkaLogWriter(dict(self.options), overwrite)


def _check_schema(schema: StructType) -> list[str]:
    """A schema the user gave (``.schema(...)``, to read fewer columns) must
    name kafka-log columns with their types."""
    from pyspark.sql.pandas.types import to_arrow_schema
    names = schema.fieldNames()
    mine = C.arrow_schema(names)
    given = to_arrow_schema(schema, timezone="UTC")
    for f in given:
        if not f.type.equals(mine.field(f.name).type):
            raise UsageError(f"kafka-log column {f.name} is {C.ddl([f.name]).split(' ', 1)[1]}, "
                             f"not {schema[f.name].dataType.simpleString()}")
    return names


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict, schema: StructType) -> None:
        self.plan = parse_options(options, _check_schema(schema))

    def pushFilters(self, filters):
        """Offset, partition and topic filters narrow what is planned and read;
        every filter is still handed back, so Spark re-checks each row."""
        b = self.plan.bounds
        for f in filters:
            _narrow(b, f)
            yield f

    def partitions(self) -> list[InputPartition]:
        return [SplitPartition(s) for s in plan_splits(self.plan)]

    def read(self, partition: InputPartition) -> Iterator:
        if partition.value is None:
            return iter(())
        return read_split(partition.value, self.plan.options)


def _narrow(b: Bounds, f) -> None:
    col = f.attribute[0] if len(f.attribute) == 1 else None
    v = getattr(f, "value", None)
    if col == "offset" and isinstance(v, int) and not isinstance(v, bool):
        if isinstance(f, GreaterThan):
            b.narrow(lo=v + 1)
        elif isinstance(f, GreaterThanOrEqual):
            b.narrow(lo=v)
        elif isinstance(f, LessThan):
            b.narrow(hi=v)
        elif isinstance(f, LessThanOrEqual):
            b.narrow(hi=v + 1)
        elif isinstance(f, EqualTo):
            b.narrow(lo=v, hi=v + 1)
        elif isinstance(f, In) and all(isinstance(x, int) for x in v):
            b.narrow(lo=min(v), hi=max(v) + 1)
    elif col == "partition":
        if isinstance(f, EqualTo) and isinstance(v, int):
            b.keep_partitions([v])
        elif isinstance(f, In):
            b.keep_partitions(v)
    elif col == "topic":
        if isinstance(f, EqualTo) and isinstance(v, str):
            b.keep_topics([v])
        elif isinstance(f, In):
            b.keep_topics(v)
        elif isinstance(f, StringStartsWith):
            b.topic_prefix = v


class StagedFiles(WriterCommitMessage):
    def __init__(self, staged: list[Staged]) -> None:
        self.staged = staged


class KafkaLogWriter(DataSourceArrowWriter):
    def __init__(self, options: dict, overwrite: bool) -> None:
        self.opts = write_options(options, options.get("path"))
        self.overwrite = overwrite

    def write(self, iterator) -> StagedFiles:
        from pyspark import TaskContext
        ctx = TaskContext.get()
        task = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}" if ctx else "0"
        return StagedFiles(stage(iterator, self.opts, task))

    def commit(self, messages) -> None:
        staged = [s for m in messages if m is not None for s in m.staged]
        commit(staged, self.opts, self.overwrite)

    def abort(self, messages) -> None:
        abort(self.opts)


class KafkaPcapDataSource(DataSource):
    """``spark.read.format("kafka-pcap").load(path)``: one row per exchange."""

    @classmethod
    def name(cls) -> str:
        return "kafka-pcap"

    def schema(self) -> str:
        from kproto.spark.pcap import DDL
        return DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaPcapReader(dict(self.options))


class KafkaPcapReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        from kproto.spark.pcap import parse_ports
        paths = json.loads(options["paths"]) if options.get("paths") else []
        if options.get("path"):
            paths.append(options["path"])
        if not paths:
            raise UsageError("kafka-pcap needs a path: spark.read.format('kafka-pcap').load(PATH)")
        self.paths, self.ports = paths, parse_ports(options.get("ports"))

    def partitions(self) -> list[InputPartition]:
        from kproto.spark.pcap import CaptureFile, find_captures
        return [InputPartition(CaptureFile(uri, self.ports)) for p in self.paths for uri in find_captures(p)]

    def read(self, partition: InputPartition) -> Iterator:
        from kproto.spark.pcap import read_capture
        if partition.value is None:
            return iter(())
        return read_capture(partition.value)
