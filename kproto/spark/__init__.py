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

Python workers (tasks, the data sources' readers and writers) run the
driver's interpreter unless ``PYSPARK_PYTHON`` or ``spark.pyspark.python``
names another: otherwise PySpark starts ``python3`` from PATH, which lacks
kproto and pyarrow when the job was started as ``.venv/bin/python job.py``
without activating the venv. Importing this package before the session
starts sets ``PYSPARK_PYTHON`` (when unset); ``register`` sets the started
session's interpreter the same way.
"""

from __future__ import annotations

import os
import sys

# whether the user chose the workers' interpreter, before this import chose one
_CHOSEN = "PYSPARK_PYTHON" in os.environ
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def worker_python(spark) -> None:
    """Python workers of ``spark`` run this interpreter, unless the user named
    one (``PYSPARK_PYTHON``, ``spark.pyspark.python``). A SparkContext reads
    ``PYSPARK_PYTHON`` once, when it starts, into ``pythonExec`` (PySpark's
    default ``python3``); each Python function or data source takes it from
    there when it is made."""
    sc = spark.sparkContext
    if not _CHOSEN and sc.getConf().get("spark.pyspark.python") is None:
        sc.pythonExec = sys.executable


def register(spark) -> None:
    """Register kproto's data sources on ``spark`` (``kafka-log``,
    ``kafka-pcap``), their workers on this interpreter (``worker_python``).
    Also turns on Python filter pushdown, which the offset/topic pruning uses."""
    from kproto.spark.source import KafkaLogDataSource, KafkaPcapDataSource
    worker_python(spark)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaPcapDataSource)


__all__ = ["register", "worker_python"]
