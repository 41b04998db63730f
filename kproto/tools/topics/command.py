"""``kproto topics``: kafka-topics.sh (TopicCommand, Kafka 3.8+) over kproto's admin client.

Flags, output and error messages are Kafka's, so scripts written for
kafka-topics.sh keep working; ``--output`` adds a rich table, JSON and YAML.
Kafka prints its errors on stdout as ``Error while executing topic command :
<message>``; kproto prints the same line on stderr (stdout carries data only).

Extensions: ``--alter --config k=v`` and ``--delete-config k`` change topic
configs with IncrementalAlterConfigs (AlterConfigs of the merged dynamic
configs when the broker lacks it), where Kafka sends users to kafka-configs.sh.

Kafka's describe asks DescribeTopicPartitions when the broker has it and
Metadata otherwise (KafkaAdminClient.describeTopics); kproto lists and describes
with Metadata and, where the broker advertises DescribeTopicPartitions, takes
each partition's ``Elr``/``LastKnownElr`` from it as Kafka prints them
(TopicCommand.PartitionDescription.printDescription); without it they print ``N/A``.
"""

from __future__ import annotations

import functools
import os
import re
import sys

import click

from kproto.common import is_internal
from kproto.jvm import java_hashmap_order, java_string_hash
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

ACTIONS = ("create", "list", "alter", "describe", "delete")
REPORT_OPTIONS = ("under_replicated_partitions", "under_min_isr_partitions",
                  "at_min_isr_partitions", "unavailable_partitions")
CONFIGS_HINT = " (To alter topic configurations, the kafka-configs tool can be used.)"
TOPIC_RESOURCE = 2              # ConfigResource.Type.TOPIC
DYNAMIC_TOPIC_CONFIG = 1        # ConfigEntry.ConfigSource


class TopicCommandError(Exception):
    """A failure Kafka reports as ``Error while executing topic command : ...``."""



# --- pure parts ----------------------------------------------------------------------

def topic_pattern(raw: str) -> re.Pattern:
    """TopicFilter.IncludeList: trimmed, ``,`` read as ``|``, spaces and
    surrounding quotes dropped; a whole-name match."""
    regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|").replace(" ", "")))
    try:
        return re.compile(regex)
    except re.error:
        raise TopicCommandError(f"{regex} is an invalid regex.") from None


def select_topics(names, include: str | None, exclude_internal: bool) -> list[str]:
    """TopicCommand.getTopics: sorted, filtered by the regex and internal flag."""
    pattern = topic_pattern(include) if include is not None else None
    return [n for n in sorted(names)
            if (pattern is None or pattern.fullmatch(n)) and not (exclude_internal and is_internal(n))]


def ensure_topic_exists(found: list[str], requested: str | None, required: bool) -> None:
    if requested and required and not found:
        # TopicCommand.ensureTopicExists, measured against Kafka 4.4 (tests/parity/test_kafka_ref_tools.py)
        raise TopicCommandError(f"Topic '{requested}' does not exist as expected")


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``1:2,3:4`` -> {0: [1, 2], 1: [3, 4]} with Kafka's checks and messages."""
    out: dict[int, list[int]] = {}
    for i, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise TopicCommandError(f'For input string: "{part}"') from None
        dups = sorted({b for b in brokers if brokers.count(b) > 1})
        if dups:
            raise TopicCommandError("Partition replica lists may not contain duplicate entries: "
                                    + ",".join(map(str, dups)))
        out[i] = brokers
        if len(brokers) != len(out[0]):
            raise TopicCommandError(f"Partition {i} has different replication factor: "
                                    f"[{', '.join(map(str, brokers))}]")
    return out


def parse_configs(pairs: tuple[str, ...]) -> dict[str, str]:
    """parseTopicConfigsToBeAdded: ``k=v`` split on ``\\s*=\\s*`` (Java drops
    trailing empty parts), then validated like LogConfig.validate."""
    split = [[p for p in re.split(r"\s*=\s*", pair)] for pair in pairs]
    for parts in split:
        while parts and parts[-1] == "":
            parts.pop()
    if not all(len(parts) == 2 for parts in split):
        raise TopicCommandError('requirement failed: Invalid topic config: all configs to be added '
                                'must be in the format "key=val".')
    configs = {k.strip(): v.strip() for k, v in split}
    if configs:
        validate_configs(configs)
    return configs


