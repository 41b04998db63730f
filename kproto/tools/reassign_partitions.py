"""``kproto reassign-partitions``: kafka-reassign-partitions.sh
(org.apache.kafka.tools.reassign.ReassignPartitionsCommand, Kafka 4.4; its output diffed
against that tool by tests/tools/test_reassign_tools.py).

    kproto reassign-partitions --bootstrap-server H:P --generate
        --topics-to-move-json-file topics.json --broker-list 1,2,3 [--disable-rack-aware]
    kproto reassign-partitions --bootstrap-server H:P --execute --reassignment-json-file plan.json [--additional]
    kproto reassign-partitions --bootstrap-server H:P --verify --reassignment-json-file plan.json
    kproto reassign-partitions --bootstrap-server H:P --list
    kproto reassign-partitions --bootstrap-server H:P --cancel --reassignment-json-file plan.json

The JSON files are Kafka's: ``{"version":1,"topics":[{"topic":"foo"}]}`` to generate from,
``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}``
to execute, verify or cancel (``log_dirs`` optional). --generate prints the current
assignment (each replica's log directory, as Kafka 4.4 prints it) and a proposal placed
as AdminUtils.assignReplicasToBrokers does, from a random start and shift as Kafka's
(so two runs may differ; the shape is Kafka's). --execute prints the current assignment
to keep for a rollback, then starts every reassignment in one AlterPartitionReassignments
request; --verify prints each partition's state and, once no reassignment is left in the
cluster, clears the replication throttles (IncrementalAlterConfigs deletes, each broker's
sent to that broker) as Kafka's tool does; --cancel cancels those of the file still in
flight. Errors are printed on stdout as Kafka's tool prints them (``Error: <message>``,
or its multi-line "Error reassigning partition(s):" list), exit 1, without a stack trace.

Kafka's own tests pin several of these lines (tools/src/test ReassignPartitionsUnitTest:
"Status of partition reassignment:", "Reassignment of partition bar-0 is still in
progress.", "No partition reassignments found.", the duplicate-entry refusals).

--execute --throttle N sets the throttles as Kafka's tool does (modifyReassignmentThrottle):
each moving topic's leader.replication.throttled.replicas (the partitions' current replicas)
and follower.replication.throttled.replicas (the replicas being added), then
leader/follower.replication.throttled.rate on every broker a move involves; --verify clears
them once the reassignments are done. --replica-alter-log-dirs-throttle prints Kafka's line
and sets nothing (there are no log directory moves).

Not supported (one line, exit 2): --execute with log directories other than "any"
(moving a replica between log directories, AlterReplicaLogDirs; --verify and --cancel
read them: a replica is never being moved), --bootstrap-controller, and a rack-aware
--generate over brokers that all have racks.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import click

from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

ANY_LOG_DIR = "any"
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
#: validateAndParseArgs: each action's required and permitted options
REQUIRED = {"verify": ("reassignment-json-file",), "generate": ("topics-to-move-json-file", "broker-list"),
            "execute": ("reassignment-json-file",), "cancel": ("reassignment-json-file",), "list": ()}
PERMITTED = {"verify": ("bootstrap-server", "command-config", "preserve-throttles"),
             "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware"),
             "execute": ("additional", "bootstrap-server", "command-config", "throttle",
                         "replica-alter-log-dirs-throttle", "timeout"),
             "cancel": ("bootstrap-server", "command-config", "preserve-throttles", "timeout"),
             "list": ("bootstrap-server", "command-config")}
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use --additional to override "
                  "this and create a new partition assignment in addition to the existing one. The --additional flag "
                  "can also be used to change the throttle by resubmitting the current reassignment.")
BROKER_LEVEL_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                          "replica.alter.log.dirs.io.max.bytes.per.second")
TOPIC_LEVEL_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
BROKER_RESOURCE, TOPIC_RESOURCE = 4, 2
VERIFY_WARNING = ("Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
                  "throttle is removed.")

TP = tuple[str, int]


class Failed(Exception):
    """What Kafka's tool prints before exiting 1: a TerseException's message as it is,
    anything else as ``Error: <message>``."""

    def __init__(self, message: str, *, terse: bool = False) -> None:
        super().__init__(message if terse else f"Error: {message}")


def _tp(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


def _sorted(tps) -> list[TP]:
    """compareTopicPartitions: by topic, then partition."""
    return sorted(tps)


def _int_set_order(ids) -> list[int]:
    from kproto.jvm import java_hashmap_order
    return java_hashmap_order(list(dict.fromkeys(ids)), lambda i: i)


def _string_set_order(names) -> list[str]:
    from kproto.jvm import java_hashmap_order, java_string_hash
    return java_hashmap_order(list(dict.fromkeys(names)), java_string_hash)


# -- the JSON files ---------------------------------------------------------------------------

def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise Failed(f"The input string is not a valid JSON: {e}") from None
    except RecursionError:
        raise Failed("The input string is not a valid JSON: nested too deeply") from None


def _int32(value: Any, field: str) -> int:
    """Kafka's DecodeJson.DecodeInt: a JSON integer that fits an int (not 1.5, "1", true)."""
    if type(value) is not int or not -2**31 <= value < 2**31:
        raise ValueError(f"{field}: expected an int, got {json.dumps(value)}")
    return value


