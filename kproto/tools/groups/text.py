"""kafka-consumer-groups output (ConsumerGroupCommand.java and GroupOffsetsResetter,
Kafka 4.4, measured against its tool by tests/parity/test_kafka_ref_tools.py).

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
    "list_type": (("group", "GROUP"), ("type", "TYPE")),
    "list_type_state": (("group", "GROUP"), ("type", "TYPE"), ("state", "STATE")),
    "offsets": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"),
                ("leader_epoch", "LEADER-EPOCH"), ("current_offset", "CURRENT-OFFSET"), ("log_end_offset", "LOG-END-OFFSET"), ("lag", "LAG"),
                ("consumer_id", "CONSUMER-ID"), ("host", "HOST"), ("client_id", "CLIENT-ID")),
    "members": (("group", "GROUP"), ("consumer_id", "CONSUMER-ID"), ("group_instance_id", "GROUP-INSTANCE-ID"),
                ("host", "HOST"), ("client_id", "CLIENT-ID"), ("partitions", "#PARTITIONS"),
                ("current_epoch", "CURRENT-EPOCH"), ("assignment", "CURRENT-ASSIGNMENT"),
                ("target_epoch", "TARGET-EPOCH"), ("target_assignment", "TARGET-ASSIGNMENT")),
    "state": (("group", "GROUP"), ("coordinator", "COORDINATOR (ID)"),
              ("assignment_strategy", "ASSIGNMENT-STRATEGY"), ("state", "STATE"),
              ("group_epoch", "GROUP-EPOCH"), ("target_assignment_epoch", "TARGET-ASSIGNMENT-EPOCH"),
              ("members", "#MEMBERS")),
    "reset": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"), ("new_offset", "NEW-OFFSET")),
    "delete": (("group", "GROUP"), ("error", "ERROR")),
    "delete_offsets": (("topic", "TOPIC"), ("partition", "PARTITION"), ("status", "STATUS")),
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


def groups_list_text(rows, *, kind: str = "list") -> str:
    """--list: one name a line; with --type and/or --state (printGroupInfo) a table of
    ``%-Ns`` GROUP, the longest name (at least 15) plus 10, then ``%-20s`` TYPE and STATE."""
    if kind == "list":
        return "".join(f"{name}\n" for name in rows)
    width = _widest(rows, "group", 15) + 10
    keys = [k for k, _ in GROUPS_COLUMNS[kind]]
    return "".join(" ".join(_pad(v, width if i == 0 else 20) for i, v in enumerate(line)) + "\n"
                   for line in [_titles(kind)] + [[r[k] for k in keys] for r in rows])


def _cell(value) -> str:
    return "-" if value is None else str(value)


def groups_offsets_text(rows: list[dict], *, verbose: bool = False) -> str:
    """--describe [--offsets]: ``%-Gs %-Ts %-10s [%-15s ]%-15s %-15s %-15s %-Cs %-Hs %s``
    (printOffsetFormat), G/T/C/H the longest group, topic, consumer id and host
    (at least 15); --verbose adds LEADER-EPOCH after PARTITION."""
    g, t = _widest(rows, "group", 15), _widest(rows, "topic", 15)
    c, h = _widest(rows, "consumer_id", 15), _widest(rows, "host", 15)
    keys = [k for k, _ in GROUPS_COLUMNS["offsets"] if verbose or k != "leader_epoch"]
    widths = [g, t, 10] + [15] * (len(keys) - 6) + [c, h]
    lines = [[title for k, title in GROUPS_COLUMNS["offsets"] if k in keys]] + [[r[k] for k in keys] for r in rows]
    return "".join("\n" + " ".join(_pad(v, w) for v, w in zip(line, widths)) + " " + _cell(line[-1])
                   for line in lines) + "\n"


def groups_assignment_text(assignment: dict) -> str:
    """getAssignmentString: ``topic:0,1`` per topic (partitions in numeric
    order), the topics' strings sorted and ``;``-joined; ``-`` for none."""
    if not assignment:
        return "-"
    return ";".join(sorted(f"{topic}:" + ",".join(map(str, sorted(parts))) for topic, parts in assignment.items()))