def validate_configs(configs: dict[str, str]) -> None:
    from kproto.errors import KafkaError
    from kproto.topic_config import LogConfig
    try:
        LogConfig.validate(configs)
    except KafkaError as e:
        raise TopicCommandError(str(e)) from None


def error_message(code, message: str | None, *, topic: str, current: int | None = None,
                  requested: int | None = None) -> str:
    """Kafka's (KRaft controller's) text for the common failures, whatever the
    broker wrote (tansu says "Topic with this name already exists."); else the
    broker's message; else the error's default description, as Kafka's Admin."""
    from kproto.errors import ErrorCode
    code = ErrorCode(code)
    if code == ErrorCode.TOPIC_ALREADY_EXISTS:
        return f"Topic '{topic}' already exists."
    if code == ErrorCode.INVALID_PARTITIONS and current is not None and requested is not None:
        if requested == current:
            return f"Topic already has {current} partition(s)."
        if requested < current:
            return (f"The topic {topic} currently has {current} partition(s); "
                    f"{requested} would not be an increase.")
    if message:
        return message
    if code == ErrorCode.INVALID_TOPIC_EXCEPTION:
        from kproto.common import topic_name_problem
        problem = topic_name_problem(topic)
        if problem is not None:
            return f"Topic name is invalid: {problem}"
    return code.description


@functools.lru_cache(maxsize=4096)   # the same config names come back for every topic
def _string_hash(name: str) -> int:
    return java_string_hash(name)


def describe_order(names: list[str]) -> list[str]:
    """The order kafka-topics --describe prints topics in: Admin's
    describeTopics hands back a HashMap (built, copied, rebuilt)."""
    order = java_hashmap_order(names, _string_hash, initial_capacity=len(names))
    order = java_hashmap_order(order, _string_hash, copy=True)
    return java_hashmap_order(order, _string_hash, initial_capacity=len(names))


DESCRIBE_TOPIC_PARTITIONS = 75
LIST_PARTITION_REASSIGNMENTS = 46


def list_reassignments(admin, partitions: dict[str, list[int]]) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (replicas, adding, removing) of the reassignments under way
    (TopicService.listAllReassignments): none when the broker does not serve
    ListPartitionReassignments or refuses it for want of Describe on the cluster
    (UnsupportedVersionException / ClusterAuthorizationException); any other error fails."""
    from kproto.errors import ErrorCode, error_for
    if not partitions or not admin.client.supports(LIST_PARTITION_REASSIGNMENTS):
        return {}
    r = admin.client.request(LIST_PARTITION_REASSIGNMENTS, {
        "topics": [{"name": n, "partition_indexes": ps} for n, ps in partitions.items()]})
    if r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        return {}
    if r.error_code != ErrorCode.NONE:
        raise error_for(r.error_code, r.error_message)
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in r.topics for p in t.partitions}


def replication_factor(replicas: list[int], reassignment: tuple | None) -> int:
    """TopicCommand.getReplicationFactor: while a reassignment is in progress (one of
    its adding or removing replicas still among the partition's replicas; it may have
    finished between the two requests), its target size, not the replica count."""
    if reassignment is not None:
        target, adding, removing = reassignment
        if set(replicas) & (set(adding) | set(removing)):
            return len(target) - len(adding)
    return len(replicas)


def eligible_leaders(admin, names: list[str], limit: int | None) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (elr, last known elr) from DescribeTopicPartitions,
    following its cursor; empty when the broker does not advertise it."""
    if not names or not admin.client.supports(DESCRIBE_TOPIC_PARTITIONS):
        return {}
    out, cursor = {}, None
    while True:
        r = admin.client.request(DESCRIBE_TOPIC_PARTITIONS, {
            "topics": [{"name": n} for n in names], "response_partition_limit": limit or 2000,
            "cursor": cursor})
        for t in r.topics:
            for p in t.partitions:
                out[(t.name, p.partition_index)] = (p.eligible_leader_replicas, p.last_known_elr)
        if r.next_cursor is None:
            return out
        cursor = {"topic_name": r.next_cursor.topic_name, "partition_index": r.next_cursor.partition_index}


