"""``kproto users``: SCRAM credentials as ``kafka-configs.sh --entity-type users``
manages them; kept as a shorthand of ``kproto configs --entity-type users``
(kproto/tools/configs.py does the work, one user at a time).

    kproto users --bootstrap-server H:P --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' \\
        --entity-type users --entity-name alice
    kproto users --bootstrap-server H:P --describe --entity-type users --entity-name alice
    kproto users --bootstrap-server H:P --alter --delete-config SCRAM-SHA-512 --entity-type users --entity-name alice
"""

from __future__ import annotations

import click

from kproto.errors import UsageError
from kproto.tools.main import OneLineCommand, exit_status_help


@click.command("users", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker refused or could not be reached (one line on stderr)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", required=True, metavar="HOST:PORT",
              help="The Kafka server to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file with client configs (security.protocol, sasl.*, ssl.*).")
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--add-config", help="SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=...]")
@click.option("--delete-config", help="Comma-separated mechanisms to remove: SCRAM-SHA-256,SCRAM-SHA-512")
@click.option("--entity-type", type=click.Choice(["users"]), default="users", show_default=True,
              help="Only users: SCRAM credentials.")
@click.option("--entity-name", "names", multiple=True, help="The user (repeatable; none with --describe: all).")
@click.option("--user", "users_", multiple=True, help="Same as --entity-type users --entity-name.")
@click.pass_context
def users(ctx: click.Context, bootstrap_server: str, command_config: str | None, alter: bool, describe: bool,
          add_config: str | None, delete_config: str | None, entity_type: str, names: tuple[str, ...],
          users_: tuple[str, ...]) -> None:
    """Add, delete or describe users' SCRAM credentials (kproto configs --entity-type users)."""
    from kproto.tools.configs import configs
    names = names + users_
    if alter == describe:
        raise UsageError("Command must include exactly one action: --alter, --describe")
    if alter and (not names or not (add_config or delete_config)):
        raise UsageError("--alter needs --entity-name and --add-config or --delete-config")
    common = dict(bootstrap_server=bootstrap_server, command_config=command_config, describe=describe, alter=alter,
                  entity_types=("users",), entity_defaults=(), topic=None, broker=None, broker_defaults=False,
                  user=None, client=None, add_config=add_config, add_config_file=None,
                  delete_configs=(delete_config,) if delete_config else (), describe_all=False)
    if describe:
        if len(names) > 1:
            raise UsageError("--describe takes one --entity-name (or none: every user)")
        ctx.invoke(configs, entity_names=names, **common)
        return
    for name in names:
        ctx.invoke(configs, entity_names=(name,), **common)
