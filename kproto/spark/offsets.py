"""``__consumer_offsets`` on Spark: the latest committed offset per
group/topic/partition, as the group coordinator would load it.

Records are read committed (aborted TxnOffsetCommits never count), their
keys and values decoded by the coordinator's own codecs
(kproto.server.coordinator.persistence), and per group/topic/partition the
record at the highest log offset wins; a tombstone (null value) there means
no committed offset. A group lives in one ``__consumer_offsets`` partition,
so "highest offset" is the coordinator's "last write wins".
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from kproto.common import GROUP_METADATA_TOPIC_NAME


COMMITS = pa.schema([
    pa.field("group", pa.string()), pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
    pa.field("committed_offset", pa.int64()), pa.field("leader_epoch", pa.int32()),
    pa.field("metadata", pa.string()), pa.field("commit_timestamp", pa.int64()),
    pa.field("tombstone", pa.bool_()), pa.field("log_offset", pa.int64()),
])
COMMITS_DDL = ("`group` STRING, topic STRING, partition INT, committed_offset BIGINT, leader_epoch INT, "
               "metadata STRING, commit_timestamp BIGINT, tombstone BOOLEAN, log_offset BIGINT")


def parse_commits(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(key, value, offset) rows -> one row per offset commit or tombstone;
    group metadata and record types the classic coordinator does not own are
    left out."""
    from kproto.server.coordinator.persistence import OffsetKey, parse_key, parse_offset_value
    for batch in batches:
        out = {f.name: [] for f in COMMITS}
        keys, values, offsets = (batch.column(n).to_pylist() for n in ("key", "value", "offset"))
        for key, value, log_offset in zip(keys, values, offsets):
            parsed = parse_key(key) if key is not None else None
            if not isinstance(parsed, OffsetKey):
                continue
            o = parse_offset_value(value) if value is not None else None
            for name, v in (("group", parsed.group), ("topic", parsed.topic), ("partition", parsed.partition),
                            ("committed_offset", o and o.committed_offset),
                            ("leader_epoch", o and o.committed_leader_epoch),
                            ("metadata", o and o.metadata), ("commit_timestamp", o and o.commit_timestamp_ms),
                            ("tombstone", o is None), ("log_offset", log_offset)):
                out[name].append(v)
        yield pa.RecordBatch.from_pydict(out, schema=COMMITS)


def committed_offsets(spark, data_dir: str):
    """DataFrame: group, topic, partition, committed_offset, leader_epoch,
    metadata, commit_timestamp (the live commits only)."""
    from pyspark.sql import functions as F
    records = (spark.read.format("kafka-log").option("topics", GROUP_METADATA_TOPIC_NAME)
               .option("isolationLevel", "read_committed").option("columns", "key,value,offset")
               .load(data_dir))
    commits = records.mapInArrow(parse_commits, COMMITS_DDL)
    cols = ["committed_offset", "leader_epoch", "metadata", "commit_timestamp", "tombstone"]
    last = (commits.groupBy("group", "topic", "partition")
            .agg(F.max_by(F.struct(*cols), "log_offset").alias("last")))
    return (last.where(~F.col("last.tombstone"))
            .select("group", "topic", "partition", *[F.col(f"last.{c}").alias(c) for c in cols[:-1]])
            .orderBy("group", "topic", "partition"))