def describe_topic(name: str, metadata, entries, live: set[int], opts: dict,
                   elr: dict | None = None, reassignments: dict | None = None) -> dict:
    """One topic as topics_describe_lines reads it, with Kafka's filters
    applied (DescribeOptions in TopicCommand); ``reassignments`` as list_reassignments
    gives them."""
    from kproto.tools.render import kafka_uuid
    by_name = {e.name: e for e in entries}
    ordered = java_hashmap_order([e.name for e in entries], _string_hash)   # Admin's Config is a HashMap
    configs = {n: by_name[n].value for n in ordered if not by_name[n].is_default}
    min_isr_entry = by_name.get("min.insync.replicas")
    try:
        min_isr = int(min_isr_entry.value) if min_isr_entry is not None else 1
    except (TypeError, ValueError):
        min_isr = 1
    reports = [r for r in REPORT_OPTIONS if opts.get(r)]
    overrides = opts.get("topics_with_overrides", False)
    partitions = sorted(metadata.partitions, key=lambda p: p.partition)
    shown = []
    if not overrides:
        for p in partitions:
            # Admin resolves the leader among the brokers Metadata lists: unknown -> none.
            leader = p.leader if p.leader >= 0 and p.leader in live else None
            isr = len(p.isr)
            reassignment = (reassignments or {}).get((name, p.partition))
            if reports and not any((
                    opts.get("under_replicated_partitions")
                    and replication_factor(list(p.replicas), reassignment) - isr > 0,
                    opts.get("unavailable_partitions") and (leader is None or leader not in live),
                    opts.get("under_min_isr_partitions") and (leader is None or isr < min_isr),
                    opts.get("at_min_isr_partitions") and isr == min_isr)):
                continue
            eligible, last_known = (elr or {}).get((name, p.partition), (None, None))
            shown.append({"topic": name, "partition": p.partition, "leader": leader,
                          "replicas": list(p.replicas), "isr": list(p.isr),
                          "adding_replicas": reassignment and reassignment[1],
                          "removing_replicas": reassignment and reassignment[2],
                          "elr": None if eligible is None else list(eligible),
                          "last_known_elr": None if last_known is None else list(last_known)})
    return {
        "topic": name, "topic_id": kafka_uuid(metadata.topic_id),
        "partition_count": len(partitions),
        "replication_factor": replication_factor(list(partitions[0].replicas), (reassignments or {}).get(
            (name, partitions[0].partition))) if partitions else 0,
        "configs": configs, "partitions": shown,
        "show_topic": not reports and (not overrides or bool(configs)),
    }


# --- the command ---------------------------------------------------------------------

def _bootstrap_from(ctx: click.Context) -> str | None:
    return ctx.params.get("bootstrap_server") or os.environ.get("KPROTO_BOOTSTRAP_SERVER")


def complete_topics(ctx: click.Context, param: click.Parameter, incomplete: str):
    """Live topic names for shell completion; nothing on any failure."""
    bootstrap = _bootstrap_from(ctx)
    if not bootstrap:
        return []
    try:
        from kproto.client.admin import Admin
        from kproto.client.transport import BrokerClient
        with BrokerClient(bootstrap, timeout_s=3.0) as client:
            names = Admin(client).metadata().topics
        return [click.shell_completion.CompletionItem(n) for n in sorted(names) if n.startswith(incomplete)]
    except Exception:   # completion must never print a traceback into the shell
        return []


EPILOG = exit_status_help('the command failed (broker error, no such topic, bad topic config; one line '
                          '"Error while executing topic command : ..." on stderr)') + """

\b
Extensions to kafka-topics.sh: --alter --config k=v and --delete-config k change
topic configs (IncrementalAlterConfigs, else AlterConfigs); --output
table|json|yaml; KPROTO_BOOTSTRAP_SERVER; shell completion of topic names."""


