"""``kproto groups``: kafka-consumer-groups.sh (ConsumerGroupCommand, Kafka 4.4,
diffed against its tool by tests/parity/test_kafka_ref_tools.py) over kproto's
admin client.

Flags, output and messages are Kafka's: the column layouts and widths, the
``-`` for a missing value, the CSV of ``--export``, and the order Kafka prints
rows in (several of its maps are ``java.util.HashMap``s keyed by
TopicPartition or group id; ``kproto.jvm.java_hashmap_order`` reproduces that).
stdout carries what Kafka prints on stdout minus its ``\\nError: ...`` lines
and warnings: those, and Kafka's stderr notices, are one line each on stderr.

Differences, all on purpose:
- Errors exit 1 (Kafka exits 0 after most of them); bad flags exit 2 with
  one line (Kafka prints its usage and exits 1). Flag values Kafka only
  checks once connected (scope, scenario, ``--to-datetime``, ``--by-duration``,
  ``topic:partitions``) are checked before connecting.
- Log end offsets the broker cannot give print ``-`` (Kafka aborts).
- ``--delete-offsets`` exits 1 when the group or a partition failed (Kafka: 0).
- ``--output table|json|yaml`` and ``KPROTO_BOOTSTRAP_SERVER`` are kproto's.

The consumer protocol's assignment bytes are read with
``kproto.schemas.consumer_offsets.ConsumerProtocolAssignment``.
"""

from __future__ import annotations

import sys
import time
from typing import Iterable

import click

from kproto import __version__
from kproto.errors import java_exception
from kproto.jvm import java_hashmap_order, java_string_hash, topic_partition_hash
from kproto.tools.groups import text as groups_text
from kproto.tools.groups.args import (
    GroupCommandFailed, Plan, TopicPartition, decode_assignment, parse_datetime, parse_duration_ns,
    parse_reset_plan, parse_states, parse_topic_arg, parse_types, topic_partition,
)
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

#: KafkaAdminClient's TimeoutException when describeConsumerGroups' deadline (--timeout) passes
#: before its FindCoordinator step has a node (measured on Kafka 4.4 with --timeout 1).
DESCRIBE_TIMED_OUT = ("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
                      "Call: describeConsumerGroups(api=FIND_COORDINATOR)")
ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
#: allResetOffsetScenarioOpts, by flag name, in the order checkArgs checks them.
SCENARIOS = ("to-offset", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current", "shift-by",
             "from-file")
#: ConsumerGroupState names (parse is case-insensitive), Unknown left out as Kafka's message does.
REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})
INACTIVE = frozenset({"Empty", "Dead"})
CONSUMER_PROTOCOL = "consumer"
#: Kafka 4.4's text (measured; 3.x said "missing.In a future major release, the default behavior ...").
DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing. In version 5.0, this command will "
    "require either --dry-run or --execute to be specified. You should add the --dry-run option explicitly if "
    "you are scripting this command and want to keep the current default behavior without prompting.")

class ResetAborted(Exception):
    """A reset Kafka abandons with its usage message (printUsageAndExit): the
    message alone, exit status 1 (the flags were fine; the data was not)."""


# --- pure parts ----------------------------------------------------------------------

def spec_order(names: Iterable[str]) -> list[str]:
    """The iteration order of a ``HashSet<OptionSpec>``: joptsimple hashes a
    spec as ``List.hashCode`` of its one name, ``31 + name.hashCode()``."""
    return java_hashmap_order(list(names), lambda n: 31 + java_string_hash(n))


EPILOG = exit_status_help('the command failed, a group could not be acted on or an offset not deleted '
                          '(one line "Error: ..." on stderr per problem)') + """

\b
Reset offsets: scope --all-topics or --topic T[:P,P] (repeatable); scenario
--to-earliest, --to-latest, --to-current, --to-offset N, --shift-by N,
--to-datetime YYYY-MM-DDTHH:mm:SS.sss, --by-duration PnDTnHnMnS or
--from-file CSV; a dry run (the plan) unless --execute; --export prints the
plan as CSV. Only groups that are Empty or Dead can be reset.

\b
Delete offsets: --delete-offsets --group G --topic T[:P,P] (repeatable); a
group with members keeps the offsets of topics it subscribes to.

\b
Extensions to kafka-consumer-groups.sh: --output table|json|yaml;
KPROTO_BOOTSTRAP_SERVER."""


