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
    from kproto import schemas
    from kproto.schemas import consumer_offsets as CO
    from kproto.errors import CorruptRecordError
    from kproto.schemas.internal_records import key_version
    for batch in batches:
        out = {f.name: [] for f in COMMITS}
        keys, values, offsets = (batch.column(n).to_pylist() for n in ("key", "value", "offset"))
        for key, value, log_offset in zip(keys, values, offsets):
            version = None if key is None else key_version(key)
            if version is None and key is not None:
                raise CorruptRecordError(f"__consumer_offsets key of {len(key)} bytes at offset {log_offset}",
                                         path="key.version")
            if version not in (0, 1):       # 0, 1: an offset commit's key; 2+ group and KIP-848 records
                continue
            k = schemas.parse(CO.RecordKey, key).data
            v = schemas.parse(CO.OffsetCommitValue, value).data if value is not None else None
            for name, x in (("group", k.group), ("topic", k.topic), ("partition", k.partition),
                            ("committed_offset", v and v.offset),
                            ("leader_epoch", v and v.get("leader_epoch", -1)),
                            ("metadata", v and v.metadata), ("commit_timestamp", v and v.commit_timestamp),
                            ("tombstone", v is None), ("log_offset", log_offset)):
                out[name].append(x)
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
