"""``kproto storage``: kafka-storage.sh (kafka.tools.StorageTool, Kafka 4.4).

    kproto storage random-uuid
    kproto storage format -t CLUSTER_ID -c server.properties [--ignore-formatted] [--release-version V]
                          [--feature NAME=LEVEL...] [--add-scram 'SCRAM-SHA-256=[name=alice,password=...]'...]
                          [--standalone | --initial-controllers ID@HOST:PORT:DIRECTORY_ID,... | --no-initial-controllers]
    kproto storage info -c server.properties
    kproto storage version-mapping [--release-version V]
    kproto storage feature-dependencies --feature NAME=LEVEL...

``format`` writes what Kafka's writes (meta.properties in every directory, the bootstrap snapshot
in a controller's metadata directory), so Kafka's broker and ``kproto serve`` both start on it;
the facts are kproto.server.storage's. Kafka's refusals are one line on stderr, exit 1.

``--standalone`` and ``--initial-controllers`` make a KIP-853 dynamic quorum (kraft.version 1,
the voters in the bootstrap snapshot); kproto's controllers then take AddRaftVoter and
RemoveRaftVoter (``kproto metadata-quorum add-controller`` / ``remove-controller``).
"""

from __future__ import annotations

import sys

import click

from kproto.tools.features import feature_dependencies
from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help

_EXIT = exit_status_help("Kafka's refusal (a directory formatted for another cluster, a bad feature level ...), "
                         "or a problem info found")


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(ExitStatus.ERROR)


@click.group("storage", context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT)
def storage() -> None:
    """Format and inspect a node's log directories like kafka-storage.sh."""


@storage.command("random-uuid", cls=OneLineCommand, epilog=_EXIT)
def random_uuid() -> None:
    """Print a random UUID (a new cluster id)."""
    from kproto.log.checkpoint import random_uuid as new
    click.echo(new())


@storage.command("format", cls=OneLineCommand, epilog=_EXIT)
@click.option("-c", "--config", "config", required=True, type=click.Path(dir_okay=False),
              help="The Kafka configuration file to use (node.id, process.roles, log.dirs ...).")
@click.option("-t", "--cluster-id", required=True, help="The cluster ID to use.")
@click.option("-S", "--add-scram", multiple=True,
              help="A SCRAM_CREDENTIAL to add to the __cluster_metadata log, e.g. "
                   "'SCRAM-SHA-256=[name=alice,password=alice-secret]'.")
@click.option("-g", "--ignore-formatted", is_flag=True, help="Skip directories already formatted.")
@click.option("-r", "--release-version", help="The release version for the initial feature settings "
                                              "(default: the latest production one).")
@click.option("-f", "--feature", multiple=True, metavar="NAME=LEVEL", help="A feature's level, e.g. "
                                                                          "transaction.version=1 (repeatable).")
@click.option("-s", "--standalone", is_flag=True,
              help="Initialize a controller as a single-node dynamic quorum (KIP-853).")
@click.option("-N", "--no-initial-controllers", is_flag=True,
              help="Initialize a server without specifying a dynamic quorum.")
@click.option("-I", "--initial-controllers", metavar="INITIAL_CONTROLLERS",
              help="Initialize a server with this dynamic quorum: id@hostname:port:directory, comma-separated.")
def format_(config: str, cluster_id: str, add_scram: tuple[str, ...], ignore_formatted: bool,
            release_version: str | None, feature: tuple[str, ...], standalone: bool, no_initial_controllers: bool,
            initial_controllers: str | None) -> None:
    """Format the node's log directories (Formatter.run)."""
    from kproto.server.storage import StorageError, format_storage, parse_feature, read_config
    flags = [f for f, on in (("--standalone/-s", standalone), ("--no-initial-controllers/-N", no_initial_controllers),
                             ("--initial-controllers/-I", initial_controllers is not None)) if on]
    if len(flags) > 1:              # argparse's mutually exclusive group
        _fail(f"argument {flags[1]}: not allowed with argument {flags[0]}")
    try:
        props = read_config(config)
        if (standalone or initial_controllers is not None) and props.get("controller.quorum.voters"):
            _fail("You cannot specify controller.quorum.voters and format the node with --initial-controllers or "
                  "--standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and "
                  "specify controller.quorum.bootstrap.servers instead.")
        voters = _voters(props, standalone, initial_controllers)
        lines = format_storage(props, cluster_id, ignore_formatted=ignore_formatted,
                               release_version=release_version, features=[parse_feature(f) for f in feature],
                               scram=add_scram, voters=voters, no_initial_controllers=no_initial_controllers)
    except (StorageError, OSError) as e:
        _fail(str(e))
    click.echo("\n".join(lines))


def _voters(props: dict[str, str], standalone: bool, initial_controllers: str | None) -> dict | None:
    """The initial voters of ``--standalone`` (this node at its controller listener, a new
    directory id) or ``--initial-controllers`` (DynamicVoters.parse: ``id@host:port:directoryId``)."""
    import uuid
    from kproto.log.manager import parse_topic_id
    from kproto.server.cluster.raft import Voter
    from kproto.tools.metadata_quorum import controller_endpoints
    if standalone:
        node_id = int(props.get("node.id", -1))
        return {node_id: Voter(node_id, uuid.uuid4(), tuple(controller_endpoints(props)[:1]))}
    if initial_controllers is None:
        return None
    name = controller_endpoints(props)[0][0]
    out = {}
    for item in (s.strip() for s in initial_controllers.split(",") if s.strip()):
        node, at, rest = item.partition("@")
        address, _, directory = rest.rpartition(":")
        host, colon, port = address.rpartition(":")
        try:
            if not (at and colon and directory):
                raise ValueError
            out[int(node)] = Voter(int(node), parse_topic_id(directory), ((name, host.strip("[]"), int(port)),))
        except ValueError:
            _fail(f"Unable to parse voter {item}: the expected format is id@host:port:directoryId")
    return out


@storage.command("info", cls=OneLineCommand, epilog=_EXIT)
@click.option("-c", "--config", "config", required=True, type=click.Path(dir_okay=False),
              help="The Kafka configuration file to use.")
def info(config: str) -> None:
    """Get information about the node's log directories."""
    from kproto.server.storage import StorageError, read_config, storage_info
    try:
        lines, ok = storage_info(read_config(config))
    except StorageError as e:
        _fail(str(e))
    click.echo("\n".join(lines))
    sys.exit(ExitStatus.OK if ok else ExitStatus.ERROR)


@storage.command("version-mapping", cls=OneLineCommand, epilog=_EXIT)
@click.option("-r", "--release-version", help="The release version to map (default: the latest production one).")
def version_mapping(release_version: str | None) -> None:
    """The feature levels a release version sets."""
    from kproto.features import LATEST_PRODUCTION, metadata_version_name
    from kproto.server.storage import StorageError, release_level
    from kproto.tools.features import version_mapping_lines
    shown = release_version or metadata_version_name(LATEST_PRODUCTION)
    try:
        level = release_level(shown, with_unstable=True)
    except StorageError as e:
        _fail(str(e))
    click.echo("\n".join(version_mapping_lines(level, shown)))


# kafka-features.sh's sub-command, the same in both of Kafka's tools (FeatureCommand / StorageTool)
storage.add_command(feature_dependencies)
