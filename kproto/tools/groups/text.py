"""kafka-consumer-groups output (ConsumerGroupCommand.java, Kafka 3.9 / trunk 1eb76443).

``GROUPS_COLUMNS`` is the one field list per listing: its keys pick the row
values and its titles head the text tables and the rich tables alike.
Each text function returns the exact text Kafka prints for one group (or one
listing), newlines included: Kafka writes every line as printf("\n" + format)
and ends a table with println(), so a table starts with an empty line. Java's
"%-Ns" pads to N UTF-16 units and never truncates. Rows arrive in Kafka's
print order with None for a missing value (printed "-").
"""

from __future__ import annotations

from kproto.tools.render import jackson_csv_field, rich_table

GROUPS_COLUMNS = {
    "list": (("group", "GROUP"),),
    "list_state": (("group", "GROUP"), ("state", "STATE")),
    "offsets": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"),
                ("current_offset", "CURRENT-OFFSET"), ("log_end_offset", "LOG-END-OFFSET"), ("lag", "LAG"),
                ("consumer_id", "CONSUMER-ID"), ("host", "HOST"), ("client_id", "CLIENT-ID")),
    "members": (("group", "GROUP"), ("consumer_id", "CONSUMER-ID"), ("group_instance_id", "GROUP-INSTANCE-ID"),
                ("host", "HOST"), ("client_id", "CLIENT-ID"), ("partitions", "#PARTITIONS"),
                ("assignment", "ASSIGNMENT")),
    "state": (("group", "GROUP"), ("coordinator", "COORDINATOR (ID)"),
              ("assignment_strategy", "ASSIGNMENT-STRATEGY"), ("state", "STATE"), ("members", "#MEMBERS")),
    "reset": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"), ("new_offset", "NEW-OFFSET")),
    "delete": (("group", "GROUP"), ("error", "ERROR")),
}


def _titles(kind: str) -> tuple[str, ...]:
    return tuple(title for _, title in GROUPS_COLUMNS[kind])


