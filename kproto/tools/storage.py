"""``kproto storage``: kafka-storage.sh (kafka.tools.StorageTool, Kafka 4.4).

    kproto storage random-uuid
    kproto storage format -t CLUSTER_ID -c server.properties [--ignore-formatted] [--release-version V]
                          [--feature NAME=LEVEL...] [--add-scram 'SCRAM-SHA-256=[name=alice,password=...]'...]
    kproto storage info -c server.properties
    kproto storage version-mapping [--release-version V]
    kproto storage feature-dependencies --feature NAME=LEVEL...

``format`` writes what Kafka's writes (meta.properties in every directory, the bootstrap snapshot
in a controller's metadata directory), so Kafka's broker and ``kproto serve`` both start on it;
the facts are kproto.server.storage's. Kafka's refusals are one line on stderr, exit 1.

Differences: ``--standalone``, ``--initial-controllers`` and ``--no-initial-controllers`` (KIP-853
dynamic quorums) are refused: kproto's quorum is static (``controller.quorum.voters``).
"""

from __future__ import annotations

import sys

import click

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
@click.option("-s", "--standalone", is_flag=True, hidden=True)
@click.option("-N", "--no-initial-controllers", is_flag=True, hidden=True)
@click.option("-I", "--initial-controllers", hidden=True)
def format_(config: str, cluster_id: str, add_scram: tuple[str, ...], ignore_formatted: bool,
            release_version: str | None, feature: tuple[str, ...], standalone: bool, no_initial_controllers: bool,
            initial_controllers: str | None) -> None:
    """Format the node's log directories (Formatter.run)."""
    from kproto.server.storage import StorageError, format_storage, parse_feature, read_config
    if standalone or no_initial_controllers or initial_controllers:
        _fail("kproto storage: dynamic controller quorums (KIP-853: --standalone, --initial-controllers, "
              "--no-initial-controllers) are not supported; set controller.quorum.voters")
    try:
        lines = format_storage(read_config(config), cluster_id, ignore_formatted=ignore_formatted,
                               release_version=release_version, features=[parse_feature(f) for f in feature],
                               scram=add_scram)
    except (StorageError, OSError) as e:
        _fail(str(e))
    click.echo("\n".join(lines))


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


@storage.command("feature-dependencies", cls=OneLineCommand, epilog=_EXIT)
@click.option("-f", "--feature", multiple=True, required=True, metavar="NAME=LEVEL",
              help="A feature and its level (repeatable).")
def feature_dependencies(feature: tuple[str, ...]) -> None:
    """The features and levels a feature level depends on."""
    from kproto.tools.features import feature_dependencies_lines
    try:
        click.echo("\n".join(feature_dependencies_lines(feature)))
    except ValueError as e:
        _fail(str(e))
