"""``kproto delete-records``: kafka-delete-records.sh (DeleteRecordsCommand, trunk 1eb76443)
over kproto's admin client.

    kproto delete-records --bootstrap-server H:P --offset-json-file plan.json
    # plan.json: {"partitions": [{"topic": "orders", "partition": 0, "offset": 3}], "version": 1}

Each partition's records below ``offset`` are deleted (-1: all of them, up to
the high watermark); the output is Kafka's: ``Executing records delete
operation``, ``Records delete operation completed:`` and a ``partition: t-0<TAB>
low_watermark: 3`` or ``partition: t-0<TAB>error: <exception>`` line per
partition, in the order of Kafka's HashMap. The file's errors are Kafka's
messages, alone on one line.

Differences: Kafka exits 0 whatever the partitions answered; here a partition
that failed makes the exit status 3. A missing flag is one line and exit 2
(Kafka prints its usage, exit 1). Kafka's Admin turns an unknown topic into
``Failed to fetch metadata for partition ...`` after a Metadata lookup (an
unknown partition of a known topic into a timeout); kproto asks the broker
directly and prints its answer (``UnknownTopicOrPartitionException: This
server does not host this topic-partition.``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from kproto.jvm import java_hashmap_order, topic_partition_hash
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

#: DeleteRecordsCommand.EARLIEST_VERSION: a file without "version".
EARLIEST_VERSION = 1
JAVA_INT, JAVA_LONG = (-(1 << 31), (1 << 31) - 1), (-(1 << 63), (1 << 63) - 1)

TopicPartition = tuple[str, int]


class DeleteRecordsFailed(Exception):
    """AdminOperationException / AdminCommandFailedException / JsonMappingException:
    the message alone on stderr, exit status 1."""


def _node(value: Any) -> str:
    from kproto.tools.render import jackson_json
    return jackson_json(value)


def _decode(value: Any, java_type: str) -> Any:
    """DecodeJson.DecodeInteger / DecodeLong / DecodeString."""
    if java_type == "String":
        ok = isinstance(value, str)
    else:
        lo, hi = JAVA_INT if java_type == "Integer" else JAVA_LONG
        ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    if not ok:
        raise DeleteRecordsFailed(f"Expected `{java_type}` value, received {_node(value)}")
    return value


def _object(value: Any) -> dict:
    if not isinstance(value, dict):
        raise DeleteRecordsFailed(f"Expected JSON object, received {_node(value)}")
    return value


def _field(obj: dict, name: str) -> Any:
    if name not in obj:
        raise DeleteRecordsFailed(f"No such field exists: `{name}`")
    return obj[name]


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """DeleteRecordsCommand.parseOffsetJsonStringWithoutDedup, then its duplicate
    check: ``{(topic, partition): offset}`` in Kafka's HashMap order."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise DeleteRecordsFailed("The input string is not a valid JSON") from None
    doc = _object(doc)
    version = _decode(doc["version"], "Integer") if "version" in doc else EARLIEST_VERSION
    if version != 1:
        raise DeleteRecordsFailed(f"Not supported version field value {version}")
    if "partitions" not in doc:
        raise DeleteRecordsFailed("Missing partitions field")
    partitions = doc["partitions"]
    if not isinstance(partitions, list):
        raise DeleteRecordsFailed(f"Expected JSON array, received {_node(partitions)}")
    offsets: dict[TopicPartition, list[int]] = {}
    for entry in partitions:
        entry = _object(entry)
        topic = _decode(_field(entry, "topic"), "String")
        partition = _decode(_field(entry, "partition"), "Integer")
        offset = _decode(_field(entry, "offset"), "Long")
        offsets.setdefault((topic, partition), []).append(offset)
    # every map and set on the way is a java.util.HashMap/HashSet of TopicPartition
    order = java_hashmap_order(list(offsets), topic_partition_hash)
    duplicates = [tp for tp in order if len(offsets[tp]) > 1]
    if duplicates:
        raise DeleteRecordsFailed("Offset json file contains duplicate topic partitions: "
                                  + ",".join(f"{t}-{p}" for t, p in duplicates))
    return {tp: offsets[tp][0] for tp in order}


@click.command("delete-records", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the file, the flags or the connection failed (one line on stderr)",
                                       partial="a partition's delete failed (its error line on stdout)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="REQUIRED: The server to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--offset-json-file", metavar="PATH",
              help='REQUIRED: The JSON file with offset per partition. The format to use is: '
                   '{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version":1}')
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="A property file containing configs to be passed to Admin Client.")
def delete_records(bootstrap_server: str | None, offset_json_file: str | None, command_config: str | None) -> None:
    """Delete records of the given partitions down to the specified offset, like kafka-delete-records.sh.

    \b
    Exit status: 0 done, 1 error (the file, the connection), 2 usage,
    3 a partition's deletion failed (its line says why).
    """
    for flag, value in (("bootstrap-server", bootstrap_server), ("offset-json-file", offset_json_file)):
        if not value:                                       # CommandLineUtils.checkRequiredArgs, in its order
            raise UsageProblem(f'Missing required argument "[{flag}]"')
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import ErrorCode, KprotoError, java_exception
    try:
        try:
            with open(offset_json_file, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise DeleteRecordsFailed(f"cannot read {offset_json_file}: {e.strerror}") from None
        offsets = parse_offset_json(text)
        config = load_client_properties(command_config) if command_config else None
        with BrokerClient(bootstrap_server, config=config) as client:
            click.echo("Executing records delete operation")
            results = Admin(client).delete_records(offsets) if offsets else {}
    except (DeleteRecordsFailed, KprotoError, OSError) as e:
        click.echo(str(e) if isinstance(e, DeleteRecordsFailed) else f"kproto: error: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
    click.echo("Records delete operation completed:")
    failed = False
    for (topic, partition) in offsets:
        r = results.get((topic, partition))
        if r is None:         # DeleteRecordsHandler's sanity check (Kafka names the broker's id too)
            line = (f"error: org.apache.kafka.common.errors.ApiException: The response from broker "
                    f"{bootstrap_server} did not contain a result for topic partition {topic}-{partition}")
        elif r.error == ErrorCode.NONE:
            line = f"low_watermark: {r.low_watermark}"
        else:
            line = f"error: {java_exception(r.error)}"
        failed = failed or not line.startswith("low_watermark")
        click.echo(f"partition: {topic}-{partition}\t{line}")
    if failed:
        sys.exit(ExitStatus.PARTIAL)
