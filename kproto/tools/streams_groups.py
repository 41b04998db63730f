"""``kproto streams-groups``: kafka-streams-groups.sh (StreamsGroupCommand, Kafka 4.4, diffed
against its tool by tests/e2e/test_streams_groups.py) over kproto's admin client: list (with
``--state``), describe (offsets with lag, members with their tasks, state; ``--verbose`` adds
committed offsets and leader epochs, member, topology and target-assignment epochs).

Output is Kafka's: its column layouts and widths, its HashMap order of the offsets' partitions.
As ``kproto groups``: Kafka's ``\\nError: ...`` lines (stdout there) are one line on stderr here
and exit 1, bad flags are one line and exit 2 (Kafka prints its usage and exits 1). Not here:
Kafka 4.4's ``--delete``, ``--reset-offsets``, ``--delete-offsets``, ``--topology`` (kproto keeps
no topology descriptions).
"""

from __future__ import annotations

import click

from kproto.errors import ErrorCode, KafkaError
from kproto.jvm import java_hashmap_order, topic_partition_hash
from kproto.tools.main import UsageProblem
from kproto.tools.share_groups import (
    _Service as GroupListing, _err, _pad, group_command, parse_states as parse_group_states, run_group_command,
)

#: GroupState.groupStatesForType(STREAMS), as Kafka lists them
STATES = ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead")
LATEST, EARLIEST = -1, -2


def check_args(o: dict) -> None:
    """StreamsGroupCommandOptions.checkArgs and main's one-action check (list and describe)."""
    if not o["bootstrap_server"]:
        raise UsageProblem('Missing required argument "[bootstrap-server]"')
    if o["list"] + o["describe"] != 1:
        raise UsageProblem("Command must include exactly one action: --list, or --describe.")
    if o["describe"]:
        if not o["group"] and not o["all_groups"]:
            raise UsageProblem("Option [describe] takes one of these options: [all-groups], [group]")
        if sum((o["members"], o["offsets"], o["state"] is not None)) > 1:
            raise UsageProblem("Option [describe] takes at most one of these options: [members], [offsets], [state]")
    for flag in ("members", "offsets", "verbose"):
        if o[flag] and not o["describe"]:
            raise UsageProblem(f"Option [{flag}] can only be used with option [describe]")


def tasks_text(assignment, prefix: str = "") -> str:
    """getTasksForPrinting: ``ACTIVE: 0:[0,1]; 1:[2]; `` per kind that has tasks."""
    out = ""
    for kind, rows in (("ACTIVE", assignment.active_tasks), ("STANDBY", assignment.standby_tasks),
                       ("WARMUP", assignment.warmup_tasks)):
        if rows:
            out += f"{prefix}{kind}: " + "".join(
                f"{t.subtopology_id}:[{','.join(str(p) for p in t.partitions)}]; " for t in rows)
    return out


@group_command("streams-groups", "described")
@click.option("--list", "list_", is_flag=True, help="List all streams groups.")
@click.option("--describe", is_flag=True, help="Describe streams group and list offset lag related to given group.")
@click.option("--group", "group", multiple=True, metavar="GROUP", help="The streams group we wish to act on.")
@click.option("--all-groups", is_flag=True, help="Apply to all streams groups.")
@click.option("--members", is_flag=True, help="Describe members of the group.")
@click.option("--offsets", is_flag=True, help="Describe the group and list all topic partitions with their lag "
              "(the default).")
@click.option("--verbose", is_flag=True, help="With --describe: epochs, target assignments, committed offsets.")
@click.option("--state", is_flag=False, flag_value="", default=None, metavar="[STATES]",
              help="With --describe: the group's state. With --list: the states of all groups, or only "
                   "those in STATES (e.g. stable,notready).")
@click.option("--timeout", type=int, metavar="MS", help="Request timeout in milliseconds.")
def streams_groups(**o) -> None:
    """List and describe Kafka Streams groups (kafka-streams-groups.sh)."""
    o["list"] = o.pop("list_")
    o["group"] = list(dict.fromkeys(o["group"]))
    check_args(o)
    states = parse_group_states(o["state"], STATES) if o["list"] and o["state"] else set()

    def act(admin) -> bool:
        service = _Service(admin, o)
        if o["list"]:
            service.list_groups(states)
            return False
        return service.describe()

    run_group_command(o, "streams", act)