@click.command("groups", cls=OneLineCommand, epilog=EPILOG,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="REQUIRED: The server(s) to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option("--describe", is_flag=True,
              help="Describe consumer group and list offset lag (number of messages not yet processed).")
@click.option("--delete", is_flag=True, help="Pass in groups to delete topic partition offsets and ownership "
              "information over the entire consumer group.")
@click.option("--reset-offsets", is_flag=True, help="Reset offsets of consumer group (inactive groups only).")
@click.option("--delete-offsets", is_flag=True, help="Delete offsets of consumer group. Supports one consumer "
              "group at a time, and multiple topics.")
@click.option("--group", "groups_", multiple=True, metavar="GROUP", help="The consumer group we wish to act on.")
@click.option("--all-groups", is_flag=True, help="Apply to all consumer groups.")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC[:P,...]",
              help="With --reset-offsets or --delete-offsets: a topic, or topic:0,1,2 for some of its "
                   "partitions (repeatable).")
@click.option("--all-topics", is_flag=True, help="Consider all topics assigned to a group in the reset-offsets process.")
@click.option("--members", is_flag=True, help="Describe members of the group.")
@click.option("--verbose", is_flag=True, help="With --members: show each member's assignment.")
@click.option("--offsets", is_flag=True, help="Describe the group's partitions with their offset lag (the default).")
@click.option("--state", is_flag=False, flag_value="", default=None, metavar="[STATES]",
              help="With --describe: the group's state. With --list: the states of all groups, "
                   "or only those in STATES (e.g. stable,empty).")
@click.option("--type", "type_", is_flag=False, flag_value="", default=None, metavar="[TYPES]",
              help="With --list: the type of every group, or only groups of TYPES (consumer, classic).")
@click.option("--dry-run", is_flag=True, help="Only show results without executing changes (the default).")
@click.option("--execute", is_flag=True, help="Execute operation. Supported operations: reset-offsets.")
@click.option("--export", is_flag=True, help="Export operation execution to a CSV format.")
@click.option("--to-offset", type=int, help="Reset offsets to a specific offset.")
@click.option("--to-earliest", is_flag=True, help="Reset offsets to earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset offsets to latest offset.")
@click.option("--to-current", is_flag=True, help="Reset offsets to current offset.")
@click.option("--shift-by", type=int, help="Reset offsets shifting current offset by 'n' (positive or negative).")
@click.option("--to-datetime", metavar="DATETIME", help="Reset offsets to offset from datetime. "
              "Format: 'YYYY-MM-DDTHH:mm:SS.sss'")
@click.option("--by-duration", metavar="DURATION", help="Reset offsets to offset by duration from current "
              "timestamp. Format: 'PnDTnHnMnS'")
@click.option("--from-file", type=click.Path(dir_okay=False), help="Reset offsets to values defined in CSV file.")
@click.option("--timeout", type=int, metavar="MS", help="Request timeout in milliseconds.")
@click.version_option(__version__, "--version", message="%(version)s",     # Kafka: AppInfoParser.getVersion
                      help="Display the version and exit.")
@click.option("--output", "output", type=click.Choice(["text", "table", "json", "yaml"]), default="text",
              show_default=True, help="text is kafka-consumer-groups.sh's output.")
def groups(**opts) -> None:
    """List, describe, delete consumer groups and reset their offsets (kafka-consumer-groups.sh)."""
    opts["list"] = opts.pop("list_")
    opts["type"] = opts.pop("type_")
    given = opts.pop("groups_")
    if opts["delete_offsets"] and len(given) > 1:   # OptionSet.valueOf on a repeated --group
        raise UsageProblem("Error: Executing consumer group command failed due to Found multiple arguments for "
                           "option group, but you asked for only one")
    opts["group"] = list(dict.fromkeys(given))
    check_args(opts)
    from kproto.errors import KafkaError, KprotoError
    try:
        failed = run(opts)
    except GroupCommandFailed as e:
        _fail(str(e))
    except ResetAborted as e:
        notice(str(e))
        sys.exit(ExitStatus.ERROR)
    except KafkaError as e:   # a request-level error: Kafka's Admin raises the matching exception
        _fail(java_exception(e.error_code, str(e)))
    except (KprotoError, OSError) as e:   # connection and protocol errors
        _fail(str(e))
    sys.stdout.flush()
    sys.exit(ExitStatus.ERROR if failed else ExitStatus.OK)


