"""``kproto features``: kafka-features.sh (org.apache.kafka.tools.FeatureCommand, Kafka 4.4).

    kproto features --bootstrap-server H:P describe
    kproto features --bootstrap-server H:P upgrade   (--feature NAME=LEVEL... | --metadata V | --release-version V) [--dry-run]
    kproto features --bootstrap-server H:P downgrade (--feature NAME=LEVEL... | --metadata V | --release-version V) [--unsafe] [--dry-run]
    kproto features --bootstrap-server H:P disable   --feature NAME... [--unsafe] [--dry-run]
    kproto features version-mapping [--release-version V]
    kproto features feature-dependencies --feature NAME=LEVEL...

``describe`` prints one padded line per supported feature, in name order (metadata.version
as its release name, e.g. 4.4-IV2); the others print a line per feature as FeatureCommand.update
does ("X was upgraded to N.", "Could not ... <broker's message>") and on failure
"N out of M operation(s) failed." on stderr, exit 1. Texts measured against Kafka 4.4's tool
(tests/parity/test_kafka_parity_features.py). The facts are kproto.features'.

Differences: usage problems are one line (Kafka's argparse4j prints its usage), exit 2.
"""

from __future__ import annotations

import sys

import click

from kproto.features import (
    DEPENDENCIES, METADATA_VERSION, METADATA_VERSIONS, LATEST_PRODUCTION, SUPPORTED, UpgradeType, metadata_version_level,
    metadata_version_name, release_defaults,
)
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

_EXIT = exit_status_help("a request failed or an update was refused (Kafka's messages)")


def _level_text(name: str, level: int) -> str:
    return metadata_version_name(level) if name == METADATA_VERSION else str(level)


def _fail(message: str) -> None:
    """A TerseException of FeatureCommand: its message on stderr, exit 1."""
    click.echo(message, err=True)
    sys.exit(ExitStatus.ERROR)


def _admin_call(ctx: click.Context, call):
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KafkaError, KprotoError
    bootstrap, command_config = ctx.obj["bootstrap_server"], ctx.obj["command_config"]
    if not bootstrap:
        raise UsageProblem("one of the arguments --bootstrap-server is required")
    try:
        config = load_client_properties(command_config) if command_config else None
        with BrokerClient(bootstrap, config=config) as client:
            return call(Admin(client))
    except (KafkaError, KprotoError, OSError) as e:
        _fail(f"kproto: error: {e}")


@click.group("features", context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT)
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="The server(s) to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.pass_context
def features(ctx: click.Context, bootstrap_server: str | None, command_config: str | None) -> None:
    """Manage feature flags like kafka-features.sh."""
    ctx.ensure_object(dict).update(bootstrap_server=bootstrap_server, command_config=command_config)


@features.command(cls=OneLineCommand, epilog=_EXIT)
@click.pass_context
def describe(ctx: click.Context) -> None:
    """Describes the current active feature flags."""
    meta = _admin_call(ctx, lambda admin: admin.describe_features())
    epoch = "-" if meta.epoch is None else str(meta.epoch)
    for name in sorted(meta.supported):
        lo, hi = meta.supported[name]
        fields = (f"Feature: {name:<40}  SupportedMinVersion: {_level_text(name, lo):<15}  "
                  f"SupportedMaxVersion: {_level_text(name, hi):<15}  "
                  f"FinalizedVersionLevel: {_level_text(name, meta.finalized.get(name, 0)):<15}  Epoch: {epoch}")
        click.echo(fields)


def _parse_feature(text: str) -> tuple[str, int]:
    """FeatureCommand.parseNameAndLevel."""
    name, eq, level = text.partition("=")
    if not eq:
        _fail(f"Can't parse feature=level string {text}: equals sign not found.")
    try:
        value = int(level.strip())
        if not -32768 <= value <= 32767:
            raise ValueError
    except ValueError:
        _fail(f"Can't parse feature=level string {text}: unable to parse {level.strip()} as a short.")
    return name.strip(), value


def _unknown_metadata(version: str) -> None:
    _fail(f"Unknown metadata.version '{version}'. Supported metadata.version are: "
          + ", ".join(METADATA_VERSIONS.values()))


def _updates(op: str, metadata: str | None, release_version: str | None, feature: tuple[str, ...],
             kind: UpgradeType) -> dict[str, tuple[int, int]]:
    """FeatureCommand.handleUpgradeOrDowngrade: the updates to send, name -> (level, type)."""
    if release_version is not None and (metadata is not None or feature):
        _fail("Can not specify `release-version` with other feature flags.")
    updates: dict[str, tuple[int, int]] = {}
    if release_version is not None:
        level = metadata_version_level(release_version)
        if level is None:
            _unknown_metadata(release_version)
        updates[METADATA_VERSION] = (level, kind)
        for name, default in release_defaults(level).items():
            if kind is not UpgradeType.UPGRADE or default > 0:    # no upgrade "to 0"
                updates[name] = (default, kind)
        return updates
    if metadata is not None:
        click.echo(" `metadata` flag is deprecated and may be removed in a future release.")
        level = metadata_version_level(metadata)
        if level is None:
            _unknown_metadata(metadata)
        updates[METADATA_VERSION] = (level, kind)
    for text in feature:
        name, level = _parse_feature(text)
        if level < 0:                   # the FeatureUpdate constructor's checks
            _fail("Cannot specify a negative version level.")
        if level < 1 and kind is UpgradeType.UPGRADE:
            _fail("The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the "
                  f"provided maxVersionLevel:{level} is < 1.")
        if name in updates:
            _fail(f"Feature {name} was specified more than once.")
        updates[name] = (level, kind)
    return updates


