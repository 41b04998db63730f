"""``kproto log-dirs``: kafka-log-dirs.sh (LogDirsCommand, Kafka 4.4, diffed against
its tool by tests/parity/test_kafka_ref_tools.py) over kproto's admin client.

    kproto log-dirs --describe --bootstrap-server H:P [--topic-list t1,t2] [--broker-list 1]

Prints ``Querying brokers for log directories information``, ``Received log
directory information from brokers 1`` and one JSON line: each broker's log
directories with their partitions' size, offset lag and future flag. The JSON is
Jackson's over Java HashMaps, so keys and partitions come in those maps' order
(``kproto.jvm.java_hashmap_order``). The topic list filters what the brokers
answered (Kafka asks them for every partition).

Differences: a bad ``--broker-list`` number or a missing flag is one line and exit
2 (Kafka prints its usage or a stack trace, exit 1); a failed request is one line,
no stack trace.
"""

from __future__ import annotations

import re
import sys

import click

from kproto.jvm import java_hashmap_order, java_string_hash, topic_partition_hash
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

JAVA_INT = (-(1 << 31), (1 << 31) - 1)


def _hash_keys(d: dict) -> dict:
    """``d`` in the order a ``java.util.HashMap`` of its String keys iterates."""
    return {k: d[k] for k in java_hashmap_order(list(d), java_string_hash)}


def _int_order(ids) -> list[int]:
    """A ``HashSet<Integer>``/``HashMap<Integer, _>`` order (Integer.hashCode is the value)."""
    return java_hashmap_order(list(ids), lambda i: i)


def _split(text: str) -> list[str]:
    """splitAtCommasAndFilterOutEmpty."""
    return [x for x in text.split(",") if x]


def parse_brokers(text: str) -> list[int]:
    """LogDirsCommandOptions.brokers: ``Integer.valueOf`` of each, as a set."""
    out = []
    for x in _split(text):
        if not re.fullmatch(r"[+-]?\d+", x) or not JAVA_INT[0] <= int(x) <= JAVA_INT[1]:
            raise UsageProblem(f'For input string: "{x}"')
        out.append(int(x))
    return list(dict.fromkeys(out))


def log_dirs_json(described: dict, topics: set[str]) -> dict:
    """formatAsJson: broker id -> {log dir -> LogDirDescription}, as Kafka's tool
    shapes it (an ``error`` is the exception's class name, or null)."""
    from kproto.errors import ErrorCode, java_exception_class

    def partitions(replicas: dict) -> list[dict]:
        kept = [tp for tp in replicas if not topics or tp[0] in topics]
        return [_hash_keys({"partition": f"{t}-{p}", "size": replicas[(t, p)].size,
                            "offsetLag": replicas[(t, p)].offset_lag, "isFuture": replicas[(t, p)].is_future})
                for t, p in java_hashmap_order(kept, topic_partition_hash)]

    def log_dir(path: str, d) -> dict:
        error = None if d.error == ErrorCode.NONE else \
            f"org.apache.kafka.common.errors.{java_exception_class(d.error)}"
        return _hash_keys({"logDir": path, "error": error, "partitions": partitions(d.replicas)})

    brokers = [_hash_keys({"broker": b, "logDirs": [log_dir(path, described[b][path]) for path in
                                                    java_hashmap_order(list(described[b]), java_string_hash)]})
               for b in _int_order(described)]
    return _hash_keys({"version": 1, "brokers": brokers})


@click.command("log-dirs", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("a broker in --broker-list does not exist, or the connection or a "
                                       "request failed (one line on stderr)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="REQUIRED: the server(s) to use for bootstrapping (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.option("--describe", is_flag=True, help="REQUIRED: Describe the specified log directories on the specified brokers.")
@click.option("--topic-list", default="", metavar="T1,T2",
              help='The list of topics to be queried in the form "topic1,topic2,topic3". '
                   "All topics will be queried if no topic list is specified.")
@click.option("--broker-list", default="", metavar="0,1,2",
              help='The list of brokers to be queried in the form "0,1,2". '
                   "All brokers in the cluster will be queried if no broker list is specified.")
def log_dirs(bootstrap_server: str | None, command_config: str | None, describe: bool,
             topic_list: str, broker_list: str) -> None:
    """Query log directory usage on the specified brokers, like kafka-log-dirs.sh."""
    for flag, value in (("bootstrap-server", bootstrap_server), ("describe", describe)):
        if not value:                                       # CommandLineUtils.checkRequiredArgs, in its order
            raise UsageProblem(f'Missing required argument "[{flag}]"')
    topics = set(_split(topic_list))
    wanted = parse_brokers(broker_list)
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KafkaError, KprotoError, java_exception
    from kproto.tools.render import jackson_json
    try:
        config = load_client_properties(command_config) if command_config else None
        with BrokerClient(bootstrap_server, config=config) as client:
            admin = Admin(client)
            nodes = {b.node_id: b for b in admin.metadata([]).brokers}
            missing = [b for b in wanted if b not in nodes]
            if missing:
                click.echo("ERROR: The given brokers do not exist from --broker-list: "
                           + ",".join(map(str, _int_order(missing))) + ". Current existent brokers: "
                           + ",".join(map(str, _int_order(nodes))), err=True)
                sys.exit(ExitStatus.ERROR)
            existing = _int_order(wanted or nodes)
            click.echo("Querying brokers for log directories information")
            described = {b: admin.describe_log_dirs(nodes[b]) for b in existing}
    except KafkaError as e:
        click.echo(java_exception(e.error_code, str(e) or None), err=True)
        sys.exit(ExitStatus.ERROR)
    except (KprotoError, OSError) as e:
        click.echo(f"kproto: error: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
    click.echo("Received log directory information from brokers " + ",".join(map(str, existing)))
    click.echo(jackson_json(log_dirs_json(described, topics)))
