"""kafka-topics output (TopicCommand.java, Kafka 3.8+: TopicDescription/PartitionDescription).

A described topic is a dict with the keys ``TOPIC_FIELDS`` plus
"partitions", a list of dicts with the keys ``PARTITION_FIELDS``. One column
list per line kind (``TOPIC_COLUMNS``, ``PARTITION_COLUMNS``: key, table
title, Kafka's text label) drives the text lines, the table and the JSON/YAML
shape, so they cannot drift apart. "configs" is already in Kafka's print
order (the HashMap order of Admin's Config) and "leader" is None when there
is none; "elr"/"last_known_elr" are None when the broker was asked with
Metadata (Kafka prints N/A then); "adding_replicas"/"removing_replicas" are
None unless a reassignment of the partition is under way (``REASSIGNMENT``:
Kafka prints them only then).
"""

from __future__ import annotations

from typing import Iterable

from kproto.tools.render import rich_table, structured_output

__all__ = ["TOPIC_COLUMNS", "PARTITION_COLUMNS", "TOPIC_FIELDS", "PARTITION_FIELDS", "topic_line",
           "partition_line", "topics_describe_lines", "topics_structured", "topics_output", "topics_table"]

TOPIC_COLUMNS = (("topic", "TOPIC", "Topic"), ("topic_id", "TOPIC ID", "TopicId"),
                 ("partition_count", "PARTITIONS", "PartitionCount"),
                 ("replication_factor", "RF", "ReplicationFactor"), ("configs", "CONFIGS", "Configs"))
PARTITION_COLUMNS = (("topic", "TOPIC", "Topic"), ("partition", "PARTITION", "Partition"),
                     ("leader", "LEADER", "Leader"), ("replicas", "REPLICAS", "Replicas"), ("isr", "ISR", "Isr"),
                     ("adding_replicas", "ADDING", "Adding Replicas"),
                     ("removing_replicas", "REMOVING", "Removing Replicas"),
                     ("elr", "ELR", "Elr"), ("last_known_elr", "LAST KNOWN ELR", "LastKnownElr"))
REASSIGNMENT = ("adding_replicas", "removing_replicas")
TOPIC_FIELDS = tuple(key for key, _, _ in TOPIC_COLUMNS)
PARTITION_FIELDS = tuple(key for key, _, _ in PARTITION_COLUMNS)


def _cell(key: str, value, *, config_sep: str = ",") -> str:
    """A field as Kafka prints it (``config_sep``: "\\n" in a table cell)."""
    if key == "configs":
        return config_sep.join(f"{k}={v}" for k, v in value.items())
    if value is None:
        return {"leader": "none", "elr": "N/A", "last_known_elr": "N/A"}.get(key, "")
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def topic_line(t: dict) -> str:
    # TopicId is left out for a topic without one (a zero id).
    return "\t".join(f"{label}: {_cell(key, t[key])}" for key, _, label in TOPIC_COLUMNS
                     if key != "topic_id" or t[key])


def _shown(p: dict, key: str) -> bool:
    return key not in REASSIGNMENT or p.get(key) is not None


def partition_line(p: dict) -> str:
    return "".join(f"\t{label}: {_cell(key, p.get(key))}" for key, _, label in PARTITION_COLUMNS
                   if _shown(p, key))


def topics_describe_lines(described: Iterable[dict]) -> list[str]:
    """kafka-topics.sh --describe text; a topic with ``show_topic`` False
    (a partition filter is on) prints its matching partitions only."""
    lines: list[str] = []
    for t in described:
        if t.get("show_topic", True):
            lines.append(topic_line(t))
        lines += [partition_line(p) for p in t["partitions"]]
    return lines


def topics_structured(described: Iterable[dict]) -> list[dict]:
    """The JSON/YAML shape of a describe: the printed topics and partitions."""
    out = []
    for t in described:
        row = {k: t[k] for k in TOPIC_FIELDS}
        row["partitions"] = [{k: p.get(k) for k in PARTITION_FIELDS if k != "topic" and _shown(p, k)}
                             for p in t["partitions"]]
        out.append(row)
    return out


def topics_output(kind: str, data, fmt: str) -> str:
    """--list / --describe output in ``fmt`` (json, yaml); ``data`` is the
    topic names (list) or the described topics (describe)."""
    return structured_output(data if kind == "list" else topics_structured(data), fmt)


def topics_table(kind: str, data) -> None:
    """Rich tables on stdout (``--output table``)."""
    from rich.console import Console
    console = Console()
    if kind == "list":
        rich_table(("TOPIC",), [(name,) for name in data], console=console)
        return
    data = list(data)
    rich_table([title for _, title, _ in TOPIC_COLUMNS],
               [[_cell(key, t[key], config_sep="\n") for key, _, _ in TOPIC_COLUMNS]
                for t in data if t.get("show_topic", True)], title="Topics", console=console)
    partitions = [p for t in data for p in t["partitions"]]
    columns = [c for c in PARTITION_COLUMNS if any(_shown(p, c[0]) for p in partitions) or c[0] not in REASSIGNMENT]
    rich_table([title for _, title, _ in columns],
               [[_cell(key, p.get(key)) for key, _, _ in columns] for p in partitions],
               title="Partitions", console=console)
