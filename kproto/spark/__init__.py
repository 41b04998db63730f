"""kproto on Spark: Kafka log directories as DataFrames, and back.

    register(spark)   the ``kafka-log`` source and sink, the ``kafka-pcap`` source, on a session
    session           a SparkSession set up for kproto (loopback, quiet, executors that import kproto)
    columns           the columns: Spark's Kafka source's, then headers, batch metadata, ``error``
    segments          segment files found, split at .index positions, walked with resynchronisation
    plan              options, offset/timestamp bounds, read_committed, the input splits (driver)
    reader            one split -> Arrow record batches (task)
    write             rows -> staged batches (tasks) -> segments through kproto.log (driver)
    pcap              the kafka-pcap source's rows: kproto.capture exchanges as kproto decode --json has them
    offsets           __consumer_offsets -> the latest committed offset per group/topic/partition
    source            the PySpark DataSource classes

Importing this package needs neither pyspark nor pyarrow; the modules do
(``pip install 'kproto[spark]'``).
"""

from __future__ import annotations


def register(spark) -> None:
    """Register kproto's data sources on ``spark`` (``kafka-log``,
    ``kafka-pcap``). Also turns on Python filter pushdown, which the
    offset/topic pruning uses."""
    from kproto.spark.source import KafkaLogDataSource, KafkaPcapDataSource
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaPcapDataSource)


__all__ = ["register"]