def _fail(message: str) -> None:
    error(f"Executing consumer group command failed due to {message}")
    sys.exit(ExitStatus.ERROR)


def error(message: str) -> None:
    """Kafka's printError line (``\\nError: ...`` on its stdout), one line on stderr."""
    notice(f"Error: {message}")


def notice(message: str) -> None:
    sys.stdout.flush()
    click.echo(message, err=True)


def _option(name: str) -> str:
    return f"[{name}]"


def _one_of(option: str, names: Iterable[str]) -> UsageProblem:
    return UsageProblem(f"Option {_option(option)} takes one of these options: "
                        + ", ".join(_option(n) for n in spec_order(names)))


def _check_invalid(o: dict, used: str, others: Iterable[str]) -> None:
    """CommandLineUtils.checkInvalidArgs, over a HashSet of other options."""
    if not _given(o, used):
        return
    for other in spec_order(others):
        if _given(o, other):
            raise UsageProblem(f'Option "{_option(used)}" can\'t be used with option "{_option(other)}"')


def _given(o: dict, flag: str) -> bool:
    value = o["topics" if flag == "topic" else flag.replace("-", "_")]
    return value not in (None, False, [], ())


def check_args(o: dict) -> None:
    """ConsumerGroupCommandOptions.checkArgs, then main's one-action check,
    in Kafka's order and words; plus the checks Kafka makes once connected."""
    if not o["bootstrap_server"]:
        raise UsageProblem('Missing required argument "[bootstrap-server]"')
    for flag, allowed in (("members", ("describe",)), ("verbose", ("describe",)), ("offsets", ("describe",)),
                          ("state", ("describe", "list")), ("type", ("list",))):
        if _given(o, flag) and not any(o[a] for a in allowed):   # joptsimple availableIf
            raise UsageProblem(f"Option(s) {_option(flag)} are unavailable given other options on the command line")
    selection = ("group", "all-groups")
    if o["describe"]:
        if not o["group"] and not o["all_groups"]:
            raise _one_of("describe", selection)
        if sum(_given(o, f) for f in ("members", "offsets", "state")) > 1:
            raise UsageProblem("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if o["state"]:
            raise UsageProblem("Option [describe] does not take a value for [state]")
    if o["delete"]:
        if not o["group"] and not o["all_groups"]:
            raise _one_of("delete", selection)
        if o["topics"]:
            raise UsageProblem("The consumer does not support topic-specific offset deletion from a consumer group.")
    if o["delete_offsets"] and (not o["group"] or not o["topics"]):
        raise UsageProblem("Option [delete-offsets] takes the following options: [group], [topic]")
    if o["reset_offsets"]:
        if o["dry_run"] and o["execute"]:
            raise UsageProblem("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not o["dry_run"] and not o["execute"]:
            notice(DRY_RUN_WARNING)
        if not o["group"] and not o["all_groups"]:
            raise _one_of("reset-offsets", selection)
        for scenario in SCENARIOS:
            _check_invalid(o, scenario, [s for s in SCENARIOS if s != scenario])
    _check_invalid(o, "group", ["all-groups"])
    _check_invalid(o, "group", ["list"])
    _check_invalid(o, "topic", ["list", "describe"])
    if sum(bool(o[a]) for a in ACTIONS) != 1:
        raise UsageProblem("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                           "--delete-offsets")
    if o["delete_offsets"]:
        for arg in o["topics"]:
            if ":" in arg:
                parse_topic_arg(arg)
    if o["list"] and o["state"]:
        parse_states(o["state"])
    if o["reset_offsets"]:
        if not any(_given(o, s) for s in SCENARIOS):
            raise UsageProblem("Option '[reset-offsets]' requires one of the following scenarios: ["
                               + ", ".join(_option(s) for s in spec_order(SCENARIOS)) + "]")
        if not o["all_topics"] and not o["topics"] and not o["from_file"]:
            raise UsageProblem("One of the reset scopes should be defined: --all-topics, --topic.")
        for arg in o["topics"]:
            if ":" in arg:
                parse_topic_arg(arg)
        if o["to_datetime"] is not None:
            parse_datetime(o["to_datetime"])
        if o["by_duration"] is not None:
            parse_duration_ns(o["by_duration"])


def run(o: dict) -> bool:
    """Carry out the action; True when some group could not be acted on."""
    from kproto.client.transport import BrokerConnectionError, load_client_properties
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    plan_file = None
    if o["reset_offsets"] and o["from_file"]:
        try:
            with open(o["from_file"], encoding="utf-8") as f:
                plan_file = f.read()
        except OSError as e:
            raise GroupCommandFailed(f"java.nio.file.NoSuchFileException: {o['from_file']}"
                                     if isinstance(e, FileNotFoundError) else f"{o['from_file']}: {e.strerror}")
    timeout = o["timeout"] / 1000 if o["timeout"] else None
    # Kafka's Admin call fails once --timeout has passed since it began, connecting included.
    deadline = time.monotonic() + timeout if timeout else None
    try:
        return _run(o, config, plan_file, timeout, deadline)
    except BrokerConnectionError:
        if o["describe"] and deadline is not None and time.monotonic() > deadline:
            raise GroupCommandFailed(DESCRIBE_TIMED_OUT) from None
        raise


def _run(o: dict, config, plan_file: str | None, timeout: float | None, deadline: float | None) -> bool:
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    with BrokerClient(o["bootstrap_server"], config=config, timeout_s=timeout) as client:
        admin = Admin(client)
        try:
            service = ConsumerGroupService(admin, o, plan_file, deadline)
            if o["list"]:
                service.list_groups()
            elif o["describe"]:
                service.describe_groups()
            elif o["delete"]:
                service.delete_groups()
            elif o["delete_offsets"]:
                service.delete_offsets()
            else:
                service.reset_offsets()
            return service.failed
        finally:
            admin.close()


class ConsumerGroupService:
    """ConsumerConsumerGroupService: one action over an ``Admin``. Per-group problems
    print an ``Error:`` line and set ``failed``; others raise."""

    def __init__(self, admin, opts: dict, plan_file: str | None = None, deadline: float | None = None) -> None:
        self.admin = admin
        self.deadline = deadline
        self.o = opts
        self.plan_file = plan_file
        self.failed = False

    def error(self, message: str) -> None:
        self.failed = True
        error(message)

    def committed(self, group: str) -> dict:
        """listConsumerGroupOffsets: partitions with an error are left out, as Kafka's Admin does."""
        from kproto.errors import ErrorCode
        return {tp: o for tp, o in self.admin.offset_fetch(group).items() if o.error == ErrorCode.NONE}

    # -- listing ------------------------------------------------------------------

    def consumer_groups(self) -> list:
        """listConsumerGroups: groups of the consumer protocol, or of none (a
        group that only ever committed offsets)."""
        return [g for g in self.admin.list_groups() if g.protocol_type in (CONSUMER_PROTOCOL, "")]

    def group_ids(self) -> list[str]:
        return [g.group_id for g in self.consumer_groups()] if self.o["all_groups"] else list(self.o["group"])

    def list_groups(self) -> None:
        """--list; with --state and/or --type the table of listConsumerGroupsWithFilters
        (printGroupInfo: GROUP, then TYPE, then STATE)."""
        listed = self.consumer_groups()
        with_type, with_state = self.o["type"] is not None, self.o["state"] is not None
        if not with_type and not with_state:
            names = [g.group_id for g in listed]
            emit("list", names, self.o, groups_text.groups_list_text(names))
            return
        states = parse_states(self.o["state"]) if self.o["state"] else None
        types = parse_types(self.o["type"]) if self.o["type"] else None
        kind = "list_type_state" if with_type and with_state else "list_type" if with_type else "list_state"
        rows = [{"group": g.group_id, "type": (g.group_type or "unknown").capitalize(), "state": g.state or "Unknown"}
                for g in listed]
        rows = [{k: r[k] for k, _ in groups_text.GROUPS_COLUMNS[kind]} for r in rows
                if (states is None or r["state"] in states) and (types is None or r["type"] in types)]
        emit(kind, rows, self.o, groups_text.groups_list_text(rows, kind=kind))

    # -- describe -------------------------------------------------------------------

    def describe(self, ids: list[str], *, missing_is_dead: bool = False) -> dict:
        """describeConsumerGroups: group id -> GroupDescription (ConsumerGroupDescribe, then
        DescribeGroups for a classic group). A group the coordinator does not know
        (GROUP_ID_NOT_FOUND, DescribeGroups v6+) fails
        the command as Kafka 4.4's Admin does, or with ``missing_is_dead`` is
        reported Dead (resetOffsets resets such a group)."""
        from kproto.client.admin import GroupDescription
        from kproto.errors import ErrorCode
        if self.deadline is not None:
            self.find_coordinators_within_deadline(ids)
        out = {}
        for gid, d in self.admin.describe_consumer_groups(ids).items():
            if d.error == ErrorCode.GROUP_ID_NOT_FOUND and missing_is_dead:
                d = d._replace(state="Dead", error=ErrorCode.NONE)
            if d.error != ErrorCode.NONE:
                raise GroupCommandFailed(java_exception(d.error, d.error_message))
            if d.protocol_type not in (CONSUMER_PROTOCOL, ""):
                raise GroupCommandFailed(f"java.lang.IllegalArgumentException: GroupId {gid} is not a consumer "
                                         f"group ({d.protocol_type}).")
            out[gid] = d
        for gid in ids:     # a group the broker did not answer for is one it does not know
            out.setdefault(gid, GroupDescription(gid, ErrorCode.NONE, "Dead", "", "", ()))
        return out

    def find_coordinators_within_deadline(self, ids: list[str]) -> None:
        """describeConsumerGroups' first step, FindCoordinator for each group, done
        before --timeout has passed, or Kafka's TimeoutException."""
        from kproto.errors import KafkaError
        try:
            for gid in ids:
                self.admin.coordinator(gid)
        except KafkaError:
            if time.monotonic() <= self.deadline:
                raise
        if time.monotonic() > self.deadline:
            raise GroupCommandFailed(DESCRIBE_TIMED_OUT)

    def should_print(self, group: str, state: str, rows: int) -> bool:
        """shouldPrintMemberState: the state's notice; whether there is a table."""
        if state == "Dead":
            self.error(f"Consumer group '{group}' does not exist.")
        elif state == "Empty":
            notice(f"\nConsumer group '{group}' has no active members.")    # Kafka's blank line first
        elif state in REBALANCING:
            notice(f"\nWarning: Consumer group '{group}' is rebalancing.")
        elif state != "Stable":
            raise GroupCommandFailed(f"org.apache.kafka.common.KafkaException: Expected a valid consumer group "
                                     f"state, but found '{state}'.")
        return state != "Dead" and rows > 0

    def describe_groups(self) -> None:
        ids = sorted(self.group_ids())                       # Kafka collects into a TreeMap
        described = self.describe(ids) if ids else {}
        kind = "members" if self.o["members"] else "state" if self.o["state"] is not None else "offsets"
        rows_all, text = [], []
        for gid in ids:
            d = described[gid]
            if kind == "offsets":
                rows = self.offset_rows(gid, d)
                if self.should_print(gid, d.state, len(rows)):
                    text.append(groups_text.groups_offsets_text(rows, verbose=self.o["verbose"]))
                    rows_all += rows
            elif kind == "members":
                rows = [member_row(gid, m, d.assignment_epoch) for m in d.members]
                if not self.should_print(gid, d.state, len(rows)):
                    rows = []
                text.append(groups_text.groups_members_text(rows, verbose=self.o["verbose"]))   # Kafka prints the header regardless
                rows_all += rows
            elif self.should_print(gid, d.state, 1):
                c = self.admin.find_coordinator(gid)
                row = {"group": gid, "coordinator": {"id": c.node_id, "host": c.host, "port": c.port},
                       "assignment_strategy": d.protocol, "state": d.state,
                       "group_epoch": d.group_epoch, "target_assignment_epoch": d.assignment_epoch,
                       "members": len(d.members)}
                text.append(groups_text.groups_state_text(row, verbose=self.o["verbose"]))
                rows_all.append(row)
        emit(kind, rows_all, self.o, "".join(text))

    def offset_rows(self, group: str, d) -> list[dict]:
        """collectGroupOffsets: members with partitions (most partitions first),
        then committed partitions no member owns; each block sorted by topic,
        then partition (describePartitions)."""
        from kproto.client.admin import LATEST
        from kproto.errors import ErrorCode
        committed = self.committed(group)
        members = [(m, member_partitions(m)) for m in d.members]
        members = sorted([x for x in members if x[1]], key=lambda x: -len(x[1]))
        assigned = {tp for _, tps in members for tp in tps}
        unassigned = [tp for tp in committed if tp not in assigned]
        wanted = list(assigned) + unassigned
        listed = self.admin.list_offsets({tp: LATEST for tp in wanted}) if wanted else {}
        ends = {tp: r.offset for tp, r in listed.items() if r.error == ErrorCode.NONE}
        blocks = [(tps, m.member_id, m.client_host, m.client_id) for m, tps in members]
        if unassigned:
            blocks.append((unassigned, None, None, None))
        rows = []
        for tps, member, host, client in blocks:
            for tp in sorted(tps):
                current = committed[tp].offset if tp in committed else None
                epoch = committed[tp].leader_epoch if tp in committed else -1
                end = ends.get(tp)
                rows.append({"group": group, "topic": tp[0], "partition": tp[1],
                             "leader_epoch": None if epoch == -1 else epoch, "current_offset": current,
                             "log_end_offset": end,
                             "lag": end - current if end is not None and current not in (None, -1) else None,
                             "consumer_id": member, "host": host, "client_id": client})
        return rows

    # -- delete -----------------------------------------------------------------------

    def delete_groups(self) -> None:
        from kproto.errors import ErrorCode
        ids = self.group_ids()
        results = self.admin.delete_groups(ids) if ids else {}
        order = java_hashmap_order(list(results), java_string_hash)      # Kafka's HashMaps of group id
        done = [g for g in order if results[g] == ErrorCode.NONE]
        failed = [g for g in order if results[g] != ErrorCode.NONE]
        rows = [{"group": g, "error": None if results[g] == ErrorCode.NONE else java_exception(results[g])}
                for g in order]
        quoted = ", ".join(f"'{g}'" for g in done)
        if not failed:
            text = f"Deletion of requested consumer groups ({quoted}) was successful.\n"
        else:
            self.error("Deletion of some consumer groups failed:")
            text = "".join(f"* Group '{g}' could not be deleted due to: {java_exception(results[g])}\n"
                           for g in failed)
            text += f"\nThese consumer groups were deleted successfully: {quoted}\n" if done else ""
        emit("delete", rows, self.o, text)

    # -- delete offsets -------------------------------------------------------------

    def delete_offsets(self) -> None:
        """ConsumerGroupService.deleteOffsets: ``topic:P,P`` arguments name their
        partitions, a bare topic means all of its partitions (a topic the broker does
        not know is a ``-`` row with its error); the verdict line, then one row per
        partition sorted by topic + partition as one string, as Kafka sorts them."""
        from kproto.errors import ErrorCode
        group = self.o["group"][0]
        partitions = [tp for arg in self.o["topics"] if ":" in arg for tp in parse_topic_arg(arg)]
        failed_topics: dict[TopicPartition, str] = {}
        whole = list(dict.fromkeys(arg for arg in self.o["topics"] if ":" not in arg))
        if whole:
            md = self.admin.metadata(whole)
            for topic in whole:
                t = md.topics.get(topic)
                if t is None or t.error != ErrorCode.NONE:
                    failed_topics[(topic, -1)] = java_exception(t.error if t else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    partitions += [(topic, p.partition) for p in t.partitions]
        top, results = self.admin.delete_offsets(group, partitions) if partitions else (ErrorCode.NONE, {})
        if top == ErrorCode.NONE:       # DeleteConsumerGroupOffsetsResult.all(): the first partition's error
            top = next((results[tp] for tp in _hash_order(results) if results[tp] != ErrorCode.NONE), top)
        statuses = {**failed_topics, **{tp: None if e == ErrorCode.NONE else java_exception(e)
                                        for tp, e in results.items()}}
        if top == ErrorCode.NONE:
            text = f"Request succeeded for deleting offsets from group {group}.\n"
        elif top in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                     ErrorCode.NON_EMPTY_GROUP):
            self.error(top.description)
            text = ""
        elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            self.error("Encountered some partition-level error, see the follow-up details.")
            text = ""
        else:
            self.error(f"Encountered some unknown error: {top.name}")
            text = ""
        self.failed = self.failed or any(statuses.values())
        rows = [{"group": group, "topic": t, "partition": None if p < 0 else p,
                 "status": "Successful" if statuses[(t, p)] is None else f"Error: {statuses[(t, p)]}"}
                for t, p in sorted(statuses, key=lambda tp: f"{tp[0]}{tp[1]}")]
        emit("delete_offsets", rows, self.o, text + groups_text.groups_delete_offsets_text(rows))

    # -- reset offsets --------------------------------------------------------------

    def reset_offsets(self) -> None:
        from kproto.client.admin import OffsetAndMetadata
        from kproto.errors import ErrorCode
        ids = self.group_ids()
        described = self.describe(ids, missing_is_dead=True) if ids else {}
        plans: dict[str, Plan] = {}
        for gid in java_hashmap_order(ids, java_string_hash):   # Kafka's HashMap of group id
            state = described[gid].state
            if state not in INACTIVE:
                self.error(f"Assignments can only be reset if the group '{gid}' is inactive, "
                           f"but the current state is {state}.")
                plans[gid] = {}
                continue
            plan = self.prepare(gid, self.partitions_to_reset(gid))
            if self.o["execute"] and plan:
                results = self.admin.offset_commit(gid, {tp: OffsetAndMetadata(o) for tp, o in plan.items()})
                for code in results.values():
                    if code != ErrorCode.NONE:
                        raise GroupCommandFailed(f"java.util.concurrent.ExecutionException: {java_exception(code)}")
            plans[gid] = plan
        ordered = {g: [(tp, plans[g][tp]) for tp in _hash_order(plans[g])]
                   for g in java_hashmap_order(list(plans), java_string_hash)}
        if self.o["export"]:
            sys.stdout.write(groups_text.groups_export_csv(ordered, with_group=len(self.o["group"]) != 1))
            return
        rows = [{"group": g, "topic": t, "partition": p, "new_offset": o}
                for g, entries in ordered.items() for (t, p), o in entries]
        emit("reset", rows, self.o, groups_text.groups_reset_text(ordered))

    def partitions_to_reset(self, group: str) -> list[TopicPartition]:
        from kproto.errors import ErrorCode
        if self.o["all_topics"]:
            return list(self.committed(group))
        if not self.o["topics"]:
            return []                                          # --from-file: the file's partitions
        named = [tp for arg in self.o["topics"] if ":" in arg for tp in parse_topic_arg(arg)]
        whole = [arg for arg in self.o["topics"] if ":" not in arg]
        if whole:
            md = self.admin.metadata(whole)
            for topic in whole:
                t = md.topics.get(topic)
                if t is None or t.error != ErrorCode.NONE:
                    raise GroupCommandFailed(java_exception(t.error if t else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                named += [(topic, p.partition) for p in t.partitions]
        return named

    def log_offsets(self, tps: Iterable[TopicPartition], spec: int) -> dict[TopicPartition, int]:
        """ListOffsets; partitions without an answer are left out (Kafka's Unknown)."""
        from kproto.errors import ErrorCode
        tps = list(tps)
        if not tps:
            return {}
        return {tp: r.offset for tp, r in self.admin.list_offsets({tp: spec for tp in tps}).items()
                if r.error == ErrorCode.NONE}

    def prepare(self, group: str, partitions: list[TopicPartition]) -> Plan:
        """prepareOffsetsToReset for one scenario."""
        from kproto.client.admin import EARLIEST, LATEST
        o = self.o
        if o["to_offset"] is not None:
            return self.check_range({tp: o["to_offset"] for tp in partitions})
        if o["to_earliest"] or o["to_latest"]:
            found = self.log_offsets(partitions, EARLIEST if o["to_earliest"] else LATEST)
            for tp in partitions:
                if tp not in found:
                    raise ResetAborted(f"Error getting {'starting' if o['to_earliest'] else 'ending'} "
                                             f"offset of topic partition: {topic_partition(tp)}")
            return {tp: found[tp] for tp in partitions}
        if o["shift_by"] is not None:
            committed = self.committed(group)
            for tp in partitions:
                if tp not in committed:
                    raise ResetAborted(f"Cannot shift offset for partition {topic_partition(tp)} "
                                             "since there is no current committed offset")
            return self.check_range({tp: committed[tp].offset + o["shift_by"] for tp in partitions})
        if o["to_datetime"] is not None or o["by_duration"] is not None:
            if o["to_datetime"] is not None:
                stamp = parse_datetime(o["to_datetime"])
            else:
                stamp = (time.time_ns() - parse_duration_ns(o["by_duration"])) // 1_000_000
            return self.timestamp_offsets(partitions, stamp)
        if o["from_file"]:
            plan = parse_reset_plan(self.plan_file or "", o["group"]).get(group)
            if plan is None:
                self.error(f"No reset plan for group {group} found")
                return {}
            return self.check_range(plan)
        # --to-current: the committed offset, or the log end where there is none
        committed = self.committed(group)
        rest = [tp for tp in partitions if tp not in committed]
        ends = self.log_offsets(rest, LATEST)
        for tp in rest:
            if tp not in ends:
                raise ResetAborted(f"Error getting ending offset of topic partition: {topic_partition(tp)}")
        return {tp: committed[tp].offset if tp in committed else ends[tp] for tp in partitions}

    def timestamp_offsets(self, partitions: list[TopicPartition], stamp: int) -> Plan:
        """getLogTimestampOffsets: the first offset at or after ``stamp``; the
        log end where no record is that recent (Kafka warns about each)."""
        from kproto.client.admin import LATEST
        found = self.log_offsets(partitions, stamp)
        plan = {tp: off for tp, off in found.items() if off != -1}
        late = [tp for tp in partitions if tp not in plan]
        for t, p in _hash_order(late):
            notice(f"Warn: Partition {p} from topic {t} is empty. Falling back to latest known offset.")
        ends = self.log_offsets(late, LATEST)
        for tp in late:
            if tp not in ends:
                raise ResetAborted(f"Error getting offset by timestamp of topic partition: {topic_partition(tp)}")
            plan[tp] = ends[tp]
        return {tp: plan[tp] for tp in partitions}

    def check_range(self, requested: Plan) -> Plan:
        """checkOffsetsRange: clamp into [log start, log end], with Kafka's warnings."""
        from kproto.client.admin import EARLIEST, LATEST
        starts = self.log_offsets(requested, EARLIEST)
        ends = self.log_offsets(requested, LATEST)
        out = {}
        for tp in _hash_order(requested):                   # Kafka walks a HashMap
            offset = requested[tp]
            if tp in ends and offset > ends[tp]:
                notice(f"WARN New offset ({offset}) is higher than latest offset for topic partition "
                       f"{topic_partition(tp)}. Value will be set to {ends[tp]}")
                offset = ends[tp]
            elif tp in starts and offset < starts[tp]:
                notice(f"WARN New offset ({offset}) is lower than earliest offset for topic partition "
                       f"{topic_partition(tp)}. Value will be set to {starts[tp]}")
                offset = starts[tp]
            out[tp] = offset
        return out


def _hash_order(tps: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The iteration order of a Java HashMap keyed by these TopicPartitions."""
    return java_hashmap_order(list(tps), topic_partition_hash)


def member_partitions(m) -> list[TopicPartition]:
    """A member's assigned partitions: a KIP-848 member's as described, a classic
    member's from its consumer protocol assignment bytes."""
    return list(m.assigned) if m.assigned is not None else decode_assignment(m.assignment)


def _by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    return {t: sorted(v) for t, v in sorted(out.items())}


def member_row(group: str, m, target_epoch: int | None = None) -> dict:
    """One member for --members: its partitions as topic -> sorted partitions. A
    classic group's member has no epoch and no target assignment ("-"); a KIP-848
    member has its epoch, the group's target assignment epoch and its target."""
    assignment = _by_topic(member_partitions(m))
    return {"group": group, "consumer_id": m.member_id, "group_instance_id": m.group_instance_id,
            "host": m.client_host, "client_id": m.client_id,
            "partitions": sum(len(v) for v in assignment.values()), "current_epoch": m.member_epoch,
            "assignment": assignment, "target_epoch": target_epoch,
            "target_assignment": _by_topic(m.target or ())}


def emit(kind: str, rows: list, o: dict, text: str) -> None:
    """``text`` (Kafka's exact output) or ``rows`` as a table, JSON or YAML."""
    from kproto.tools.render import structured_output
    fmt = o["output"]
    if fmt == "table":
        groups_text.groups_table(kind, rows)
    elif fmt == "text":
        sys.stdout.write(text)
    else:
        sys.stdout.write(structured_output(rows, fmt) + "\n")
    sys.stdout.flush()