class _Service(GroupListing):
    """kafka-streams-groups.sh's StreamsGroupService; listing as kafka-share-groups.sh's."""

    GROUP_TYPE = "Streams"

    def __init__(self, admin, o: dict) -> None:
        super().__init__(admin, o)
        self.failed = False

    def describe(self) -> bool:
        groups = [g.group_id for g in self._listed()] if self.o["all_groups"] else self.o["group"]
        for group in groups:
            d = self.admin.describe_streams_group(group)
            if d.error_code:
                raise KafkaError(d.error_message or ErrorCode(d.error_code).description, error_code=d.error_code)
            if self.o["members"]:
                self._members(d)
            elif self.o["state"] is not None:
                self._state(d)
            else:
                self._offsets(d)
        return self.failed

    def _empty_state(self, d) -> None:
        """maybePrintEmptyGroupState."""
        if d.group_state == "Dead":
            self.failed = True
            _err(f"Streams group '{d.group_id}' does not exist.")
        elif d.group_state == "Empty":
            self.failed = True
            _err(f"Streams group '{d.group_id}' has no active members.")

    @staticmethod
    def _valid(d, n: int) -> bool:
        """isGroupStateValid: not Dead, something to print."""
        return d.group_state != "Dead" and n > 0

    def _members(self, d) -> None:
        members = list(d.members)
        if not self._valid(d, len(members)):
            return
        self._empty_state(d)
        g = max(15, len(d.group_id))
        m = max([15] + [len(x.member_id) for x in members])
        p = max([15] + [len(x.process_id) for x in members])
        c = max([15] + [len(x.client_id) for x in members])
        if not self.o["verbose"]:
            lines = [("GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS")] + [
                (d.group_id, x.member_id, x.process_id, x.client_id, tasks_text(x.assignment)) for x in members]
            text = "".join(f"{_pad(a, g)} {_pad(b, m)} {_pad(pr, p)} {_pad(cl, c)} {t}\n"
                           for a, b, pr, cl, t in lines)
        else:
            lines = [("GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL",
                      "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS")] + [
                (d.group_id, d.assignment_epoch, x.topology_epoch, x.member_id,
                 "classic" if x.is_classic else "streams", x.member_epoch, x.process_id, x.client_id,
                 tasks_text(x.assignment) + tasks_text(x.target_assignment, "TARGET-")) for x in members]
            text = "".join(f"{_pad(a, g)} {_pad(e, 25)} {_pad(te, 15)}{_pad(b, m)} {_pad(pt, 15)} {_pad(me, 15)} "
                           f"{_pad(pr, p)} {_pad(cl, c)} {t}\n" for a, e, te, b, pt, me, pr, cl, t in lines)
        click.echo(text, nl=False)

    def _state(self, d) -> None:
        self._empty_state(d)
        c = self.admin.coordinator(d.group_id)
        coordinator = f"{c.host}:{c.port} ({c.node_id})"
        assignor = d.get("assignor_name") or ""
        g, w, a = max(15, len(d.group_id)), max(25, len(coordinator)), max(15, len(assignor))
        if self.o["verbose"]:
            lines = [("GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                      "#MEMBERS"), (d.group_id, coordinator, assignor, d.group_state, d.group_epoch,
                                    d.assignment_epoch, len(d.members))]
            widths = (g, w, a, 25, 15, 25)
        else:
            lines = [("GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "#MEMBERS"),
                     (d.group_id, coordinator, assignor, d.group_state, len(d.members))]
            widths = (g, w, a, 25)
        click.echo("".join(" ".join(_pad(v, n) for v, n in zip(line, widths)) + f" {line[-1]}\n"
                           for line in lines), nl=False)

    def _offsets(self, d) -> None:
        """getOffsets: the partitions of the members' active tasks (their subtopology's source and
        repartition source topics); lag from the committed offset, else from the earliest."""
        inputs = {s.subtopology_id: [*s.source_topics, *(r.name for r in s.repartition_source_topics)]
                  for s in (d.topology.subtopologies or ()) } if d.topology is not None else {}
        tps = {(t, p) for m in d.members for task in m.assignment.active_tasks
               for t in inputs.get(task.subtopology_id, ()) for p in task.partitions}
        if not self._valid(d, len(d.members)):
            return
        self._empty_state(d)
        earliest = self.admin.list_offsets({tp: EARLIEST for tp in tps})
        latest = self.admin.list_offsets({tp: LATEST for tp in tps})
        committed = self.admin.offset_fetch(d.group_id)
        rows = []
        for tp in java_hashmap_order(list(tps), topic_partition_hash):
            end = latest[tp].offset
            c = committed.get(tp)
            lag = end - (c.offset if c is not None else earliest[tp].offset)
            epoch = None if c is None or c.leader_epoch < 0 else c.leader_epoch
            rows.append((tp, None if c is None else c.offset, epoch, end, lag))
        g = max(15, len(d.group_id))
        t = max([15] + [len(tp[0]) for tp in tps])
        if not self.o["verbose"]:
            text = f"{_pad('GROUP', g)} {_pad('TOPIC', t)} {_pad('PARTITION', 10)} OFFSET-LAG\n" + "".join(
                f"{_pad(d.group_id, g)} {_pad(tp[0], t)} {_pad(tp[1], 10)} {lag}\n" for tp, _, _, _, lag in rows)
        else:
            def cell(v) -> str:
                return "-" if v is None else str(v)
            text = "".join(f"{_pad(a, g)} {_pad(b, t)} {_pad(p, 10)} {_pad(cur, 15)} {_pad(ep, 15)} "
                           f"{_pad(end, 15)} {_pad(lag, 15)}\n" for a, b, p, cur, ep, end, lag in [
                               ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET",
                                "OFFSET-LAG")] + [(d.group_id, tp[0], tp[1], cell(cur), cell(ep), end, lag)
                                                  for tp, cur, ep, end, lag in rows])
        click.echo(text, nl=False)