@click.command("topics", cls=OneLineCommand, epilog=EPILOG,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="REQUIRED: The Kafka server to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--create", is_flag=True, help="Create a new topic.")
@click.option("--alter", is_flag=True, help="Alter the number of partitions and replica assignment "
              "(kproto: also topic configs with --config / --delete-config).")
@click.option("--delete", is_flag=True, help="Delete a topic.")
@click.option("--describe", is_flag=True, help="List details for the given topics.")
@click.option("--list", "list_", is_flag=True, help="List all available topics.")
@click.option("--topic", shell_complete=complete_topics,
              help="The topic to create, alter, describe or delete. It also accepts a regular expression, "
                   "except for --create option.")
@click.option("--partitions", type=int, help="The number of partitions for the topic being created or altered.")
@click.option("--replication-factor", type=int,
              help="The replication factor for each partition in the topic being created.")
@click.option("--replica-assignment", metavar="B1:B2,B3:B4,...",
              help="A list of manual partition-to-broker assignments for the topic being created or altered.")
@click.option("--config", "configs", multiple=True, metavar="NAME=VALUE",
              help="A topic configuration override (repeatable); with --create or (kproto) --alter.")
@click.option("--delete-config", "delete_configs", multiple=True, metavar="NAME",
              help="A topic configuration override to remove (kproto, with --alter; repeatable).")
@click.option("--if-exists", is_flag=True,
              help="With --alter, --delete or --describe: act only if the topic exists.")
@click.option("--if-not-exists", is_flag=True, help="With --create: act only if the topic does not exist.")
@click.option("--exclude-internal", is_flag=True, help="Exclude internal topics when listing or describing topics.")
@click.option("--topics-with-overrides", is_flag=True,
              help="If set when describing topics, only show topics that have overridden configs.")
@click.option("--under-replicated-partitions", is_flag=True,
              help="If set when describing topics, only show under-replicated partitions.")
@click.option("--under-min-isr-partitions", is_flag=True,
              help="If set when describing topics, only show partitions whose isr count is less than the configured minimum.")
@click.option("--at-min-isr-partitions", is_flag=True,
              help="If set when describing topics, only show partitions whose isr count is equal to the configured minimum.")
@click.option("--unavailable-partitions", is_flag=True,
              help="If set when describing topics, only show partitions whose leader is not available.")
@click.option("--partition-size-limit-per-response", type=int, hidden=True)
@click.option("--output", "output", type=click.Choice(["text", "table", "json", "yaml"]), default="text",
              show_default=True, help="text is kafka-topics.sh's output.")
def topics(**opts) -> None:
    """Create, delete, describe, or change a topic (kafka-topics.sh)."""
    opts["list"] = opts.pop("list_")
    check_args(opts)
    try:
        run(opts)
    except TopicCommandError as e:
        _fail(str(e))
    except Exception as e:   # broker, connection and protocol errors: Kafka's one line
        from kproto.errors import KprotoError
        if not isinstance(e, (KprotoError, OSError)):
            raise
        _fail(str(e))


def _fail(message: str) -> None:
    sys.stdout.flush()
    click.echo(f"Error while executing topic command : {message}", err=True)
    sys.exit(ExitStatus.ERROR)


def _conflict(used: str, other: str) -> UsageProblem:
    return UsageProblem(f'Option "[{used}]" can\'t be used with option "[{other}]"')


