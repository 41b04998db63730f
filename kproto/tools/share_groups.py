"""``kproto share-groups``: kafka-share-groups.sh (ShareGroupCommand, Kafka 4.4,
diffed against its tool by tests/parity/test_kafka_ref_tools.py) over kproto's
admin client: list, describe (offsets with start offset and lag, members, state;
``--verbose`` adds leader epochs, member epochs and group epochs), reset offsets
(``--to-earliest``, ``--to-latest``, ``--to-datetime``, ``--to-offset``,
``--to-current``; a dry run or ``--execute``), delete offsets, delete groups.

Output and messages are Kafka's. As ``kproto groups``: Kafka's ``\\nError: ...``
lines (stdout there) are one line on stderr here and exit 1, bad flags are one
line and exit 2 (Kafka prints its usage and exits 1). Not here: ``--export``,
``--from-file``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from kproto.errors import ErrorCode, KafkaError, KprotoError, java_exception
from kproto.jvm import java_hashmap_order, java_string_hash
from kproto.tools.groups.args import parse_datetime, parse_topic_arg
from kproto.tools.groups.text import groups_reset_text
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

STATES = ("Dead", "Empty", "Stable")          # GroupState.groupStatesForType(SHARE), as Kafka lists them
SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "to-current", "to-offset")
LATEST, EARLIEST = -1, -2


class Failed(Exception):
    """``Error: <message>`` and exit 1."""


def _err(message: str) -> None:
    sys.stdout.flush()
    click.echo(f"Error: {message}", err=True)


def _notice(message: str) -> None:
    sys.stdout.flush()
    click.echo(message, err=True)


def _pad(value, width: int) -> str:
    return f"{'-' if value is None else value!s:<{width}}"


def parse_states(text: str, states: tuple[str, ...] = STATES) -> set[str]:
    """groupStatesFromString: comma-separated, trimmed, case-insensitive, of the group type's
    ``states`` (kafka-streams-groups.sh's the same way, with its own)."""
    by_upper = {s.upper(): s for s in states}
    parsed = {by_upper.get(s.strip().upper(), s.strip()) for s in text.split(",")}
    if not parsed <= set(states):
        raise UsageProblem(f"Invalid state list '{text}'. Valid states are: {', '.join(states)}")
    return parsed


def check_args(o: dict) -> None:
    """ShareGroupCommandOptions.checkArgs and main's one-action check, in Kafka's words."""
    if not o["bootstrap_server"]:
        raise UsageProblem('Missing required argument "[bootstrap-server]"')
    actions = [a for a in ("list", "describe", "delete", "reset_offsets", "delete_offsets") if o[a]]
    if len(actions) != 1:
        raise UsageProblem("Command must include exactly one action: --list, --describe, --delete, "
                           "--reset-offsets, --delete-offsets.")
    if (o["describe"] or o["delete"]) and not o["group"] and not o["all_groups"]:
        action = "describe" if o["describe"] else "delete"
        raise UsageProblem(f"Option [{action}] takes one of these options: [all-groups], [group]")
    if (o["reset_offsets"] or o["delete_offsets"]) and len(o["group"]) != 1:
        raise UsageProblem(f"Option [{'reset-offsets' if o['reset_offsets'] else 'delete-offsets'}] takes the "
                           "option: [group]")
    if o["delete_offsets"] and not o["topics"]:
        raise UsageProblem("Option [delete-offsets] takes the following options: [topic], [group]")
    if o["reset_offsets"]:
        if not o["dry_run"] and not o["execute"]:
            raise UsageProblem("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if o["dry_run"] and o["execute"]:
            raise UsageProblem("Option [reset-offsets] only accepts one of [execute], [dry-run]")
        given = [s for s in SCENARIOS if o[s.replace("-", "_")] not in (None, False)]
        if len(given) != 1:
            raise UsageProblem("One and only one of the following scenarios must be specified: "
                               + ", ".join(f"[{s}]" for s in SCENARIOS))
        if not o["topics"] and not o["all_topics"]:
            raise UsageProblem("Option [reset-offsets] takes one of these options: [all-topics], [topic]")


def group_command(name: str, acted_on: str) -> Callable:
    """The click command of kafka-share-groups.sh or kafka-streams-groups.sh with the options
    both take first: the server to connect to and the admin client's properties."""
    def command(f: Callable) -> click.Command:
        f = click.option("--command-config", type=click.Path(dir_okay=False),
                         help="Property file containing configs to be passed to Admin Client.")(f)
        f = click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
                         help="REQUIRED: The server(s) to connect to (or KPROTO_BOOTSTRAP_SERVER).")(f)
        return click.command(name, cls=OneLineCommand, epilog=exit_status_help(
            f'the command failed or a group could not be {acted_on} (one line "Error: ..." on stderr each)'),
            context_settings={"help_option_names": ["-h", "--help"]})(f)
    return command


def run_group_command(o: dict, kind: str, act: Callable[[Any], bool]) -> NoReturn:
    """Connects as the options say, runs ``act`` on an admin client (True: something failed)
    and exits: 1 with one line ``Error: ...`` when the command failed (``kind``: "share",
    "streams", in Kafka's message)."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    try:
        with BrokerClient(o["bootstrap_server"], config=config,
                          timeout_s=o["timeout"] / 1000 if o["timeout"] else None) as client:
            failed = act(Admin(client))
    except Failed as e:
        _err(str(e))
        sys.exit(ExitStatus.ERROR)
    except KafkaError as e:
        _err(f"Executing {kind} group command failed due to {java_exception(e.error_code, str(e))}")
        sys.exit(ExitStatus.ERROR)
    except (KprotoError, OSError) as e:
        _err(f"Executing {kind} group command failed due to {e}")
        sys.exit(ExitStatus.ERROR)
    sys.stdout.flush()
    sys.exit(ExitStatus.ERROR if failed else ExitStatus.OK)


@group_command("share-groups", "acted on")
@click.option("--list", "list_", is_flag=True, help="List all share groups.")
@click.option("--describe", is_flag=True, help="Describe share group, members and offset information.")
@click.option("--delete", is_flag=True, help="Delete share group.")
@click.option("--reset-offsets", is_flag=True, help="Reset offsets of share group (inactive groups only).")
@click.option("--delete-offsets", is_flag=True, help="Delete offsets of share group (one group, several topics).")
@click.option("--group", "group", multiple=True, metavar="GROUP", help="The share group id.")
@click.option("--all-groups", is_flag=True, help="Apply to all share groups.")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:P,...]",
              help="The topic whose offsets should be deleted or reset (topic:0,1,2 for some partitions).")
@click.option("--all-topics", is_flag=True, help="Apply to all topics (reset-offsets).")
@click.option("--members", is_flag=True, help="Describe members of the group.")
@click.option("--offsets", is_flag=True, help="Describe the group's partitions with their offsets (the default).")
@click.option("--verbose", is_flag=True, help="With --describe: leader epochs, member and group epochs.")
@click.option("--state", is_flag=False, flag_value="", default=None, metavar="[STATES]",
              help="With --describe: the group's state. With --list: the states of all groups, or only "
                   "those in STATES (Empty, Stable, Dead).")
@click.option("--dry-run", is_flag=True, help="Output offset reset information without executing it.")
@click.option("--execute", is_flag=True, help="Execute the offset reset.")
@click.option("--to-datetime", metavar="DATETIME", help="Reset offsets to offset from datetime "
              "(YYYY-MM-DDThh:mm:ss.sss).")
@click.option("--to-earliest", is_flag=True, help="Reset offsets to earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset offsets to latest offset.")
@click.option("--to-current", is_flag=True, help="Reset offsets to current offset.")
@click.option("--to-offset", type=int, help="Reset offsets to a specific offset.")
@click.option("--timeout", type=int, metavar="MS", help="Request timeout in milliseconds.")
def share_groups(**o) -> None:
    """List, describe and delete share groups and manage their offsets (kafka-share-groups.sh)."""
    o["list"] = o.pop("list_")
    o["group"] = list(dict.fromkeys(o["group"]))
    check_args(o)
    states = parse_states(o["state"]) if o["list"] and o["state"] else set()
    when = parse_datetime(o["to_datetime"]) if o["reset_offsets"] and o["to_datetime"] else None
    for arg in o["topics"] if o["reset_offsets"] else ():
        if ":" in arg:
            parse_topic_arg(arg)

    def act(admin) -> bool:
        service = _Service(admin, o)
        if o["list"]:
            service.list_groups(states)
        elif o["describe"]:
            service.describe()
        elif o["delete"]:
            return service.delete()
        elif o["delete_offsets"]:
            return service.delete_offsets()
        else:
            service.reset_offsets(when)
        return False

    run_group_command(o, "share", act)


class _Service:
    GROUP_TYPE = "Share"          # ListGroups' type filter (kproto.tools.streams_groups: "Streams")

    def __init__(self, admin, o: dict) -> None:
        self.admin, self.o = admin, o

    def _listed(self):
        return self.admin.list_groups(types=(self.GROUP_TYPE,))

    def list_groups(self, states: set[str]) -> None:
        listed = self._listed()
        if self.o["state"] is None:
            click.echo("".join(g.group_id + "\n" for g in listed), nl=False)
            return
        rows = [g for g in listed if not states or g.state in states]
        width = max([15] + [len(g.group_id) for g in rows])
        click.echo("".join(f"{_pad(a, width)} {b}\n" for a, b in
                           [("GROUP", "STATE")] + [(g.group_id, g.state or "Unknown") for g in rows]), nl=False)

    def _groups(self) -> list[str]:
        return sorted([g.group_id for g in self._listed()] if self.o["all_groups"] else self.o["group"])

    def _describe(self, group: str):
        d = self.admin.describe_share_group(group)
        if d.error_code:
            raise KafkaError(d.error_message or ErrorCode(d.error_code).description, error_code=d.error_code)
        return d

    def describe(self) -> None:
        verbose = self.o["verbose"]
        groups = {g: self._describe(g) for g in self._groups()}     # ShareGroupCommand describes all first
        for group, d in groups.items():
            if self.o["members"]:
                self._members(group, d, verbose)
            elif self.o["state"] is not None:
                self._state(group, d, verbose)
            else:
                self._offsets(group, verbose)

    @staticmethod
    def _empty_state(group: str, state: str, rows: int) -> bool:
        """maybePrintEmptyGroupState: whether the table follows."""
        if state == "Dead":
            _err(f"Share group '{group}' does not exist.")
        elif state == "Empty":
            _notice(f"\nShare group '{group}' has no active members.")
        return state != "Dead" and rows > 0

    def _offsets(self, group: str, verbose: bool) -> None:
        answer = self.admin.list_share_group_offsets(group)
        if answer.error_code:
            raise KafkaError(answer.error_message or ErrorCode(answer.error_code).description,
                             error_code=answer.error_code)
        rows = sorted((t.topic_name, p.partition_index, p.leader_epoch, p.start_offset, p.get("lag", -1))
                      for t in answer.topics for p in t.partitions if not p.error_code)
        if not rows:
            click.echo(f"\nShare group '{group}' has no offset information.")     # stdout, unlike the above
            return
        g = max(15, len(group))
        t = max([15] + [len(r[0]) for r in rows])

        def cell(v: int):
            return None if v < 0 else v
        titles = ("GROUP", "TOPIC", "PARTITION") + (("LEADER-EPOCH",) if verbose else ()) + ("START-OFFSET", "LAG")
        lines = [titles] + [(group, topic, p) + ((cell(e),) if verbose else ()) + (cell(s), cell(lag))
                            for topic, p, e, s, lag in rows]
        out = ""
        for line in lines:
            cells = [_pad(line[0], g), _pad(line[1], t), _pad(line[2], 10)] + [_pad(v, 13) for v in line[3:-1]]
            out += "\n" + " ".join(cells) + " " + ("-" if line[-1] is None else str(line[-1]))
        click.echo(out)

    def _state(self, group: str, d, verbose: bool) -> None:
        self._empty_state(group, d.group_state, 1)
        c = self.admin.coordinator(group)
        coordinator = f"{c.host}:{c.port}  ({c.node_id})"
        g, w = max(15, len(group)), max(25, len(coordinator))
        if verbose:
            lines = [("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
                     (group, coordinator, d.group_state, d.group_epoch, d.assignment_epoch, len(d.members))]
            widths = (g, w, 15, 12, 17)
        else:
            lines = [("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"), (group, coordinator, d.group_state,
                                                                          len(d.members))]
            widths = (g, w, 15)
        click.echo("".join("\n" + " ".join(_pad(v, n) for v, n in zip(line, widths)) + f" {line[-1]}"
                           for line in lines))

    def _members(self, group: str, d, verbose: bool) -> None:
        members = sorted(d.members, key=lambda m: m.member_id)
        if not self._empty_state(group, d.group_state, len(members)):
            return
        c = max([15] + [len(m.member_id) for m in members])
        h = max([15] + [len(m.client_host) for m in members])
        i = max([15] + [len(m.client_id) for m in members])

        def assignment(m) -> str:
            return ";".join(sorted(f"{t.topic_name}:" + ",".join(str(p) for p in sorted(t.partitions))
                                   for t in m.assignment.topic_partitions))
        head = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS") + (("MEMBER-EPOCH",) if verbose else ())
        lines = [head + ("ASSIGNMENT",)] + [
            (group, m.member_id, m.client_host, m.client_id,
             sum(len(t.partitions) for t in m.assignment.topic_partitions))
            + ((m.member_epoch,) if verbose else ()) + (assignment(m),) for m in members]
        widths = (max(15, len(group)), c, h, i, 12) + ((13,) if verbose else ())
        click.echo("".join("\n" + " ".join(_pad(v, n) for v, n in zip(line, widths)) + f" {line[-1]}"
                           for line in lines))

    def delete(self) -> bool:
        listed = {g.group_id: g for g in self._listed()}
        wanted = list(dict.fromkeys(listed if self.o["all_groups"] else self.o["group"]))
        failed: dict[str, str] = {}
        for group in wanted:
            g = listed.get(group)
            if g is None:
                failed[group] = java_exception(ErrorCode.GROUP_ID_NOT_FOUND, f"Group '{group}' is not a share group.")
            elif g.state == "Dead":
                failed[group] = f"java.lang.IllegalStateException: Share group '{group}' group state is DEAD."
            elif g.state not in (None, "Empty"):
                failed[group] = java_exception(ErrorCode.NON_EMPTY_GROUP, f"Share group '{group}' is not EMPTY.")
        rest = [g for g in wanted if g not in failed]
        succeeded = []
        for group, error in (self.admin.delete_groups(rest) if rest else {}).items():
            if error:
                failed[group] = java_exception(error)
            else:
                succeeded.append(group)

        def names(groups) -> str:
            return ", ".join(f"'{g}'" for g in java_hashmap_order(list(groups), java_string_hash))
        if not failed:
            click.echo(f"Deletion of requested share groups ({names(succeeded)}) was successful.")
            return False
        _err("Deletion of some share groups failed:")
        for group in java_hashmap_order(list(failed), java_string_hash):
            click.echo(f"* Group '{group}' could not be deleted due to: {failed[group]}")
        if succeeded:
            click.echo(f"\nThese share groups were deleted successfully: {names(succeeded)}")
        return True

    def delete_offsets(self) -> bool:
        group, topics = self.o["group"][0], list(dict.fromkeys(self.o["topics"]))
        body = self.admin.delete_share_group_offsets(group, topics)
        results: dict[str, str | None] = {}
        if body.error_code:
            message = body.error_message or ErrorCode(body.error_code).description
            _err(message)
            results = {t: message for t in topics}
        else:
            answered = {r.topic_name: r for r in body.responses}
            for t in topics:
                r = answered.get(t)
                results[t] = None if r is None or not r.error_code else \
                    (r.error_message or ErrorCode(r.error_code).description)
        width = max([15] + [len(t) for t in results])
        lines = [("TOPIC", "STATUS")] + [(t, "Successful" if e is None else f"Error: {e}")
                                         for t, e in sorted(results.items())]
        click.echo("".join(f"\n{_pad(a, width)} {b}" for a, b in lines))
        return bool(body.error_code)        # a topic's error is its status line, as Kafka (exit 0)

    def reset_offsets(self, when: int | None) -> None:
        group = self.o["group"][0]
        d = self.admin.describe_share_group(group)
        if d.error_code and d.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
            raise Failed(d.error_message or ErrorCode(d.error_code).description)
        if not d.error_code and d.group_state not in ("Empty", "Dead"):
            raise Failed(f"Share group '{group}' is not empty.")
        current = {(t.topic_name, p.partition_index): p.start_offset
                   for t in self.admin.list_share_group_offsets(group).topics for p in t.partitions}
        partitions = self._partitions(current)
        if self.o["to_current"]:
            plan = {tp: current.get(tp, -1) for tp in partitions}
        elif self.o["to_offset"] is not None:
            earliest, latest = self._log_offsets(partitions, EARLIEST), self._log_offsets(partitions, LATEST)
            plan = {tp: min(max(self.o["to_offset"], earliest[tp]), latest[tp]) for tp in partitions}
        else:
            spec = EARLIEST if self.o["to_earliest"] else LATEST if self.o["to_latest"] else when
            plan = self._log_offsets(partitions, spec)
            if when is not None:            # no record at or after it: the log end (resetToDateTime)
                latest = self._log_offsets([tp for tp, o in plan.items() if o < 0], LATEST)
                plan = {tp: latest.get(tp, o) if o < 0 else o for tp, o in plan.items()}
        if self.o["execute"]:
            body = self.admin.alter_share_group_offsets(group, plan)
            if body.error_code:
                raise KafkaError(body.error_message or ErrorCode(body.error_code).description,
                                 error_code=body.error_code)
        click.echo(groups_reset_text({group: sorted(plan.items())}), nl=False)

    def _partitions(self, current: dict) -> list[tuple[str, int]]:
        if self.o["all_topics"]:
            return sorted(current)
        out = []
        for arg in self.o["topics"]:
            if ":" in arg:
                out += parse_topic_arg(arg)
                continue
            topic = self.admin.metadata([arg]).topics.get(arg)
            if topic is None or topic.error:
                raise Failed(f"Executing share group command failed due to "
                             f"{java_exception(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}")
            out += [(arg, p.partition) for p in topic.partitions]
        return sorted(dict.fromkeys(out))

    def _log_offsets(self, partitions, spec: int) -> dict:
        listed = self.admin.list_offsets({tp: spec for tp in partitions}) if partitions else {}
        return {tp: r.offset for tp, r in listed.items()}
