"""``kproto users``: SCRAM credentials as ``kafka-configs.sh --entity-type users`` manages them.

    kproto users --bootstrap-server H:P --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' \\
        --entity-type users --entity-name alice
    kproto users --bootstrap-server H:P --describe --entity-type users --entity-name alice
    kproto users --bootstrap-server H:P --alter --delete-config SCRAM-SHA-512 --entity-type users --entity-name alice

Output and checks as Kafka's ConfigCommand (3.x/4.x). The password is salted
here (AlterUserScramCredentials carries salt + SaltedPassword, never the
password) and never printed.
"""

from __future__ import annotations

import os
import re

import click

from kproto.errors import ErrorCode, UsageError
from kproto.tools.main import OneLineCommand, exit_status_help

DEFAULT_ITERATIONS = 4096     # ConfigCommand.DefaultScramIterations
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


def parse_add_config(text: str) -> dict[str, tuple[int, str]]:
    """``SCRAM-SHA-256=[iterations=8192,password=pw],SCRAM-SHA-512=[password=pw]``
    -> {mechanism: (iterations, password)} (ConfigCommand's bracket syntax)."""
    from kproto.security.scram import MECHANISMS
    out = {}
    for m in re.finditer(r"\s*([^=,\s]+)=(\[[^\]]*\]|[^,]*)\s*(?:,|$)", text):
        name, value = m.group(1), m.group(2)
        if name not in MECHANISMS:
            raise UsageError(f"Only quota and SCRAM credential configs can be added for 'users' using "
                             f"--bootstrap-server. Unexpected config names: Set({name})")
        cred = _CREDENTIAL.fullmatch(value[1:-1] if value.startswith("[") else value)
        if cred is None:
            raise UsageError(f"Invalid credential property {name}=<hidden>")    # the value holds a password
        iterations = int(cred.group(1)) if cred.group(1) not in (None, "", "-1") else DEFAULT_ITERATIONS
        if iterations < MECHANISMS[name].min_iterations:
            raise UsageError(f"Iterations {iterations} is less than the minimum "
                             f"{MECHANISMS[name].min_iterations} required for {name}")
        out[name] = (iterations, cred.group(2))
    if not out:
        raise UsageError("--add-config: expected SCRAM-SHA-256=[iterations=N,password=PW] or SCRAM-SHA-512=[...]")
    return out


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
def users(bootstrap_server: str, command_config: str | None, alter: bool, describe: bool, add_config: str | None,
          delete_config: str | None, entity_type: str, names: tuple[str, ...], users_: tuple[str, ...]) -> None:
    """Add, delete or describe users' SCRAM credentials like kafka-configs.sh --entity-type users."""
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.schemas import protocol as P
    from kproto.security.scram import BY_TYPE, MECHANISMS
    names = names + users_
    if alter == describe:
        raise UsageError("Command must include exactly one action: --alter, --describe")
    if alter and (not names or not (add_config or delete_config)):
        raise UsageError("--alter needs --entity-name and --add-config or --delete-config")
    adds = parse_add_config(add_config) if add_config else {}
    deletes = [m.strip() for m in (delete_config or "").split(",") if m.strip()]
    for m in deletes:
        if m not in MECHANISMS:
            raise UsageError(f"Only quota and SCRAM credential configs can be deleted for 'users' using "
                             f"--bootstrap-server. Unexpected config names: Set({m})")
    config = load_client_properties(command_config) if command_config else None
    with BrokerClient(bootstrap_server, config=config) as client:
        if describe:
            r = client.request(P.describe_user_scram_credentials.API.key,
                               {"users": [{"name": n} for n in names] or None})
            if r.error_code:
                raise UsageError(f"{ErrorCode(r.error_code).name}: {r.error_message or ErrorCode(r.error_code).description}")
            for u in r.results:
                if u.error_code:
                    click.echo(f"Error retrieving SCRAM credential configs for user-principal '{u.user}': "
                               f"{_exception(u.error_code)}: {u.error_message}")
                    continue
                text = ", ".join(f"{BY_TYPE[i.mechanism].name}=iterations={i.iterations}" for i in u.credential_infos)
                click.echo(f"SCRAM credential configs for user-principal '{u.user}' are {text}")
            return
        # One request per mechanism: Kafka's controller (ScramControlManager) refuses a user
        # named twice in one AlterUserScramCredentials request with DUPLICATE_RESOURCE.
        bodies = [{"deletions": [{"name": n, "mechanism": MECHANISMS[m].type} for n in names], "upsertions": []}
                  for m in deletes]
        for mech, (iterations, password) in adds.items():
            ups = []
            for n in names:
                salt = os.urandom(32)
                salted = MECHANISMS[mech].salted_password(password.encode(), salt, iterations)
                ups.append({"name": n, "mechanism": MECHANISMS[mech].type, "iterations": iterations,
                            "salt": salt, "salted_password": salted})
            bodies.append({"deletions": [], "upsertions": ups})
        for body in bodies:
            r = client.request(P.alter_user_scram_credentials.API.key, body)
            failed = [u for u in r.results if u.error_code]
            if failed:
                u = failed[0]
                raise UsageError(f"{_exception(u.error_code)}: "
                                 f"{u.error_message or ErrorCode(u.error_code).description}")
        for n in names:
            click.echo(f"Completed updating config for user {n}.")


def _exception(code: int) -> str:
    """Kafka's exception class name for an error code (what ConfigCommand prints)."""
    return "".join(w.title() for w in ErrorCode(code).name.split("_")) + "Exception"