def _text(value: Any, field: str) -> str:
    """DecodeJson.DecodeString: a JSON string (not null, not a number)."""
    if not isinstance(value, str):
        raise ValueError(f"{field}: expected a string, got {json.dumps(value)}")
    return value


def _array(value: Any, field: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{field}: expected an array, got {json.dumps(value)}")
    return value


def parse_topics(text: str) -> list[str]:
    """parseTopicsData: version 1's topics."""
    js = _load_json(text)
    if not isinstance(js, dict):
        raise Failed("The input string is not a valid JSON")
    version = js.get("version", 1)
    if version != 1:
        raise Failed(f"Not supported version field value {version}")
    try:
        return [_text(t["topic"], "topic") for t in _array(js.get("topics") or [], "topics")]
    except (KeyError, TypeError, ValueError) as e:
        raise Failed(f"Missing or malformed field in the topics JSON: {e}") from None


def parse_reassignment(text: str) -> tuple[list[tuple[TP, list[int]]], dict[tuple[str, int, int], str]]:
    """parsePartitionReassignmentData: ((topic, partition), replicas) in file order, and the
    log directory of each replica that names one (not "any")."""
    js = _load_json(text)
    if not isinstance(js, dict):
        raise Failed("The input string is not a valid JSON")
    version = js.get("version", 1)
    if version != 1:
        raise Failed(f"Not supported version field value {version}")
    parts: list[tuple[TP, list[int]]] = []
    dirs: dict[tuple[str, int, int], str] = {}
    try:
        for p in _array(js.get("partitions") or [], "partitions"):
            if not isinstance(p, dict):
                raise ValueError(f"partitions: expected an object, got {json.dumps(p)}")
            topic, partition = _text(p["topic"], "topic"), _int32(p["partition"], "partition")
            replicas = [_int32(r, "replicas") for r in _array(p["replicas"], "replicas")]
            log_dirs = [_text(d, "log_dirs") for d in _array(p["log_dirs"], "log_dirs")] if "log_dirs" in p \
                else [ANY_LOG_DIR] * len(replicas)
            if len(log_dirs) != len(replicas):
                raise Failed(f"Size of replicas list {_java_list(replicas)} is different from size of log dirs "
                             f"list {_java_list(log_dirs)} for partition {topic}-{partition}")
            parts.append(((topic, partition), replicas))
            dirs.update({(topic, partition, r): d for r, d in zip(replicas, log_dirs) if d != ANY_LOG_DIR})
    except (KeyError, TypeError, ValueError) as e:
        raise Failed(f"Missing or malformed field in the reassignment JSON: {e}") from None
    return parts, dirs


def _java_list(items) -> str:
    return "[" + ", ".join(map(str, items)) + "]"


def check_execute_plan(parts: list[tuple[TP, list[int]]]) -> dict[TP, list[int]]:
    """parseExecuteAssignmentArgs' checks, in their order and words."""
    if not parts:
        raise Failed("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise Failed("Partition replica list cannot be empty")
    seen = [tp for tp, _ in parts]
    repeated = [tp for tp in dict.fromkeys(seen) if seen.count(tp) > 1]
    if repeated:
        raise Failed("Partition reassignment contains duplicate topic partitions: " + ",".join(map(_tp, repeated)))
    dups = [(tp, sorted({r for r in rs if rs.count(r) > 1})) for tp, rs in parts]
    dups = [(tp, d) for tp, d in dups if d]
    if dups:
        raise Failed("Partition replica lists may not contain duplicate entries: " + ". ".join(
            f"{_tp(tp)} contains multiple entries for {','.join(map(str, d))}" for tp, d in dups))
    return dict(parts)


def reassignment_json(assignment: dict[TP, list[int]], log_dirs: dict[tuple[str, int, int], str]) -> str:
    """formatAsReassignmentJson: sorted partitions, each replica's log directory or "any"."""
    from kproto.tools.render import jackson_json
    return jackson_json({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": rs,
         "log_dirs": [log_dirs.get((t, p, r), ANY_LOG_DIR) for r in rs]}
        for (t, p), rs in ((tp, assignment[tp]) for tp in _sorted(assignment))]})