def check_args(o: dict) -> None:
    """TopicCommandOptions.checkArgs, in Kafka's order and words."""
    if sum(bool(o[a]) for a in ACTIONS) != 1:
        raise UsageProblem("Command must include exactly one action: "
                           "--list, --describe, --create, --alter or --delete")
    if not o["bootstrap_server"]:
        raise UsageProblem("--bootstrap-server must be specified")
    if o["describe"] and o["if_exists"] and not o["topic"]:
        raise UsageProblem("--topic or --topic-id is required to describe a topic")
    if not o["list"] and not o["describe"] and not o["topic"]:
        raise UsageProblem('Missing required argument "[topic]"')
    if o["alter"] and o["partitions"] is None and not o["configs"] and not o["delete_configs"]:
        raise UsageProblem('Missing required argument "[partitions]"')
    allowed = {
        "config": ("alter", "create"), "partitions": ("alter", "create"),
        "replication-factor": ("create",), "replica-assignment": ("alter", "create"),
        "delete-config": ("alter",), "if-exists": ("alter", "delete", "describe"),
        "if-not-exists": ("create",), "exclude-internal": ("list", "describe"),
        "topics-with-overrides": ("describe",),
    }
    allowed.update({r.replace("_", "-"): ("describe",) for r in REPORT_OPTIONS})
    for flag, actions in allowed.items():
        key = flag.replace("-", "_")
        value = o["configs" if key == "config" else "delete_configs" if key == "delete_config" else key]
        if value in (None, False, ()):
            continue
        for action in ACTIONS:
            if o[action] and action not in actions:
                raise _conflict(flag, action)
    if o["create"] and o["replica_assignment"]:
        for other in ("partitions", "replication_factor"):
            if o[other] is not None:
                raise _conflict("replica-assignment", other.replace("_", "-"))
    for r in REPORT_OPTIONS:
        if o[r] and o["topics_with_overrides"]:
            raise _conflict(r.replace("_", "-"), "topics-with-overrides")


def run(o: dict) -> None:
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    # Client-side checks first, as TopicCommand makes them before any request.
    assignment = parse_replica_assignment(o["replica_assignment"]) if o["replica_assignment"] else {}
    configs = parse_configs(o["configs"])
    if o["delete_configs"]:
        from kproto.topic_config import LogConfig
        for name in o["delete_configs"]:
            if name not in LogConfig.names():
                raise TopicCommandError(f"Unknown topic config name: {name}")
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    with BrokerClient(o["bootstrap_server"], config=config) as client:
        admin = Admin(client)
        if o["create"]:
            create(admin, o, assignment, configs)
        elif o["list"]:
            list_topics(admin, o)
        elif o["describe"]:
            describe(admin, o)
        elif o["alter"]:
            alter(admin, o, assignment, configs)
        else:
            delete(admin, o)


def get_topics(admin, o: dict):
    """(matching names, sorted; the metadata of every topic)."""
    from kproto.errors import ErrorCode
    md = admin.metadata()
    listed = [n for n, t in md.topics.items()
              if t.error in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE)
              and not (o["exclude_internal"] and t.is_internal)]
    return select_topics(listed, o["topic"], o["exclude_internal"]), md


def create(admin, o: dict, assignment: dict, configs: dict) -> None:
    from kproto.client.admin import NewTopic
    from kproto.errors import ErrorCode
    name = o["topic"]
    rf, partitions = o["replication_factor"], o["partitions"]
    if rf is not None and not 1 <= rf <= 32767:
        raise TopicCommandError("The replication factor must be between 1 and 32767 inclusive")
    if partitions is not None and partitions < 1:
        raise TopicCommandError("The partitions must be greater than 0")
    if "." in name or "_" in name:   # Topic.hasCollisionChars
        click.echo("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
                   "('_') could collide. To avoid issues it is best to use either, but not both.", err=True)
    if assignment:
        new = NewTopic(name, assignments=assignment, configs=configs)
    else:
        new = NewTopic(name, num_partitions=-1 if partitions is None else partitions,
                       replication_factor=-1 if rf is None else rf, configs=configs)
    result = admin.create_topics([new])[name]
    if result.error != ErrorCode.NONE:
        if result.error == ErrorCode.TOPIC_ALREADY_EXISTS and o["if_not_exists"]:
            return
        raise TopicCommandError(error_message(result.error, result.message, topic=name))
    click.echo(f"Created topic {name}.")


def list_topics(admin, o: dict) -> None:
    names, _ = get_topics(admin, o)
    emit("list", names, o["output"])