def groups_members_text(rows: list[dict], *, verbose: bool = False) -> str:
    """--describe --members (printMembers): ``%-Gs %-Cs [%-Is ]%-Hs %-CLs %-15s ``
    (a blank after #PARTITIONS), GROUP-INSTANCE-ID only when some member has
    one; --verbose adds ``%-15s %-As %-15s %-Ts``: the member's epoch and
    assignment, the target epoch and assignment (A, T at least 20)."""
    instance = any(r["group_instance_id"] for r in rows)
    widths = {"group": _widest(rows, "group", 15), "consumer_id": _widest(rows, "consumer_id", 15),
              "group_instance_id": max([17] + [_jlen(r["group_instance_id"] or "") for r in rows]),
              "host": _widest(rows, "host", 15), "client_id": _widest(rows, "client_id", 15), "partitions": 15}
    keys = [k for k in widths if instance or k != "group_instance_id"]
    names = dict(GROUPS_COLUMNS["members"])
    current = [groups_assignment_text(r["assignment"]) for r in rows]
    target = [groups_assignment_text(r["target_assignment"]) for r in rows]
    extra = [15, max([20] + [_jlen(a) for a in current]), 15, max([20] + [_jlen(a) for a in target])]

    def tail(cells) -> str:
        return " ".join(_pad(v, w) for v, w in zip(cells, extra)) if verbose else ""
    out = "\n" + "".join(_pad(names[k], widths[k]) + " " for k in keys)
    out += tail([names[k] for k in ("current_epoch", "assignment", "target_epoch", "target_assignment")]) + "\n"
    for r, cur, tgt in zip(rows, current, target):
        cells = {**r, "group_instance_id": r["group_instance_id"] or ""}
        out += "".join(_pad(cells[k], widths[k]) + " " for k in keys)
        out += tail([r["current_epoch"], cur, r["target_epoch"], tgt]) + "\n"
    return out


def groups_coordinator_text(c: dict) -> str:
    return f"{c['host']}:{c['port']}  ({c['id']})"


def groups_state_text(row: dict, *, verbose: bool = False) -> str:
    """--describe --state (printStates): ``%-Gs %-Cs %-20s %-20s [%-15s %-25s ]%s``,
    G the group id's length (at least 15), C the coordinator text's (at least
    25); ``-`` for no assignment strategy; --verbose adds the group epoch and
    the target assignment epoch."""
    coordinator = groups_coordinator_text(row["coordinator"])
    keys = [k for k, _ in GROUPS_COLUMNS["state"]
            if verbose or k not in ("group_epoch", "target_assignment_epoch")]
    widths = [max(15, _jlen(row["group"])), max(25, _jlen(coordinator)), 20, 20] + ([15, 25] if verbose else [])
    values = {**row, "coordinator": coordinator, "assignment_strategy": row["assignment_strategy"] or None}
    lines = [[title for k, title in GROUPS_COLUMNS["state"] if k in keys], [values[k] for k in keys]]
    return "".join("\n" + " ".join(_pad(v, w) for v, w in zip(line, widths)) + " " + _cell(line[-1])
                   for line in lines) + "\n"


def groups_reset_text(plans: dict) -> str:
    """--reset-offsets without --export (GroupOffsetsResetter.printOffsetsToReset):
    ``%-Gs %-Ts %-10s %s`` rows, G the longest group id, T the longest topic (at
    least 15 each); the header only when some group was considered; always a
    final newline. ``plans`` maps a group to its ((topic, partition), offset) pairs."""
    g = max([15] + [_jlen(group) for group in plans])
    t = max([15] + [_jlen(tp[0]) for entries in plans.values() for tp, _ in entries])
    lines = [_titles("reset")] if plans else []
    lines += [(group, topic, p, o) for group, entries in plans.items() for (topic, p), o in entries]
    return "".join(f"\n{_pad(a, g)} {_pad(b, t)} {_pad(c, 10)} {d}" for a, b, c, d in lines) + "\n"


def groups_delete_offsets_text(rows: list[dict]) -> str:
    """--delete-offsets' table (ConsumerGroupService.deleteOffsets): ``%-Ts %-10s %-15s``
    lines each after a newline, T the longest topic (at least 15), then println's
    newline; ``-`` for a topic whose partitions could not be listed."""
    t = _widest(rows, "topic", 15)
    lines = [_titles("delete_offsets")] + [(r["topic"], r["partition"], r["status"]) for r in rows]
    return "".join(f"\n{_pad(a, t)} {_pad(b, 10)} {_pad(c, 15)}" for a, b, c in lines) + "\n"


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
        elif key in ("assignment", "target_assignment"):
            value = groups_assignment_text(value)
        cells.append("-" if value is None else str(value))
    return cells


def groups_table(kind: str, rows: list) -> None:
    """A rich table on stdout (``--output table``)."""
    rich_table(_titles(kind), [groups_cells(kind, row) for row in rows])
