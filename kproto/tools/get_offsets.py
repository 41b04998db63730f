"""``kproto get-offsets``: kafka-get-offsets.sh (GetOffsetShell, trunk 1eb76443).

    kproto get-offsets --bootstrap-server H:P --topic 'orders.*' --time earliest

One ``topic:partition:offset`` line per partition, sorted by the string
``topic-partition`` as Kafka's TreeMap does (so t-10 sorts before t-2); a
partition with no offset for the time (-1) is left out. Errors are Kafka's
``Error occurred: ...`` line, exit status 1."""

from __future__ import annotations

import re
import sys

import click

from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help

SPECS = {"earliest": -2, "latest": -1, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5}
TOPIC_PARTITION = re.compile(r"^([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?$")


class GetOffsetsFailed(Exception):
    pass


def parse_time(text: str) -> int:
    if text in SPECS:
        return SPECS[text]
    try:
        return int(text)
    except ValueError:
        raise GetOffsetsFailed(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp "
            "/ -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp") from None


def _rule(spec: str):
    """One --topic-partitions rule: TOPIC_REGEX[:PARTITION | :FROM-UNTIL]."""
    m = TOPIC_PARTITION.match(spec)
    if not m:
        raise GetOffsetsFailed(f"Invalid rule specification: {spec}")
    topic = re.compile(m.group(1) or ".*")
    if m.group(2):
        lo, hi = int(m.group(2)), int(m.group(2)) + 1
    elif m.group(3) is not None and (m.group(3) or m.group(4)):
        lo = int(m.group(3)) if m.group(3) else 0
        hi = int(m.group(4)) if m.group(4) else 2**31 - 1
    else:
        lo, hi = 0, 2**31 - 1
    return lambda t, p: bool(topic.fullmatch(t)) and lo <= p < hi


@click.command("get-offsets", cls=OneLineCommand, epilog=exit_status_help("error (Error occurred: ...)"))
@click.option("--bootstrap-server", "--broker-list", required=True, help="The server(s) to connect to.")
@click.option("--topic", help="Topic regular expression (default: all topics).")
@click.option("--partitions", help="Comma-separated partition ids (default: all).")
@click.option("--topic-partitions", help="Comma-separated TOPIC_REGEX[:PARTITION|:FROM-UNTIL] rules.")
@click.option("--time", "time_", default="latest",
              help="-1/latest, -2/earliest, -3/max-timestamp, -4/earliest-local, -5/latest-tiered, or ms.")
@click.option("--exclude-internal-topics", is_flag=True, help="Leave internal topics out.")
@click.option("--command-config", type=click.Path(), help="Client properties file.")
def get_offsets(bootstrap_server, topic, partitions, topic_partitions, time_, exclude_internal_topics,
                command_config) -> None:
    """Print topic:partition:offset for a time like kafka-get-offsets.sh."""
    try:
        lines = _offsets(bootstrap_server, topic, partitions, topic_partitions, time_, exclude_internal_topics,
                         command_config)
    except GetOffsetsFailed as e:
        click.echo(f"Error occurred: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
    click.echo("".join(f"{line}\n" for line in lines), nl=False)


def _offsets(bootstrap, topic, partitions, topic_partitions, time_, exclude_internal, command_config) -> list[str]:
    if topic_partitions is not None and (topic is not None or partitions is not None):
        raise GetOffsetsFailed("--topic-partitions cannot be used with --topic or --partitions")
    timestamp = parse_time(time_)
    if topic_partitions is not None:
        rules = [_rule(s.strip()) for s in topic_partitions.split(",")]
    else:
        wanted = None
        if partitions is not None:
            try:
                wanted = {int(p) for p in partitions.split(",")}
            except ValueError:
                raise GetOffsetsFailed(f"--partitions expects a comma separated list of numeric partition ids, "
                                       f"but received: {partitions}") from None
        pattern = re.compile(topic or ".*")
        rules = [lambda t, p: bool(pattern.fullmatch(t)) and (wanted is None or p in wanted)]
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.common import is_internal
    config = load_client_properties(command_config) if command_config else {}
    with BrokerClient(bootstrap, config=config, client_id="GetOffsetShell") as client:
        admin = Admin(client)
        md = admin.metadata()
        tps = [(t.name, p.partition) for t in md.topics.values()
               if not (exclude_internal and (t.is_internal or is_internal(t.name)))
               for p in t.partitions if any(rule(t.name, p.partition) for rule in rules)]
        if not tps:
            raise GetOffsetsFailed("Could not match any topic-partitions with the specified filters")
        listed = admin.list_offsets({tp: timestamp for tp in tps})
    out = []
    for tp in sorted(tps, key=lambda tp: f"{tp[0]}-{tp[1]}"):
        lo = listed.get(tp)
        if lo is None:
            continue
        if lo.error:
            from kproto.errors import error_for
            click.echo(f"Skip getting offsets for topic-partition {tp[0]}-{tp[1]} due to error: "
                       f"{error_for(lo.error)}", err=True)
            continue
        if lo.offset != -1:
            out.append(f"{tp[0]}:{tp[1]}:{lo.offset}")
    return out