def describe(admin, o: dict) -> None:
    from kproto.client.admin import ConfigResource
    from kproto.errors import ErrorCode, error_for
    names, md = get_topics(admin, o)
    ensure_topic_exists(names, o["topic"], not o["if_exists"])
    described = []
    if names:
        order = describe_order(names)
        resources = {n: ConfigResource(TOPIC_RESOURCE, n) for n in order}
        answers = admin.describe_configs(list(resources.values()))
        live = {b.node_id for b in md.brokers}
        elr = eligible_leaders(admin, order, o.get("partition_size_limit_per_response"))
        moving = list_reassignments(admin, {n: sorted(p.partition for p in md.topics[n].partitions) for n in order})
        for n in order:
            answer = answers[resources[n]]
            if answer.error != ErrorCode.NONE:
                raise error_for(answer.error, answer.message)
            described.append(describe_topic(n, md.topics[n], answer.entries, live, o, elr, moving))
    described = [t for t in described if t["show_topic"] or t["partitions"]]
    emit("describe", described, o["output"])


def alter(admin, o: dict, assignment: dict, configs: dict) -> None:
    from kproto.errors import ErrorCode
    names, md = get_topics(admin, o)
    ensure_topic_exists(names, o["topic"], not o["if_exists"])
    if not names:
        return
    if o["partitions"] is not None:
        counts = {n: o["partitions"] for n in names}
        assignments = None
        if assignment:
            assignments = {n: [assignment[i] for i in sorted(assignment)][len(md.topics[n].partitions):]
                           for n in names}
        results = admin.create_partitions(counts, assignments=assignments)
        for n in names:
            r = results[n]
            if r.error != ErrorCode.NONE:
                raise TopicCommandError(error_message(r.error, r.message, topic=n,
                                                      current=len(md.topics[n].partitions),
                                                      requested=o["partitions"]))
    if configs or o["delete_configs"]:
        alter_configs(admin, names, configs, o["delete_configs"])


def alter_configs(admin, names: list[str], configs: dict, deletes: tuple[str, ...]) -> None:
    """kproto's extension: IncrementalAlterConfigs, or AlterConfigs of the
    current dynamic topic configs merged with the change."""
    from kproto.client.admin import AlterConfigOp, ConfigResource
    from kproto.errors import ErrorCode, error_for
    resources = [ConfigResource(TOPIC_RESOURCE, n) for n in names]
    from kproto.schemas.protocol import incremental_alter_configs
    if admin.supports(incremental_alter_configs.API.key):
        ops = [AlterConfigOp(k, "set", v) for k, v in configs.items()]
        ops += [AlterConfigOp(k, "delete", None) for k in deletes]
        results = admin.incremental_alter_configs({r: ops for r in resources})
    else:
        current = admin.describe_configs(resources)
        merged = {}
        for r in resources:
            answer = current[r]
            if answer.error != ErrorCode.NONE:
                raise error_for(answer.error, answer.message)
            values = {e.name: e.value for e in answer.entries if e.source == DYNAMIC_TOPIC_CONFIG}
            values.update(configs)
            for k in deletes:
                values.pop(k, None)
            merged[r] = values
        results = admin.alter_configs(merged)
    for r in resources:
        code, message = results[r]
        if code != ErrorCode.NONE:
            raise TopicCommandError(error_message(code, message, topic=r.name))


def delete(admin, o: dict) -> None:
    from kproto.errors import ErrorCode
    names, _ = get_topics(admin, o)
    ensure_topic_exists(names, o["topic"], not o["if_exists"])
    if not names:
        return
    results = admin.delete_topics(names)
    for n in names:
        r = results[n]
        if r.error != ErrorCode.NONE:
            raise TopicCommandError(error_message(r.error, r.message, topic=n))


def emit(kind: str, data, fmt: str) -> None:
    from kproto.tools.topics.text import topics_describe_lines, topics_output, topics_table
    if fmt == "table":
        topics_table(kind, data)
        return
    if fmt == "text":
        text = "\n".join(data) if kind == "list" else "\n".join(topics_describe_lines(data))
        if kind == "describe" and not data:
            return
    else:
        text = topics_output(kind, data, fmt)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
