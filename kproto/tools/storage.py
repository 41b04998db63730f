"""``kproto storage format``: kafka-storage.sh format (kafka.tools.StorageTool, Kafka 4.4)
for KRaft nodes, as far as a kproto node needs it.

    kproto storage format -t CLUSTER_ID -c node.properties [--standalone | --initial-controllers
        ID@HOST:PORT:DIRECTORY_ID,... | --no-initial-controllers] [--ignore-formatted]

Each log dir (``log.dirs``/``log.dir``; the first, or ``metadata.log.dir``, holds the
metadata log) gets ``meta.properties`` (node.id, a new directory.id, version 1,
cluster.id). A controller formatted ``--standalone`` (itself, at its controller listener)
or ``--initial-controllers`` (its own directory id the one listed for it) also gets the
bootstrap checkpoint ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
with kraft.version 1 and the voters (KIP-853: dynamic quorums;
tests/parity/test_kafka_parity_kraft_voters.py compares it with Kafka's). Kafka's checkpoint
also holds the bootstrap FeatureLevelRecords; kproto's features start from its own
``features.json`` (kproto/features.py), the levels the printed line names. Kafka's lines
and refusals, each diffed in tests/parity/test_kafka_parity_storage_format.py.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import click

from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help

_EXIT = exit_status_help("a refusal (one line on stderr)")


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(ExitStatus.ERROR)


@click.group("storage", context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT)
def storage() -> None:
    """Format KRaft log directories like kafka-storage.sh."""


def _initial_controllers(text: str) -> dict[int, tuple[str, int, uuid.UUID]]:
    """DynamicVoters.parse: ``id@host:port:directoryId`` each."""
    from kproto.log.manager import parse_topic_id
    out = {}
    for item in (s.strip() for s in text.split(",") if s.strip()):
        node, at, rest = item.partition("@")
        address, _, directory = rest.rpartition(":")
        host, colon, port = address.rpartition(":")
        try:
            if not (at and colon and directory):
                raise ValueError
            out[int(node)] = (host.strip("[]"), int(port), parse_topic_id(directory))
        except ValueError:
            _fail(f"Unable to parse voter {item}: the expected format is id@host:port:directoryId")
    return out


@storage.command("format", cls=OneLineCommand, epilog=_EXIT)
@click.option("--config", "-c", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The Kafka configuration file to use.")
@click.option("--cluster-id", "-t", required=True, help="The cluster ID to use.")
@click.option("--ignore-formatted", "-g", is_flag=True,
              help="When this option is passed, the format command will skip over already formatted directories "
                   "rather than failing.")
@click.option("--standalone", "-s", is_flag=True,
              help="Used to initialize a controller as a single-node dynamic quorum.")
@click.option("--no-initial-controllers", "-N", is_flag=True,
              help="Used to initialize a server without a dynamic quorum topology.")
@click.option("--initial-controllers", "-I", metavar="INITIAL_CONTROLLERS",
              help="Used to initialize a server with a specific dynamic quorum topology. The argument is a "
                   "comma-separated list of id@hostname:port:directory.")
def format_(config_path: str, cluster_id: str, ignore_formatted: bool, standalone: bool,
            no_initial_controllers: bool, initial_controllers: str | None) -> None:
    """Format the log directories of a KRaft node (StorageTool format, Formatter)."""
    from kproto.features import metadata_version_name
    from kproto.log import checkpoint as ckpt
    from kproto.log.manager import format_topic_id
    from kproto.properties import parse_properties
    from kproto.server.cluster import raft as R
    from kproto.server.cluster.quorum import write_bootstrap_checkpoint
    from kproto.server.kafka_versions import FRESH_FEATURES
    from kproto.tools.metadata_quorum import controller_endpoints
    flags = [f for f, on in (("--standalone/-s", standalone), ("--no-initial-controllers/-N", no_initial_controllers),
                             ("--initial-controllers/-I", initial_controllers is not None)) if on]
    if len(flags) > 1:
        _fail(f"argument {flags[1]}: not allowed with argument {flags[0]}")
    try:
        props = parse_properties(Path(config_path).read_text(), config_path, strict=False)
    except OSError as e:
        _fail(f"kproto: error: {e}")
    node_id = int(props.get("node.id", -1))
    roles = [r.strip() for r in props.get("process.roles", "").split(",") if r.strip()]
    dirs = [d.strip() for d in (props.get("log.dirs") or props.get("log.dir") or "").split(",") if d.strip()]
    metadata_dir = props.get("metadata.log.dir") or (dirs[0] if dirs else None)
    if metadata_dir is None:
        _fail("log.dirs must be set")
    dirs = [metadata_dir] + [d for d in dirs if d != metadata_dir]
    voters: dict[int, R.Voter] | None = None
    if "controller" in roles and not props.get("controller.quorum.voters"):
        if not flags:
            _fail("Because controller.quorum.voters is not set on this controller, you must specify one of the "
                  "following: --standalone, --initial-controllers, or --no-initial-controllers.")
        if standalone:
            voters = {node_id: R.Voter(node_id, uuid.uuid4(), tuple(controller_endpoints(props)[:1]))}
        elif initial_controllers is not None:
            name = controller_endpoints(props)[0][0]
            voters = {i: R.Voter(i, d, ((name, h, p),)) for i, (h, p, d) in _initial_controllers(initial_controllers).items()}
            if node_id not in voters:
                _fail(f"The controller {node_id} is not in the set of initial controllers")
    elif flags:
        _fail(f"You cannot use {flags[0].split('/')[0]} with controller.quorum.voters set.")
    pending = [Path(d) for d in dirs if ckpt.read_meta_properties(Path(d)) is None]
    if len(pending) < len(dirs):
        if not ignore_formatted:
            formatted = next(d for d in dirs if Path(d) not in pending)
            _fail(f"Log directory {formatted} is already formatted. Use --ignore-formatted to ignore this directory "
                  f"and format the others.")
        if not pending:
            click.echo("All of the log directories are already formatted.")
            return
    fresh = FRESH_FEATURES["4.4"]
    records = [("metadata.version", fresh["metadata.version"])] + sorted(
        (k, v) for k, v in fresh.items() if k != "metadata.version")
    click.echo("Bootstrap metadata: BootstrapMetadata(records=[" + ", ".join(
        f"ApiMessageAndVersion(FeatureLevelRecord(name='{k}', featureLevel={v}) at version 0)" for k, v in records)
        + f"], metadataVersionLevel={fresh['metadata.version']}, source=format command)")
    mv = metadata_version_name(fresh["metadata.version"])
    for d in pending:
        own = voters.get(node_id) if voters is not None and str(d) == metadata_dir else None
        d.mkdir(parents=True, exist_ok=True)
        ckpt.write_meta_properties(d, cluster_id=cluster_id, node_id=node_id,
                                   directory_id=format_topic_id(own.directory_id if own else uuid.uuid4()))
        if str(d) == metadata_dir:
            if voters is not None:
                write_bootstrap_checkpoint(d / "__cluster_metadata-0", voters)
            kind = "dynamic metadata voter directory" if voters is not None else "metadata directory"
        else:
            kind = "data directory"
        click.echo(f"Formatting {kind} {d} with metadata.version {mv}.")