def _jlen(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _pad(value, width: int) -> str:
    """Java's ``%-{width}s``; None prints as Kafka's MISSING_COLUMN_VALUE."""
    text = "-" if value is None else str(value)
    return text + " " * (width - _jlen(text))


def _widest(rows, key: str, least: int) -> int:
    return max([least] + [_jlen("-" if r[key] is None else str(r[key])) for r in rows])


def groups_list_text(rows, *, with_state: bool = False) -> str:
    """--list: one name a line; with --state a ``%-Ns %-20s`` table whose
    first column is the longest name (at least 15) plus 10."""
    if not with_state:
        return "".join(f"{name}\n" for name in rows)
    width = _widest(rows, "group", 15) + 10
    return "".join(f"{_pad(g, width)} {_pad(s, 20)}\n"
                   for g, s in [_titles("list_state")] + [(r["group"], r["state"]) for r in rows])


def groups_offsets_text(rows: list[dict]) -> str:
    """--describe [--offsets]: ``%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s``,
    G/T/C/H the longest group, topic, consumer id and host (at least 15)."""
    g, t = _widest(rows, "group", 15), _widest(rows, "topic", 15)
    c, h = _widest(rows, "consumer_id", 15), _widest(rows, "host", 15)
    lines = [_titles("offsets")] + [tuple(r[k] for k, _ in GROUPS_COLUMNS["offsets"]) for r in rows]
    return "".join(f"\n{_pad(a, g)} {_pad(b, t)} {_pad(p, 10)} {_pad(cur, 15)} {_pad(end, 15)} {_pad(lag, 15)} "
                   f"{_pad(cid, c)} {_pad(host, h)} {'-' if client is None else client}"
                   for a, b, p, cur, end, lag, cid, host, client in lines) + "\n"


def groups_assignment_text(assignment: dict) -> str:
    """--members --verbose ASSIGNMENT: per topic ``(0,1)`` (partitions sorted
    as strings, the topic not named), the topics' strings sorted, ``, ``-joined."""
    if not assignment:
        return "-"
    return ", ".join(sorted("(" + ",".join(sorted(map(str, parts))) + ")" for parts in assignment.values()))


def groups_members_text(rows: list[dict], *, verbose: bool = False) -> str:
    """--describe --members: ``%-Gs %-Cs [%-Is ]%-Hs %-CLs %-15s `` (a blank
    after #PARTITIONS), GROUP-INSTANCE-ID only when some member has one."""
    instance = any(r["group_instance_id"] for r in rows)
    widths = {"group": _widest(rows, "group", 15), "consumer_id": _widest(rows, "consumer_id", 15),
              "group_instance_id": max([17] + [_jlen(r["group_instance_id"] or "") for r in rows]),
              "host": _widest(rows, "host", 15), "client_id": _widest(rows, "client_id", 15), "partitions": 15}
    keys = [k for k in widths if instance or k != "group_instance_id"]
    names = dict(GROUPS_COLUMNS["members"])
    out = "\n" + "".join(_pad(names[k], widths[k]) + " " for k in keys) + ("ASSIGNMENT" if verbose else "") + "\n"
    for r in rows:
        cells = {**r, "group_instance_id": r["group_instance_id"] or ""}
        out += "".join(_pad(cells[k], widths[k]) + " " for k in keys)
        out += (groups_assignment_text(r["assignment"]) if verbose else "") + "\n"
    return out


def groups_coordinator_text(c: dict) -> str:
    return f"{c['host']}:{c['port']}  ({c['id']})"


def groups_state_text(row: dict) -> str:
    """--describe --state: ``%-Ws %-25s %-20s %-15s %s``, W the coordinator
    text's length (at least 25): Kafka sizes the GROUP column by it."""
    coordinator = groups_coordinator_text(row["coordinator"])
    w = max(25, _jlen(coordinator))
    lines = [_titles("state"), (row["group"], coordinator, row["assignment_strategy"], row["state"], row["members"])]
    return "".join(f"\n{_pad(a, w)} {_pad(b, 25)} {_pad(c, 20)} {_pad(d, 15)} {e}" for a, b, c, d, e in lines) + "\n"


def groups_reset_text(plans: dict) -> str:
    """--reset-offsets without --export: ``%-30s %-30s %-10s %-15s`` rows;
    the header only when some group was considered; always a final newline.
    ``plans`` maps a group to its ((topic, partition), offset) pairs."""
    out = "\n" + " ".join(_pad(t, w) for t, w in zip(_titles("reset"), (30, 30, 10, 15))) if plans else ""
    for group, entries in plans.items():
        out += "".join(f"\n{_pad(group, 30)} {_pad(t, 30)} {_pad(p, 10)} {_pad(o, 15)}" for (t, p), o in entries)
    return out + "\n"


def groups_export_csv(plans: dict, *, with_group: bool) -> str:
    """--export: ``topic,partition,offset`` lines (``group,`` first for several
    groups or --all-groups), then println's newline."""
    lines = []
    for group, entries in plans.items():
        head = jackson_csv_field(group) + "," if with_group else ""
        lines += [f"{head}{jackson_csv_field(t)},{p},{o}\n" for (t, p), o in entries]
    return "".join(lines) + "\n"


def groups_cells(kind: str, row) -> list[str]:
    """A row as the text cells of ``--output table``."""
    if kind == "list":
        return [row]
    cells = []
    for key, _ in GROUPS_COLUMNS[kind]:
        value = row.get(key)
        if key == "coordinator":
            value = groups_coordinator_text(value)
        elif key == "assignment":
            value = groups_assignment_text(value)
        cells.append("-" if value is None else str(value))
    return cells


def groups_table(kind: str, rows: list) -> None:
    """A rich table on stdout (``--output table``)."""
    rich_table(_titles(kind), [groups_cells(kind, row) for row in rows])
