"""``kproto leader-election``: kafka-leader-election.sh (org.apache.kafka.tools.LeaderElectionCommand,
Kafka 4.4; its output diffed against that tool by tests/tools/test_reassign_tools.py).

    kproto leader-election --bootstrap-server H:P --election-type PREFERRED|UNCLEAN
        (--topic T --partition P | --all-topic-partitions | --path-to-json-file F)

One ElectLeaders request; prints ``Successfully completed leader election (TYPE) for
partitions t-0, t-1``, ``Valid replica already elected for partitions ...`` and, for
each failure, ``Error completing leader election (TYPE) for partition: t-0: <exception>:
<message>``, each list in the order of Kafka's HashSet of TopicPartition. With
``--all-topic-partitions`` the partitions that need no election are not answered, so
not printed (Kafka's LeaderElectionCommandTest pins the first two lines). The JSON file is ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``.

Differences: bad flags are one line and exit 2 (Kafka prints the same message with a
stack trace, exit 1); a failed election's summary ``N replica(s) could not be elected``
is one line on stderr, exit 1 (Kafka adds a stack trace).
"""

from __future__ import annotations

import json
import sys

import click

from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}


def parse_election_data(text: str) -> list[tuple[str, int]]:
    """LeaderElectionCommand.parseReplicaElectionData: the file's partitions, no repeats."""
    try:
        data = json.loads(text)
    except ValueError:
        raise UsageProblem("Replica election data is empty") from None
    if not isinstance(data, dict) or "partitions" not in data:
        raise UsageProblem('Replica election data is missing "partitions" field')
    try:
        parts = [(str(p["topic"]), int(p["partition"])) for p in data["partitions"]]
    except (KeyError, TypeError, ValueError) as e:
        raise UsageProblem(f"Replica election data is malformed: {e}") from None
    repeated = sorted({tp for tp in parts if parts.count(tp) > 1})
    if repeated:
        raise UsageProblem("Replica election data contains duplicate partitions: ["
                           + ", ".join(f"{t}-{p}" for t, p in repeated) + "]")
    return list(dict.fromkeys(parts))


def election_lines(election: str, results: dict[tuple[str, int], tuple[int, str | None]]) -> tuple[list[str], int]:
    """The tool's stdout lines for ``results`` ((topic, partition) -> (error, message)), and how
    many partitions failed."""
    from kproto.errors import ErrorCode, java_exception
    from kproto.jvm import java_hashmap_order, topic_partition_hash

    def order(tps) -> list[tuple[str, int]]:
        return java_hashmap_order(list(tps), topic_partition_hash)

    done = [tp for tp, (e, _) in results.items() if e == ErrorCode.NONE]
    noop = [tp for tp, (e, _) in results.items() if e == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [tp for tp, (e, _) in results.items() if e not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)]
    lines = []
    if done:
        lines.append(f"Successfully completed leader election ({election}) for partitions "
                     + ", ".join(f"{t}-{p}" for t, p in order(done)))
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(f"{t}-{p}" for t, p in order(noop)))
    for t, p in order(failed):
        error, message = results[(t, p)]
        lines.append(f"Error completing leader election ({election}) for partition: {t}-{p}: "
                     + java_exception(error, message))
    return lines, len(failed)


@click.command("leader-election", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("a partition could not be elected, or the connection or request failed"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="A hostname and port for the broker to connect to, in the form host:port. REQUIRED.")
@click.option("--admin.config", "admin_config", type=click.Path(dir_okay=False),
              help="Configuration properties files to pass to the admin client")
@click.option("--path-to-json-file", type=click.Path(dir_okay=False),
              help='The JSON file with the list of partition for which leader elections should be performed: '
                   '{"partitions": [{"topic": "foo", "partition": 1}]}. Not allowed with --all-topic-partitions '
                   "or --topic.")
@click.option("--topic", help="Name of topic for which to perform an election.")
@click.option("--partition", type=int, help="Partition id for which to perform an election. REQUIRED if --topic is "
                                            "specified.")
@click.option("--all-topic-partitions", is_flag=True,
              help="Perform election on all of the eligible topic partitions based on the type of election.")
@click.option("--election-type", metavar="PREFERRED|UNCLEAN",
              help="Type of election to attempt: preferred (only where the leader is not the preferred replica) "
                   "or unclean (only where there is no leader). REQUIRED.")
def leader_election(bootstrap_server: str | None, admin_config: str | None, path_to_json_file: str | None,
                    topic: str | None, partition: int | None, all_topic_partitions: bool,
                    election_type: str | None) -> None:
    """Elect leaders for topic partitions like kafka-leader-election.sh."""
    # LeaderElectionCommandOptions.validate, in its order and words
    missing = [name for name, value in (("bootstrap-server", bootstrap_server), ("election-type", election_type))
               if not value]
    if missing:
        raise UsageProblem("Missing required option(s): " + ", ".join(missing))
    election = election_type.upper()
    if election not in ELECTION_TYPES:
        raise UsageProblem(f"Cannot convert argument '{election_type}' of option 'election-type'. "
                           "Value must be one of: PREFERRED, UNCLEAN")
    if sum((topic is not None, all_topic_partitions, path_to_json_file is not None)) != 1:
        raise UsageProblem("One and only one of the following options is required: topic, all-topic-partitions, "
                           "path-to-json-file")
    if topic is not None and partition is None:
        raise UsageProblem("Missing required option(s): partition")
    if topic is None and partition is not None:
        raise UsageProblem("Option partition is only allowed if topic is used")
    if path_to_json_file is not None:
        try:
            with open(path_to_json_file, encoding="utf-8") as f:
                wanted: list[tuple[str, int]] | None = parse_election_data(f.read())
        except OSError as e:
            raise UsageProblem(f"{path_to_json_file}: {e.strerror}") from None
    elif topic is not None:
        wanted = [(topic, partition)]
    else:
        wanted = None

    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KafkaError, KprotoError, java_exception
    from kproto.schemas import protocol as P
    by_topic: dict[str, list[int]] = {}
    for t, p in wanted or ():
        by_topic.setdefault(t, []).append(p)
    try:
        config = load_client_properties(admin_config) if admin_config else None
        with BrokerClient(bootstrap_server, config=config) as client:
            r = client.request(P.elect_leaders.API.key, {
                "election_type": ELECTION_TYPES[election], "timeout_ms": 30000,
                "topic_partitions": None if wanted is None else
                [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
    except KafkaError as e:
        click.echo(java_exception(e.error_code, str(e) or None), err=True)
        sys.exit(ExitStatus.ERROR)
    except (KprotoError, OSError) as e:
        click.echo(f"kproto: error: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
    from kproto.errors import ErrorCode
    if r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        click.echo("Not authorized to perform leader election")
        sys.exit(ExitStatus.ERROR)
    if r.error_code:
        click.echo(java_exception(r.error_code, None), err=True)
        sys.exit(ExitStatus.ERROR)
    results = {(t.topic, p.partition_id): (p.error_code, p.error_message)
               for t in r.replica_election_results for p in t.partition_result}
    lines, failed = election_lines(election, results)
    for line in lines:
        click.echo(line)
    if failed:
        click.echo(f"{failed} replica(s) could not be elected", err=True)
        sys.exit(ExitStatus.ERROR)