# -- the cluster ------------------------------------------------------------------------------

class Cluster:
    """What the tool asks the brokers, over kproto's admin client."""

    def __init__(self, client: Any) -> None:
        from kproto.client.admin import Admin
        self.client = client
        self.admin = Admin(client)

    def brokers(self) -> dict[int, Any]:
        return {b.node_id: b for b in self.admin.metadata([]).brokers}

    def assignments(self, topics: list[str]) -> dict[TP, list[int]]:
        """getReplicaAssignmentForTopics: every partition's replicas; a missing topic fails."""
        from kproto.errors import ErrorCode
        md = self.admin.metadata(list(dict.fromkeys(topics)))
        out: dict[TP, list[int]] = {}
        for name in topics:
            t = md.topics.get(name)
            if t is None or t.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                raise Failed("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                             f"Topic {name} not found.")
            out.update({(name, p.partition): list(p.replicas) for p in t.partitions})
        return out

    def replica_log_dirs(self, assignment: dict[TP, list[int]]) -> dict[tuple[str, int, int], str]:
        """Each replica's log directory as its broker describes it (DescribeLogDirs)."""
        brokers = self.brokers()
        out: dict[tuple[str, int, int], str] = {}
        for b in sorted({r for rs in assignment.values() for r in rs}):
            if b not in brokers:
                continue
            for path, d in self.admin.describe_log_dirs(brokers[b]).items():
                out.update({(t, p, b): path for t, p in d.replicas if (t, p) in assignment})
        return out

    def replica_moves(self, targets: dict[tuple[str, int, int], str]) -> list[str]:
        """findLogDirMoveStates + replicaMoveStatesToString, for replicas that name a log
        directory: kproto never moves one between directories (no future replica), so each is
        where it should be, elsewhere, or not on that broker."""
        brokers = self.brokers()
        found: dict[tuple[str, int, int], str] = {}
        for b in sorted({b for _, _, b in targets}):
            if b in brokers:
                for path, d in self.admin.describe_log_dirs(brokers[b]).items():
                    found.update({(t, p, b): path for t, p in d.replicas if (t, p, b) in targets})
        lines = []
        for t, p, b in sorted(targets, key=lambda r: (r[2], r[0], r[1])):
            target, current = targets[(t, p, b)], found.get((t, p, b))
            if current is None:
                lines.append(f"Partition {t}-{p} is not found in any live log dir on broker {b}. There is likely "
                             "an offline log directory on the broker.")
            elif current == target:
                lines.append(f"Reassignment of replica {t}-{p}-{b} completed successfully.")
            else:
                lines.append(f"Partition {t}-{p} on broker {b} is not being moved from log dir {current} to "
                             f"{target}.")
        return lines

    def reassignments(self, partitions: list[TP] | None = None) -> dict[TP, tuple[list[int], list[int], list[int]]]:
        """ListPartitionReassignments: (replicas, adding, removing) of those in flight."""
        from kproto.errors import KafkaError
        from kproto.schemas import protocol as P
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in partitions:
                by_topic.setdefault(t, []).append(p)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        r = self.client.request(P.list_partition_reassignments.API.key, {"timeout_ms": 30000, "topics": topics})
        if r.error_code:
            raise KafkaError(r.error_message, error_code=r.error_code)
        return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                for t in r.topics for p in t.partitions}

    def alter(self, targets: dict[TP, list[int] | None]) -> dict[TP, tuple[int, str | None]]:
        """AlterPartitionReassignments; -> the failed partitions' (error, message)."""
        from kproto.schemas import protocol as P
        by_topic: dict[str, list[dict]] = {}
        for (t, p), replicas in targets.items():
            by_topic.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
        r = self.client.request(P.alter_partition_reassignments.API.key, {
            "timeout_ms": 30000, "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]})
        if r.error_code:
            return {tp: (r.error_code, r.error_message) for tp in targets}
        return {(t.name, p.partition_index): (p.error_code, p.error_message)
                for t in r.responses for p in t.partitions if p.error_code}

    def alter_broker_configs(self, ids: list[int], ops: list[Any], brokers: dict[int, Any] | None = None) -> None:
        """IncrementalAlterConfigs of each broker's own resource, sent to that broker (as Kafka's
        admin client routes a named BROKER resource)."""
        from kproto.client.admin import Admin, ConfigResource
        brokers = self.brokers() if brokers is None else brokers
        for b in ids:
            node = brokers.get(b)
            if node is None:
                raise Failed("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node "
                             "assignment. Call: incrementalAlterConfigs")
            client = self.client.connect_to(node.host, node.port)
            try:
                self._no_errors(Admin(client).incremental_alter_configs({ConfigResource(BROKER_RESOURCE, str(b)):
                                                                         ops}))
            finally:
                if client is not self.client:
                    client.close()

    def alter_topic_configs(self, ops: dict[str, list[Any]]) -> None:
        from kproto.client.admin import ConfigResource
        self._no_errors(self.admin.incremental_alter_configs({ConfigResource(TOPIC_RESOURCE, t): o
                                                              for t, o in ops.items()}))

    def clear_throttles(self, parts: list[tuple[TP, list[int]]]) -> None:
        """clearAllThrottles: the brokers of the cluster and of the file, then the topics."""
        from kproto.client.admin import AlterConfigOp
        brokers = self.brokers()
        ids = _int_set_order([*brokers, *(r for _, rs in parts for r in rs)])
        click.echo(f"Clearing broker-level throttles on broker{'' if len(ids) == 1 else 's'} "
                   + ",".join(map(str, ids)))
        self.alter_broker_configs(ids, [AlterConfigOp(name, "delete") for name in BROKER_LEVEL_THROTTLES], brokers)
        topics = _string_set_order(tp[0] for tp, _ in parts)
        click.echo(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} " + ",".join(topics))
        self.alter_topic_configs({t: [AlterConfigOp(name, "delete") for name in TOPIC_LEVEL_THROTTLES]
                                  for t in topics})

    @staticmethod
    def _no_errors(results: dict) -> None:
        from kproto.errors import java_exception
        for error, message in results.values():
            if error:
                raise Failed(java_exception(error, message))


# -- the actions ------------------------------------------------------------------------------

def generate_assignment(cluster: Cluster, topics_json: str, broker_list: str, rack_aware: bool,
             rng: random.Random | None = None) -> None:
    """generateAssignment."""
    from kproto.server.cluster.election import assign_replicas
    try:
        wanted_brokers = [int(b) for b in broker_list.split(",")]
    except ValueError as e:
        raise Failed(f'For input string: "{str(e).rsplit(": ", 1)[-1].strip(chr(39))}"') from None
    repeated = _int_set_order(b for b in wanted_brokers if wanted_brokers.count(b) > 1)
    if repeated:
        raise Failed("Broker list contains duplicate entries: [" + ", ".join(map(str, repeated)) + "]")
    topics = parse_topics(topics_json)
    repeated_topics = _string_set_order(t for t in topics if topics.count(t) > 1)
    if repeated_topics:
        raise Failed("List of topics to reassign contains duplicate entries: [" + ", ".join(repeated_topics) + "]")
    current = cluster.assignments(topics)
    nodes = cluster.brokers()
    chosen = [b for b in nodes if b in set(wanted_brokers)]
    racks = [nodes[b].rack for b in chosen if rack_aware]
    if racks and any(r is None for r in racks) and not all(r is None for r in racks):
        raise Failed("Not all brokers have rack information. Add --disable-rack-aware in command line to make "
                     "replica assignment without rack information.")
    if racks and all(r is not None for r in racks):
        raise UsageProblem("kproto: rack-aware --generate is not supported; add --disable-rack-aware")
    rng = rng or random.Random()
    proposed: dict[TP, list[int]] = {}
    for topic in dict.fromkeys(t for t, _ in current):
        parts = [p for t, p in current if t == topic]
        rf = len(current[(topic, min(parts))])
        if rf > len(chosen):
            raise Failed(f"org.apache.kafka.common.errors.InvalidReplicationFactorException: Replication factor: "
                         f"{rf} larger than available brokers: {len(chosen)}.")
        # AdminUtils.assignReplicasToBrokersRackUnaware with fixedStartIndex -1: a random start
        # and a random shift, per topic
        start, shift = rng.randrange(len(chosen)), rng.randrange(len(chosen))
        for p, replicas in assign_replicas(len(parts), rf, chosen, start=start, shift=shift).items():
            proposed[(topic, p)] = replicas
    click.echo("Current partition replica assignment")
    click.echo(reassignment_json(current, cluster.replica_log_dirs(current)))
    click.echo()
    click.echo("Proposed partition reassignment configuration")
    click.echo(reassignment_json(proposed, {}))


def proposed_moves(ongoing: dict[TP, tuple[list[int], list[int], list[int]]], plan: dict[TP, list[int]],
                   current: dict[TP, list[int]]) -> dict[TP, tuple[set[int], set[int]]]:
    """calculateProposedMoveMap: each partition's (sources, destinations), those of the
    reassignments in flight (calculateCurrentMoveMap: the replicas not being added, and those
    being added) overlaid with the plan's (a partition in flight keeps its sources)."""
    moves = {tp: (set(replicas) - set(adding), set(adding)) for tp, (replicas, adding, _) in ongoing.items()}
    for tp, replicas in plan.items():
        sources = moves[tp][0] if tp in moves else set(current[tp])
        moves[tp] = (sources, set(replicas) - sources)
    return moves


def throttled_replicas(moves: dict[TP, tuple[set[int], set[int]]]) -> dict[str, tuple[str, str]]:
    """calculateLeaderThrottles / calculateFollowerThrottles: per topic, the sources' and the
    destinations' "partition:broker" items, each list in a TreeSet's (string) order."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for (t, p), (sources, destinations) in moves.items():
        leader, follower = out.setdefault(t, (set(), set()))
        leader.update(f"{p}:{b}" for b in sources)
        follower.update(f"{p}:{b}" for b in destinations - sources)
    return {t: (",".join(sorted(leader)), ",".join(sorted(follower))) for t, (leader, follower) in out.items()}


def set_throttles(cluster: Cluster, moves: dict[TP, tuple[set[int], set[int]]], throttle: int) -> None:
    """modifyReassignmentThrottle: the topics' throttled replicas, then the rates of every broker
    a move reads from or writes to (modifyInterBrokerThrottle)."""
    from kproto.client.admin import AlterConfigOp
    cluster.alter_topic_configs({t: [AlterConfigOp(TOPIC_LEVEL_THROTTLES[0], "set", leader),
                                     AlterConfigOp(TOPIC_LEVEL_THROTTLES[1], "set", follower)]
                                 for t, (leader, follower) in throttled_replicas(moves).items()})
    brokers = sorted({b for sources, destinations in moves.values() for b in sources | destinations})
    cluster.alter_broker_configs(brokers, [AlterConfigOp(BROKER_LEVEL_THROTTLES[0], "set", str(throttle)),
                                           AlterConfigOp(BROKER_LEVEL_THROTTLES[1], "set", str(throttle))])
    click.echo(f"The inter-broker throttle limit was set to {throttle} B/s")


def execute_assignment(cluster: Cluster, plan_json: str, additional: bool, throttle: int = -1,
                       log_dir_throttle: int = -1) -> None:
    """executeAssignment."""
    parts, dirs = parse_reassignment(plan_json)
    plan = check_execute_plan(parts)
    _refuse_log_dirs(dirs)
    ongoing = cluster.reassignments()
    if not additional and ongoing:
        raise Failed(CANNOT_EXECUTE, terse=True)
    nodes = cluster.brokers()
    unknown = [b for b in _int_set_order(r for rs in plan.values() for r in rs) if b not in nodes]
    if unknown:
        raise Failed(f"Unknown broker id {unknown[0]}")
    current = cluster.assignments(list(dict.fromkeys(t for t, _ in plan)))
    missing = [tp for tp in plan if tp not in current]
    if missing:
        raise Failed("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find partition: "
                     + ", ".join(map(_tp, missing)))
    current = {tp: current[tp] for tp in plan}
    click.echo("Current partition replica assignment")
    click.echo()
    click.echo(reassignment_json(current, cluster.replica_log_dirs(current)))
    click.echo()
    click.echo("Save this to use as the --reassignment-json-file option during rollback")
    if throttle >= 0 or log_dir_throttle >= 0:
        click.echo(VERIFY_WARNING)
        if throttle >= 0:
            set_throttles(cluster, proposed_moves(ongoing, plan, current), throttle)
        if log_dir_throttle >= 0:
            # modifyLogDirThrottle over the brokers of the plan's log directory moves: none here
            # (log_dirs other than "any" are refused), so no broker's config changes
            click.echo(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    errors = cluster.alter(dict(plan))
    if errors:
        from kproto.errors import ErrorCode
        raise Failed("Error reassigning partition(s):\n" + "\n".join(
            f"{_tp(tp)}: {errors[tp][1] or ErrorCode(errors[tp][0]).description}" for tp in _sorted(errors)),
            terse=True)
    click.echo(f"Successfully started partition reassignment{'' if len(plan) == 1 else 's'} for "
               + ",".join(map(_tp, _sorted(plan))))


def verify_assignment(cluster: Cluster, plan_json: str, preserve_throttles: bool) -> None:
    """verifyAssignment: each partition done (its replicas as a topic description shows
    them) or still in progress; the throttles cleared once nothing is in flight."""
    parts, dirs = parse_reassignment(plan_json)
    ongoing = cluster.reassignments()
    topics = list(dict.fromkeys(tp[0] for tp, _ in parts if tp not in ongoing))
    described: dict[TP, list[int]] = {}
    for t in topics:
        try:
            described.update(cluster.assignments([t]))
        except Failed:
            pass                                    # an unknown topic: no replicas
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(dict(parts).items()):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {_tp(tp)} is still in progress.")
            continue
        current = described.get(tp, [])
        if current == target:
            lines.append(f"Reassignment of partition {_tp(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {_tp(tp)}, but replica set is "
                         f"{','.join(map(str, current))} rather than {','.join(map(str, target))}.")
    click.echo("\n".join(lines))
    click.echo("\n".join(cluster.replica_moves(dirs)))      # never in progress: no future replicas
    if not ongoing and not preserve_throttles:
        cluster.clear_throttles(parts)


def cancel_assignment(cluster: Cluster, plan_json: str, preserve_throttles: bool) -> None:
    """cancelAssignment: those of the file in flight are cancelled."""
    parts, _ = parse_reassignment(plan_json)
    active = _sorted(cluster.reassignments(list(dict.fromkeys(tp for tp, _ in parts))))
    if active:
        errors = cluster.alter(dict.fromkeys(active))
        if errors:
            from kproto.errors import ErrorCode
            raise Failed(f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                         + "\n".join(f"{_tp(tp)}: {errors[tp][1] or ErrorCode(errors[tp][0]).description}"
                                     for tp in _sorted(errors)), terse=True)
        click.echo(f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} for: "
                   + ",".join(map(_tp, active)))
    else:
        click.echo("None of the specified partition reassignments are active.")
    # no replica is ever being moved between log directories here; Kafka's print, no newline
    click.echo("None of the specified partition moves are active.", nl=False)
    if not preserve_throttles:
        cluster.clear_throttles(parts)


def list_reassignments(cluster: Cluster) -> None:
    """curReassignmentsToString."""
    ongoing = cluster.reassignments()
    if not ongoing:
        click.echo("No partition reassignments found.")
        return
    click.echo("Current partition reassignments:")
    for tp in _sorted(ongoing):
        replicas, adding, removing = ongoing[tp]
        click.echo(f"{_tp(tp)}: replicas: {','.join(map(str, replicas))}."
                   + (f" adding: {','.join(map(str, adding))}." if adding else "")
                   + (f" removing: {','.join(map(str, removing))}." if removing else ""))


def _refuse_log_dirs(dirs: dict) -> None:
    if dirs:
        raise UsageProblem('kproto: log_dirs other than "any" (moving replicas between log directories) '
                           "are not supported")


# -- the command ------------------------------------------------------------------------------

@click.command("reassign-partitions", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the reassignment could not be started, verified or cancelled, or the "
                                       "connection or a request failed (Kafka's message on stdout)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="the server(s) to use for bootstrapping (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--bootstrap-controller", metavar="HOST:PORT", help="Not supported by kproto.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--generate", is_flag=True, help="Generate a candidate partition reassignment configuration. Note that "
                                               "this only generates a candidate assignment, it does not execute it.")
@click.option("--execute", is_flag=True, help="Kick off the reassignment as specified by --reassignment-json-file.")
@click.option("--verify", is_flag=True, help="Verify if the reassignment completed as specified by "
                                             "--reassignment-json-file; clear the throttles once it has.")
@click.option("--cancel", is_flag=True, help="Cancel an active reassignment.")
@click.option("--list", "list_", is_flag=True, help="List all active partition reassignments.")
@click.option("--reassignment-json-file", type=click.Path(dir_okay=False),
              help='The JSON file with the partition reassignment configuration: {"partitions": [{"topic": "foo", '
                   '"partition": 1, "replicas": [1,2,3], "log_dirs": ["any","any","any"]}], "version": 1}')
@click.option("--topics-to-move-json-file", type=click.Path(dir_okay=False),
              help='Generate a reassignment moving the partitions of these topics to --broker-list: '
                   '{"topics": [{"topic": "foo"}, {"topic": "foo1"}], "version": 1}')
@click.option("--broker-list", metavar="0,1,2", help="The brokers to which the partitions need to be reassigned.")
@click.option("--disable-rack-aware", is_flag=True, help="Disable rack aware replica assignment")
@click.option("--additional", is_flag=True, help="Execute this reassignment in addition to any other ongoing ones.")
@click.option("--throttle", type=int, help="The movement of partitions between brokers will be throttled to this "
                                         "value (bytes/sec).")
@click.option("--replica-alter-log-dirs-throttle", type=int,
              help="The movement of replicas between log directories on the same broker will be throttled to this "
                   "value (bytes/sec) (no such moves here: sets nothing).")
@click.option("--timeout", type=int, help="The maximum time in ms to wait for log directory replica assignment to "
                                          "begin (unused: no log directory moves).")
@click.option("--preserve-throttles", is_flag=True, help="Do not modify broker or topic throttles.")
@click.pass_context
def reassign_partitions(ctx: click.Context, bootstrap_server: str | None, bootstrap_controller: str | None,
                        command_config: str | None, generate: bool, execute: bool, verify: bool, cancel: bool,
                        list_: bool, reassignment_json_file: str | None, topics_to_move_json_file: str | None,
                        broker_list: str | None, disable_rack_aware: bool, additional: bool, throttle: int | None,
                        replica_alter_log_dirs_throttle: int | None, timeout: int | None,
                        preserve_throttles: bool) -> None:
    """Move partitions between brokers like kafka-reassign-partitions.sh."""
    chosen = [a for a, on in zip(ACTIONS, (generate, execute, verify, cancel, list_)) if on]
    if len(chosen) != 1:
        raise UsageProblem("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    action = chosen[0]
    if bootstrap_controller is not None:
        raise UsageProblem("kproto: --bootstrap-controller is not supported; use --bootstrap-server")
    if not bootstrap_server:
        raise UsageProblem("Please specify either --bootstrap-server or --bootstrap-controller")
    given = {p.name.replace("_", "-").rstrip("-") for p in ctx.command.params
             if ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE}
    for name in REQUIRED[action]:
        if name not in given:
            raise UsageProblem(f'Missing required argument "[{name}]"')
    for name in sorted(given - {action} - set(REQUIRED[action]) - set(PERMITTED[action])):
        raise UsageProblem(f'Option "[{name}]" can\'t be used with action "[{action}]"')

    def read(path: str) -> str:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as e:
            raise UsageProblem(f"{path}: {e.strerror}") from None
        except UnicodeDecodeError as e:
            raise Failed(f"The input string is not a valid JSON: {path} @ byte {e.start}: not UTF-8") from None

    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KafkaError, KprotoError, java_exception
    try:
        config = load_client_properties(command_config) if command_config else None
        with BrokerClient(bootstrap_server, config=config) as client:
            cluster = Cluster(client)
            if action == "generate":
                generate_assignment(cluster, read(topics_to_move_json_file), broker_list, not disable_rack_aware)
            elif action == "execute":
                execute_assignment(cluster, read(reassignment_json_file), additional,
                                   -1 if throttle is None else throttle,
                                   -1 if replica_alter_log_dirs_throttle is None else replica_alter_log_dirs_throttle)
            elif action == "verify":
                verify_assignment(cluster, read(reassignment_json_file), preserve_throttles)
            elif action == "cancel":
                cancel_assignment(cluster, read(reassignment_json_file), preserve_throttles)
            else:
                list_reassignments(cluster)
    except Failed as e:
        click.echo(str(e))
        sys.exit(ExitStatus.ERROR)
    except KafkaError as e:
        click.echo("Error: " + java_exception(e.error_code, str(e) or None))
        sys.exit(ExitStatus.ERROR)
    except (KprotoError, OSError) as e:
        click.echo(f"kproto: error: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
