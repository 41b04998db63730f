"""``kproto export``: Kafka log directories to Parquet, JSON or CSV on Spark.

    kproto export /var/lib/kafka/data --out audit/ --where "topic = 'orders'" --select key,value,offset
    kproto export segs/ --out out/ --format json --master spark://host:7077
    kproto export --consumer-offsets /var/lib/kafka/data            # the groups --describe table

The job is ``spark.read.format("kafka-log")`` (kproto.spark), filtered by
``--where`` (Spark SQL), projected by ``--select``; only the columns the two
name are decoded. On a terminal each Spark stage shows its tasks done; the
end is one line with rows and rate. CSV cannot hold binary or nested
values: there ``key``/``value`` are base64 and ``headers`` JSON.
"""

from __future__ import annotations

import re
import sys
import threading
import time

import click

from kproto.errors import KprotoError
from kproto.tools.main import OneLineCommand, UsageProblem, exit_status_help

_KPROTO_ERROR = re.compile(r"\b(?:UsageError|CorruptRecordError|IncompleteBatchError|DecompressionError|"
                           r"DecodeError|KprotoError): (.+)")
 
_SPARK_ERROR = re.compile(r"(\[[A-Z_.]+\] [^\n]+)")


def split_select(text: str) -> list[str]:
    """``a, f(b, c) AS d`` -> ["a", "f(b, c) AS d"]: commas outside brackets and quotes."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def needed_columns(select: list[str], where: str | None) -> list[str] | None:
    """The kafka-log columns ``--select``/``--where`` mention (None: all)."""
    from kproto.spark.columns import NAMES
    if not select or any(s.strip() == "*" for s in select):
        return None
    words = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", " ".join(select) + " " + (where or "")))
    return [n for n in NAMES if n in words] or None


def spark_error(e: Exception) -> str:
    """One line out of a Spark/Py4J error: kproto's own message if the task
    raised one, else Spark's first line."""
    text = str(e)
    m = _KPROTO_ERROR.search(text) or _SPARK_ERROR.search(text)
    if m:
        return m.group(1).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(e).__name__)
    return first[:500]


class StageProgress:
    """Spark stages and their tasks on stderr (rich), polled from the status
    tracker; nothing when stderr is not a terminal."""

    def __init__(self, spark, enabled: bool) -> None:
        self.spark, self.enabled = spark, enabled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "StageProgress":
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def _run(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        tracker = self.spark.sparkContext.statusTracker()
        tasks: dict[int, int] = {}
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
            while not self._stop.wait(0.25):
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is None:
                        continue
                    if sid not in tasks:
                        name = info.name.split(" at ")[0]
                        tasks[sid] = bar.add_task(f"stage {sid} ({name})", total=info.numTasks)
                    bar.update(tasks[sid], completed=info.numCompletedTasks)


def _fail(message: str) -> None:
    raise UsageProblem(message)


@click.command("export", cls=OneLineCommand,
               epilog=exit_status_help("the export failed: Spark, or a segment that does not "
                                       "decode (one line on stderr)"))
@click.argument("path", required=False)
@click.option("--out", "out", metavar="DIR", help="Output directory.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "json", "csv"]), default="parquet",
              show_default=True)
@click.option("--master", default="local[*]", show_default=True, help="Spark master: local[N], spark://HOST:PORT.")
@click.option("--where", "where", metavar="SQL", help="Keep rows matching this Spark SQL condition.")
@click.option("--select", "select", metavar="COLS", help="Columns or SQL expressions, comma-separated.")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE",
              help="kafka-log read option (startingOffsets, isolationLevel, mode, ...); repeatable.")
@click.option("--overwrite", is_flag=True, help="Replace DIR if it exists.")
@click.option("--consumer-offsets", "consumer_offsets", metavar="DATADIR",
              help="Rebuild the latest committed offsets from DATADIR's __consumer_offsets.")
