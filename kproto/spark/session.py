"""A SparkSession set up the way kproto's jobs need it.

* Python: tasks and the data-source helpers run this interpreter unless
  ``PYSPARK_PYTHON`` names another (kproto.spark); otherwise Spark starts
  whatever ``python3`` is on PATH, which may lack pyarrow or kproto.
* Executors import the same kproto as the driver: the directory holding the
  ``kproto`` package goes on their ``PYTHONPATH`` (``spark.executorEnv``).
  That covers ``local[*]``, a standalone cluster on this machine and any
  cluster whose workers see the same path; elsewhere install kproto on the
  workers (``pip install 'kproto[spark]'``).
* Loopback only, no web UI, no console progress bars, log level ERROR.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import kproto

LOG4J2 = Path(__file__).with_name("log4j2.properties").as_uri()
KPROTO_ROOT = str(Path(kproto.__file__).resolve().parent.parent)


def _pythonpath() -> str:
    parts = [KPROTO_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))


def spark_session(master: str = "local[2]", *, app: str = "kproto", driver_memory: str | None = None,
                  conf: dict[str, str] | None = None, log_level: str = "ERROR"):
    """A session on ``master`` with kproto's sources registered."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PYSPARK_PYTHON: this interpreter unless the user set it (done on importing kproto.spark)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = _pythonpath()        # the driver's Python helpers
    from pyspark.sql import SparkSession
    from kproto.spark import register
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
         .config("spark.executorEnv.PYTHONPATH", _pythonpath())
         .config("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.python.filterPushdown.enabled", "true")
         .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J2}"))
    if driver_memory:
        b = b.config("spark.driver.memory", driver_memory)
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    register(spark)
    return spark