def _update(ctx: click.Context, op: str, updates: dict[str, tuple[int, int]], dry_run: bool) -> None:
    """FeatureCommand.update: a line per feature in name order; failures counted on stderr."""
    if not updates:
        _fail(f"You must specify at least one feature to {op}")
    errors = _admin_call(ctx, lambda admin: admin.update_features(updates, validate_only=dry_run))
    failures = 0
    for name in sorted(errors):
        level, error = updates[name][0], errors[name]
        what = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
        if error is not None:
            click.echo(f"{'Can not' if dry_run else 'Could not'} {what}. {error}")
            failures += 1
        else:
            done = "disabled." if op == "disable" else f"{op}d to {level}."
            click.echo(f"{name}{' can be ' if dry_run else ' was '}{done}")
    if failures:
        _fail(f"{failures} out of {len(updates)} operation(s) failed.")


_metadata_opt = click.option("--metadata", help="DEPRECATED -- The level to which we should change the metadata.")
_release_opt = click.option("--release-version", help="The release version to update all features to (e.g. 4.0).")
_feature_opt = click.option("--feature", multiple=True, help="A feature change, in feature=level format.")
_dry_run_opt = click.option("--dry-run", is_flag=True, help="Validate this change, but do not perform it.")
_unsafe_opt = click.option("--unsafe", is_flag=True,
                           help="Perform this downgrade even if it may irreversibly destroy metadata.")


@features.command(cls=OneLineCommand, epilog=_EXIT)
@_metadata_opt
@_release_opt
@_feature_opt
@_dry_run_opt
@click.pass_context
def upgrade(ctx: click.Context, metadata, release_version, feature, dry_run) -> None:
    """Upgrade one or more feature flags."""
    _update(ctx, "upgrade", _updates("upgrade", metadata, release_version, feature, UpgradeType.UPGRADE), dry_run)


@features.command(cls=OneLineCommand, epilog=_EXIT)
@_metadata_opt
@_release_opt
@_feature_opt
@_unsafe_opt
@_dry_run_opt
@click.pass_context
def downgrade(ctx: click.Context, metadata, release_version, feature, unsafe, dry_run) -> None:
    """Downgrade one or more feature flags."""
    kind = UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE
    _update(ctx, "downgrade", _updates("downgrade", metadata, release_version, feature, kind), dry_run)


@features.command(cls=OneLineCommand, epilog=_EXIT)
@click.option("--feature", multiple=True, help="A feature flag to disable.")
@_unsafe_opt
@_dry_run_opt
@click.pass_context
def disable(ctx: click.Context, feature, unsafe, dry_run) -> None:
    """Disable one or more feature flags (downgrade them to 0)."""
    kind = UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE
    updates: dict[str, tuple[int, int]] = {}
    for name in feature:
        if name in updates:
            _fail(f"Feature {name} was specified more than once.")
        updates[name] = (0, kind)
    _update(ctx, "disable", updates, dry_run)


def version_mapping_lines(level: int, shown: str) -> list[str]:
    """FeatureCommand.handleVersionMapping's lines (StorageTool's version-mapping prints the same)."""
    return [f"metadata.version={level} ({shown})"] + [f"{n}={d}" for n, d in release_defaults(level).items()]


@features.command("version-mapping", cls=OneLineCommand, epilog=_EXIT)
@click.option("--release-version", help="The release version to map (default: the latest production one).")
def version_mapping(release_version: str | None) -> None:
    """The feature levels a release version sets (FeatureCommand.handleVersionMapping)."""
    shown = release_version or metadata_version_name(LATEST_PRODUCTION)
    level = metadata_version_level(shown)
    if level is None:
        _fail(f"Unknown release version '{shown}'. Supported versions are: "
              f"{METADATA_VERSIONS[min(METADATA_VERSIONS)]} to {metadata_version_name(LATEST_PRODUCTION)}")
    click.echo("\n".join(version_mapping_lines(level, shown)))


def feature_dependencies_lines(specs: tuple[str, ...]) -> list[str]:
    """FeatureCommand.handleFeatureDependencies (and StorageTool's): what each ``name=level`` needs;
    a spec Kafka refuses raises ValueError with its message."""
    out: list[str] = []
    for spec in specs:
        name, eq, text = spec.partition("=")
        try:
            level = int(text)
        except ValueError:
            raise ValueError(f"Can't parse feature=level string {spec}: "
                             + ("equals sign not found." if not eq else f"unable to parse {text} as a short."))
        if name == METADATA_VERSION:
            if level not in METADATA_VERSIONS:
                raise ValueError(f"Unknown metadata.version {level}")
            out.append(f"{spec} ({metadata_version_name(level)}) has no dependencies.")
            continue
        if name not in SUPPORTED:
            raise ValueError(f"Unknown feature: {name}")
        lo, hi = SUPPORTED[name]
        if not lo <= level <= hi:
            raise ValueError(f"Feature level {level} is not supported for feature {name}")
        deps = DEPENDENCIES.get((name, level), {})
        if not deps:
            out.append(f"{spec} has no dependencies.")
            continue
        out.append(f"{spec} requires:")
        out += [f"    {d}={lv}" + (f" ({metadata_version_name(lv)})" if d == METADATA_VERSION else "")
                for d, lv in deps.items()]
    return out


@features.command("feature-dependencies", cls=OneLineCommand, epilog=_EXIT)
@click.option("--feature", "feature", multiple=True, required=True, metavar="NAME=LEVEL",
              help="A feature and its level, e.g. eligible.leader.replicas.version=1 (repeatable).")
def feature_dependencies(feature: tuple[str, ...]) -> None:
    """The features and levels a feature level depends on (FeatureCommand.handleFeatureDependencies)."""
    try:
        click.echo("\n".join(feature_dependencies_lines(feature)))
    except ValueError as e:
        _fail(str(e))