@click.option("--driver-memory", metavar="SIZE", help="spark.driver.memory, e.g. 4g.")
def export(path, out, fmt, master, where, select, options, overwrite, consumer_offsets, driver_memory) -> None:
    """Export Kafka log segments (a data dir, partition dir or .log files) with Spark.

    A PATH ending in .pcap/.pcapng/.cap (.gz too) is a capture: one row per
    request/response exchange, the fields of ``kproto decode --json``.

    \b
    Columns: key value topic partition offset timestamp timestampType headers
    base_offset magic compression producer_id producer_epoch base_sequence
    is_transactional is_control crc_valid segment position error
    """
    if bool(path) == bool(consumer_offsets):
        _fail("give a PATH to export or --consumer-offsets DATADIR")
    if path and not out:
        _fail("--out DIR is required")
    read_opts = {}
    for o in options:
        k, sep, v = o.partition("=")
        if not sep or not k:
            _fail(f"--option {o!r}: expected KEY=VALUE")
        read_opts[k] = v
    try:
        from kproto.spark.session import spark_session
    except ImportError as e:
        raise KprotoError(f"kproto export needs PySpark and pyarrow: pip install 'kproto[spark]' ({e})") from None
    from pyspark.sql import SparkSession
    started = time.monotonic()
    owned = SparkSession.getActiveSession() is None     # else a caller's session (tests): keep it
    spark = spark_session(master, app="kproto export", driver_memory=driver_memory,
                          log_level="OFF" if owned else "ERROR")
    try:
        with StageProgress(spark, sys.stderr.isatty()):
            if consumer_offsets:
                _consumer_offsets(spark, consumer_offsets, out, fmt, overwrite)
            else:
                rows = _export(spark, path, out, fmt, where, select, read_opts, overwrite)
                took = time.monotonic() - started
                click.echo(f"exported {rows:,} rows to {out} ({fmt}) in {took:.1f} s, "
                           f"{rows / took if took else 0:,.0f} rows/s")
    except (KprotoError, click.ClickException):
        raise
    except Exception as e:              # Spark/Py4J errors: one line
        if type(e).__name__ in ("KeyboardInterrupt",):
            raise
        raise KprotoError(spark_error(e)) from None
    finally:
        if owned:
            spark.stop()


def _export(spark, path, out, fmt, where, select, read_opts, overwrite) -> int:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    cols = split_select(select) if select else []
    from kproto.spark.pcap import SUFFIXES
    reader = spark.read.format("kafka-pcap" if path.endswith(SUFFIXES) else "kafka-log")
    for k, v in read_opts.items():
        reader = reader.option(k, v)
    needed = needed_columns(cols, where)
    if needed and "columns" not in {k.lower() for k in read_opts} and not path.endswith(SUFFIXES):
        reader = reader.option("columns", ",".join(needed))
    df = reader.load(path)
    if where:
        df = df.where(where)
    if cols:
        df = df.selectExpr(*cols)
    if fmt == "csv":
        df = df.select(*[_csv_safe(F, f) for f in df.schema.fields])
    seen = Observation("kproto-export")
    df = df.observe(seen, F.count(F.lit(1)).alias("rows"))
    writer = df.write.mode("overwrite" if overwrite else "errorifexists")
    if fmt == "csv":
        writer = writer.option("header", "true")
    getattr(writer, fmt)(out)
    return seen.get["rows"]


def _csv_safe(F, field):
    from pyspark.sql.types import ArrayType, BinaryType, MapType, StructType
    c = F.col(f"`{field.name}`")
    if isinstance(field.dataType, BinaryType):
        return F.base64(c).alias(field.name)
    if isinstance(field.dataType, (ArrayType, MapType, StructType)):
        return F.to_json(c).alias(field.name)
    return c


def _consumer_offsets(spark, data_dir: str, out: str | None, fmt: str, overwrite: bool) -> None:
    from pyspark.sql import functions as F
    from kproto.spark.offsets import committed_offsets
    from kproto.spark.plan import log_end_offsets
    rows = committed_offsets(spark, data_dir).collect()
    ends = log_end_offsets(data_dir)
    table = []
    for r in rows:
        end = ends.get((r["topic"], r["partition"]))
        cur = r["committed_offset"]
        table.append({"group": r["group"], "topic": r["topic"], "partition": r["partition"],
                      "current_offset": cur, "log_end_offset": end,
                      "lag": end - cur if end is not None and cur not in (None, -1) else None,
                      "leader_epoch": r["leader_epoch"], "metadata": r["metadata"],
                      "commit_timestamp": r["commit_timestamp"]})
    if out:
        df = spark.createDataFrame(table, "`group` STRING, topic STRING, partition INT, current_offset BIGINT, "
                                          "log_end_offset BIGINT, lag BIGINT, leader_epoch INT, metadata STRING, "
                                          "commit_timestamp BIGINT")
        df = df.withColumn("commit_timestamp", F.timestamp_millis("commit_timestamp"))
        writer = df.write.mode("overwrite" if overwrite else "errorifexists")
        getattr(writer.option("header", "true") if fmt == "csv" else writer, fmt)(out)
        click.echo(f"exported {len(table):,} committed offsets of "
                   f"{len({r['group'] for r in table}):,} groups to {out} ({fmt})")
        return
    sys.stdout.write(offsets_text(table))


def offsets_text(table: list[dict]) -> str:
    """Per group, ``kproto groups --describe``'s table (Kafka's layout and
    partition order); offline there are no members: CONSUMER-ID, HOST and
    CLIENT-ID are "-" as for a group without active members."""
    from kproto.tools.groups.command import _hash_order
    from kproto.tools.groups.text import groups_offsets_text
    by_group: dict[str, dict] = {}
    for r in table:
        by_group.setdefault(r["group"], {})[(r["topic"], r["partition"])] = r
    text = ""
    for group in sorted(by_group):
        rows = by_group[group]
        text += groups_offsets_text([{**rows[tp], "consumer_id": None, "host": None, "client_id": None}
                                     for tp in _hash_order(rows)])
    return text
