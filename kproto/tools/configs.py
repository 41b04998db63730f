"""``kproto configs``: kafka-configs.sh (Kafka 4.4's org.apache.kafka.tools.ConfigCommand)
with its flags and its lines: dynamic configs of topics, brokers, broker loggers, groups and
client metrics subscriptions (DescribeConfigs with synonyms, IncrementalAlterConfigs as Kafka
4.4's tool does), client quotas of users, clients and ips (DescribeClientQuotas/AlterClientQuotas)
and users' SCRAM credentials (the salted password only leaves this process).

    kproto configs --bootstrap-server H:P --alter --entity-type topics --entity-name orders \\
        --add-config 'retention.ms=86400000,cleanup.policy=[compact,delete]'
    kproto configs --bootstrap-server H:P --describe --entity-type brokers --entity-default
    kproto configs --bootstrap-server H:P --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'

Errors are one line (Kafka's tool prints a stack trace): ``kproto: error: <Exception>:
<message>``, exit status 1; bad flags exit 2 with Kafka's message."""

from __future__ import annotations

import os
import re

import click

from kproto.errors import ErrorCode, KafkaError, UsageError, java_exception, java_exception_class
from kproto.server.quotas import CLIENT_QUOTA_KEYS, IP_QUOTA_KEYS, valid_ip_entity
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
ENTITY_TYPES = ("topics", "brokers", "broker-loggers", "users", "clients", "ips", "client-metrics", "groups")
#: --entity-type -> (ConfigResource type, the ConfigSource of its dynamic configs), as
#: ConfigCommand.describeConfigContext pairs them (a broker's cluster default: 3)
RESOURCES = {"topics": (TOPIC, 1), "brokers": (BROKER, 2), "broker-loggers": (BROKER_LOGGER, 6),
             "client-metrics": (CLIENT_METRICS, 7), "groups": (GROUP, 8)}
# DescribeConfigsResponse's config_source -> Kafka's ConfigEntry.ConfigSource name
SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
           4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
           7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
QUOTA_CONFIGS = tuple(CLIENT_QUOTA_KEYS)      # QuotaConfig.isClientOrUserQuotaConfig
QUOTA_ENTITY = {"users": "user", "clients": "client-id", "ips": "ip"}
QUOTA_LABEL = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 32, 33, 48, 49
DESCRIBE_SCRAM, ALTER_SCRAM = 50, 51
LIST_CONFIG_RESOURCES = 74


class Refused(UsageProblem):
    """What ConfigCommand refuses with an IllegalArgumentException or an
    InvalidConfigurationException: Kafka 4.4 prints the message alone and exits 1."""

    exit_code = ExitStatus.ERROR


def failure(code: ErrorCode, message: str | None) -> KafkaError:
    return KafkaError(f"{java_exception_class(code)}: {message or code.description}", error_code=code)


def parse_add_config(text: str) -> dict[str, str]:
    """ConfigCommand.parseConfigsToBeAdded: ``k=v`` pairs split on the commas outside
    ``[...]``, brackets removed from the values (``cleanup.policy=[compact,delete]``)."""
    out = {}
    for pair in re.split(r",(?=[^\]]*(?:\[|$))", text):
        parts = re.split(r"\s*=\s*(?=[^\]]*(?:\[|$))", pair)
        if len(parts) != 2:
            raise UsageProblem('requirement failed: Invalid entity config: all configs to be added must be in the '
                               'format "key=val".')
        out[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    for key in out:
        if not re.fullmatch(r"[a-zA-Z0-9._-]*", key):
            raise UsageProblem(f"Invalid character found for config key: {key}")
    return out


def java_double(value: float) -> str:
    """Double.toString: 1024.0, 0.5, 1.0E7 (the shortest digits, as Python's repr)."""
    if 1e-3 <= abs(value) < 1e7 or value == 0:
        return repr(float(value))
    from decimal import Decimal
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    return f"{'-' if sign else ''}{ds[0]}.{ds[1:] or '0'}E{len(ds) - 1 + exp}"


@click.command("configs", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker refused or could not be reached (one line on stderr)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", required=True, metavar="HOST:PORT",
              help="The Kafka server to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file with client configs (security.protocol, sasl.*, ssl.*).")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--alter", is_flag=True, help="Alter the configuration for the entity.")
@click.option("--entity-type", "entity_types", multiple=True, type=click.Choice(ENTITY_TYPES),
              help="topics, brokers, broker-loggers, users, clients, ips, client-metrics or groups "
                   "(users then clients: a user's quota for a client).")
@click.option("--entity-name", "entity_names", multiple=True,
              help="Name of the entity (topic name, broker id, user principal, client id, IP address, "
                   "client metrics subscription, group id).")
@click.option("--entity-default", "entity_defaults", multiple=True, is_flag=True, flag_value="",
              help="The default for the entity type (brokers, users, clients, ips).")
@click.option("--topic", help="--entity-type topics --entity-name TOPIC.")
@click.option("--broker", help="--entity-type brokers --entity-name ID.")
@click.option("--broker-defaults", is_flag=True, help="--entity-type brokers --entity-default.")
@click.option("--broker-logger", help="--entity-type broker-loggers --entity-name ID.")
@click.option("--group", help="--entity-type groups --entity-name GROUP.")
@click.option("--user", help="--entity-type users --entity-name USER.")
@click.option("--client", help="--entity-type clients --entity-name CLIENT.")
@click.option("--ip", help="--entity-type ips --entity-name IP.")
@click.option("--add-config", help="k1=v1,k2=[v1,v2,v2],k3=v3 (SCRAM-SHA-256=[iterations=8192,password=...]).")
@click.option("--add-config-file", type=click.Path(dir_okay=False), help="A properties file of configs to add.")
@click.option("--delete-config", "delete_configs", multiple=True, help="Config keys to remove: k1,k2.")
@click.option("--all", "describe_all", is_flag=True,
              help="All configs of the topic, broker, broker logger, group or subscription, not only the dynamic.")
def configs(bootstrap_server, command_config, describe, alter, entity_types, entity_names, entity_defaults, topic,
            broker, broker_defaults, broker_logger, group, user, client, add_config, add_config_file, delete_configs,
            describe_all, ip=None) -> None:
    """Describe or alter topic, broker, broker-logger, user, client, ip, client-metrics and group configs like
    kafka-configs.sh."""
    types, names = list(entity_types), list(entity_names) + list(entity_defaults)
    for kind, name in (("topics", topic), ("brokers", broker), ("broker-loggers", broker_logger), ("users", user),
                       ("clients", client), ("ips", ip), ("groups", group)):
        if name is not None:
            types.append(kind)
            names.append(name)
    if broker_defaults:
        types.append("brokers")
        names.append("")
    if describe == alter:
        raise UsageProblem("Command must include exactly one action: --describe, --alter")
    if not types:
        raise UsageProblem("At least one entity type must be specified")
    if len(types) > 1 and sorted(types) != ["clients", "users"]:
        raise UsageProblem("Only '--entity-type users' and '--entity-type clients' may be specified together")
    if alter and len(types) != len(names):
        raise UsageProblem("An entity name must be specified for every entity type")
    if len(names) > len(types):
        raise UsageProblem("More entity names specified than entity types")
    if describe and (add_config or add_config_file or delete_configs):
        raise UsageProblem("Option --describe can't be used with --add-config, --add-config-file or --delete-config")
    if describe_all and not (describe and types[0] in RESOURCES):
        raise UsageProblem("--all can be used only with --describe of topics or brokers")
    # ConfigCommandOptions.checkArgs: only these have a cluster default; a broker logger is one broker's
    with_default = ("users", "clients", "brokers", "ips")
    if describe and "" in names and types[0] not in with_default:
        raise UsageProblem(f"--entity-default must not be specified with --describe of {types[0]}")
    if describe and types[0] == "broker-loggers" and not names:
        raise UsageProblem("An entity name must be specified with --describe of broker-loggers")
    if alter and types[0] not in with_default and not names[0]:
        raise UsageProblem(f"An entity name must be specified with --alter of {types[0]}")
    if types[0] == "brokers" and names and names[0] and not names[0].isdigit():
        raise UsageProblem(f"The entity name for brokers must be a valid integer broker id, found: {names[0]}")
    if types[0] == "broker-loggers" and names and names[0] and not names[0].isdigit():
        raise UsageProblem(f"The entity name for broker-loggers must be a valid integer broker id, but it is: "
                           f"{names[0]}")
    if types[0] == "ips" and names and names[0] and not valid_ip_entity(names[0]):
        raise Refused(f"The entity name for ips must be a valid IP or resolvable host, but it is: {names[0]}")
    adds: dict[str, str] = {}
    if add_config_file:
        from kproto.properties import parse_properties
        try:
            adds.update(parse_properties(open(add_config_file).read(), add_config_file, strict=False))
        except OSError as e:
            raise UsageProblem(f"cannot read {add_config_file}: {e.strerror}") from None
    if add_config:
        adds.update(parse_add_config(add_config))
    deletes = [d.strip() for v in delete_configs for d in v.split(",") if d.strip()]
    if alter and not (adds or deletes):
        raise UsageProblem("At least one of --add-config, --add-config-file or --delete-config must be specified "
                           "with --alter")
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    config = load_client_properties(command_config) if command_config else None
    with BrokerClient(bootstrap_server, config=config) as c:
        admin = Admin(c)
        try:
            if describe:
                _describe(admin, types, names, describe_all)
            else:
                _alter(admin, types, names, adds, deletes)
        finally:
            admin.close()


# --- topics and brokers -----------------------------------------------------------------------

def resource_configs(admin, kind: str, name: str, *, synonyms: bool, describe_all: bool) -> list:
    """ConfigCommand.getResourceConfig: the resource's entries of its dynamic source (all
    with ``describe_all``), sorted by name; each (name, value, sensitive, synonyms)."""
    rtype, dynamic = RESOURCES[kind]
    if kind == "brokers" and name == "":
        dynamic = 3
    body = admin.client.request(DESCRIBE_CONFIGS, {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": synonyms, "include_documentation": False})
    r = body.results[0]
    if r.error_code:
        raise failure(ErrorCode(r.error_code), r.get("error_message"))
    out = []
    for e in r.configs:
        source = e.get("config_source", -1)
        if describe_all or source == dynamic:
            out.append((e.name, e.value, e.is_sensitive,
                        [(SOURCES.get(s.source, "UNKNOWN"), s.name, s.value) for s in (e.get("synonyms") or ())]))
    return sorted(out, key=lambda e: e[0])


def _describe(admin, types, names, describe_all) -> None:
    kind = types[0]
    if kind == "ips":
        _describe_quotas(admin, types, names)
        return
    if kind in ("users", "clients"):
        if admin.supports(DESCRIBE_CLIENT_QUOTAS):      # a broker without quotas has none to show
            _describe_quotas(admin, types, names)
        if "clients" not in types and "" not in names:
            _describe_scram(admin, names)
        return
    if kind == "client-metrics":
        # ConfigCommand lists the subscriptions (ListConfigResources) and describes those that exist
        listed = [r.resource_name for r in admin.client.request(LIST_CONFIG_RESOURCES, {
            "resource_types": [CLIENT_METRICS]}).config_resources]
        if names and names[0] not in listed:
            click.echo(f"The client-metric '{names[0]}' doesn't exist and doesn't have dynamic config.")
            return
        entities = [names[0]] if names else listed
    elif names and kind == "topics" and names[0] not in admin.metadata().topics:
        # ConfigCommand.describeResourceConfig lists the topics (internal ones too) first
        click.echo(f"The topic '{names[0]}' doesn't exist and doesn't have dynamic config.")  # Kafka 4.4's
        return
    elif kind == "groups":
        # every group (ListGroups) then those with configs only (ListConfigResources)
        entities = [g.group_id for g in admin.list_groups()]
        entities += [g for g in _group_config_names(admin) if g not in entities]
        if names and names[0] not in entities:
            if not describe_all:
                click.echo(f"The group '{names[0]}' doesn't exist and doesn't have dynamic config.")
                return
        if names:
            entities = [names[0]]
    elif (names and kind == "broker-loggers" and not describe_all
          and names[0] not in {str(b.node_id) for b in admin.metadata([]).brokers}):
        click.echo(f"The broker-logger '{names[0]}' doesn't exist and doesn't have dynamic config.")
        return
    elif names:
        entities = [names[0]]
    elif kind == "topics":
        entities = sorted(admin.metadata().topics)
    else:
        entities = [str(b.node_id) for b in admin.metadata([]).brokers] + [""]
    for entity in entities:
        entries = resource_configs(admin, kind, entity, synonyms=True, describe_all=describe_all)
        if entity == "":
            click.echo(f"Default configs for {kind} in the cluster are:")
        else:
            click.echo(f"{'All' if describe_all else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
        for name, value, sensitive, syns in entries:
            text = ", ".join(f"{s}:{n}={v}" for s, n, v in syns)
            click.echo(f"  {name}={value if value is not None else 'null'} sensitive={str(sensitive).lower()} "
                       f"synonyms={{{text}}}")


def _group_config_names(admin) -> list[str]:
    """ConfigCommand.listGroupConfigResources: none from a broker without ListConfigResources v1."""
    if not admin.supports(LIST_CONFIG_RESOURCES) or admin.client.version(LIST_CONFIG_RESOURCES) < 1:
        return []
    body = admin.client.request(LIST_CONFIG_RESOURCES, {"resource_types": [GROUP]})
    return [r.resource_name for r in body.config_resources] if not body.error_code else []


def _alter(admin, types, names, adds, deletes) -> None:
    kind, name = types[0], names[0]
    if kind in RESOURCES:
        # ConfigCommand.alterConfig (Kafka 4.x, KIP-1011 for brokers): deletes checked against
        # the dynamic configs of a topic or broker (a client-metric's or group's missing key
        # deletes as a no-op, measured), a broker logger's additions and deletions against its
        # loggers; then IncrementalAlterConfigs, DELETE each deletion and SET each addition
        if kind in ("topics", "brokers", "broker-loggers"):
            old = {e[0] for e in resource_configs(admin, kind, name, synonyms=False, describe_all=False)}
            if kind == "broker-loggers":
                unknown = [k for k in deletes if k not in old] + [k for k in adds if k not in old]
                if unknown:
                    raise Refused(f"Invalid broker logger(s): {','.join(unknown)}")
            _invalid(deletes, old)
        from kproto.client.admin import AlterConfigOp, ConfigResource
        ops = [AlterConfigOp(k, "delete") for k in deletes] + [AlterConfigOp(k, "set", v) for k, v in adds.items()]
        _check(admin.incremental_alter_configs({ConfigResource(RESOURCES[kind][0], name): ops}))
    elif kind == "ips":
        unknown = [k for k in [*adds, *deletes] if k not in IP_QUOTA_KEYS]
        if unknown:
            raise Refused("Only connection quota configs can be added for 'ips' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown)}")
        _alter_quotas(admin, types, names, adds, deletes)
    else:
        _alter_users_clients(admin, types, names, adds, deletes)
    if name:
        click.echo(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        click.echo(f"Completed updating default config for {kind} in the cluster.")


def _invalid(deletes, existing) -> None:
    missing = [k for k in deletes if k not in existing]
    if missing:
        raise Refused(f"Invalid config(s): {','.join(missing)}")


def _check(results) -> None:
    for error, message in results.values():
        if error != ErrorCode.NONE:
            raise failure(error, message)


# --- users and clients: quotas and SCRAM --------------------------------------------------------

def _quota_filter(types, names) -> list[dict]:
    out = []
    for i, kind in enumerate(types):
        entity = QUOTA_ENTITY[kind]
        if i >= len(names):
            out.append({"entity_type": entity, "match_type": 2, "match": None})      # any
        elif names[i] == "":
            out.append({"entity_type": entity, "match_type": 1, "match": None})      # the default
        else:
            out.append({"entity_type": entity, "match_type": 0, "match": names[i]})  # exactly
    return out


def client_quotas(admin, types, names) -> list[tuple[list, dict[str, float]]]:
    """DescribeClientQuotas with ClientQuotaFilter.containsOnly (strict)."""
    if not admin.supports(DESCRIBE_CLIENT_QUOTAS):
        raise KafkaError("UnsupportedVersionException: The node does not support DESCRIBE_CLIENT_QUOTAS",
                         error_code=ErrorCode.UNSUPPORTED_VERSION)
    body = admin.client.request(DESCRIBE_CLIENT_QUOTAS, {"components": _quota_filter(types, names), "strict": True})
    if body.error_code:
        raise failure(ErrorCode(body.error_code), body.get("error_message"))
    return [([(e.entity_type, e.entity_name) for e in entry["entity"]], {v["key"]: v["value"] for v in entry["values"]})
            for entry in (body.entries or ())]


def _describe_quotas(admin, types, names) -> None:
    for entity, values in client_quotas(admin, types, names):
        parts = []
        for kind in ("user", "client-id", "ip"):
            for t, n in entity:
                if t == kind:
                    parts.append(f"{QUOTA_LABEL[kind]} '{n}'" if n is not None else f"the default {QUOTA_LABEL[kind]}")
        text = ", ".join(f"{k}={java_double(v)}" for k, v in sorted(values.items()))
        click.echo(f"Quota configs for {', '.join(parts)} are {text}")


def _describe_scram(admin, names) -> None:
    from kproto.security.scram import BY_TYPE
    r = admin.client.request(DESCRIBE_SCRAM, {"users": [{"name": n} for n in names] or None})
    if r.error_code:
        raise failure(ErrorCode(r.error_code), r.error_message)
    for u in r.results:
        # DescribeUserScramCredentialsResult.users() leaves out the users without credentials
        if u.error_code == ErrorCode.RESOURCE_NOT_FOUND:
            continue
        if u.error_code:                # description(user).get(): an ExecutionException around the cause
            click.echo(f"Error retrieving SCRAM credential configs for user-principal '{u.user}': "
                       f"ExecutionException: {java_exception(u.error_code, u.error_message)}")
            continue
        text = ", ".join(f"{BY_TYPE[i.mechanism].name}=iterations={i.iterations}" for i in u.credential_infos)
        click.echo(f"SCRAM credential configs for user-principal '{u.user}' are {text}")


def _alter_users_clients(admin, types, names, adds, deletes) -> None:
    from kproto.security.scram import MECHANISMS
    quota_adds = [k for k in adds if k in QUOTA_CONFIGS]
    scram_adds = {k: v for k, v in adds.items() if k in MECHANISMS}
    unknown_adds = [k for k in adds if k not in QUOTA_CONFIGS and k not in MECHANISMS]
    quota_deletes = [k for k in deletes if k in QUOTA_CONFIGS]
    scram_deletes = [k for k in deletes if k in MECHANISMS]
    unknown_deletes = [k for k in deletes if k not in QUOTA_CONFIGS and k not in MECHANISMS]
    if types[0] == "clients" or len(types) == 2:
        if unknown_adds or scram_adds:
            raise Refused(f"Only quota configs can be added for 'clients' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown_adds + list(scram_adds))}")
        if unknown_deletes or scram_deletes:
            raise Refused(f"Only quota configs can be deleted for 'clients' using --bootstrap-server. "
                             f"Unexpected config names: {','.join(unknown_deletes + scram_deletes)}")
    else:
        if unknown_adds:
            raise Refused(f"Only quota and SCRAM credential configs can be added for 'users' using "
                             f"--bootstrap-server. Unexpected config names: {','.join(unknown_adds)}")
        if unknown_deletes:
            raise Refused(f"Only quota and SCRAM credential configs can be deleted for 'users' using "
                             f"--bootstrap-server. Unexpected config names: {','.join(unknown_deletes)}")
        if scram_adds or scram_deletes:
            if "" in names:
                raise Refused("The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                                 "Credentials using --bootstrap-server.")
            if quota_adds or quota_deletes:
                raise Refused("Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
                                 "using --bootstrap-server.")
    if quota_adds or quota_deletes:
        _alter_quotas(admin, types, names, {k: adds[k] for k in quota_adds}, quota_deletes)
    else:
        alter_scram(admin, names, scram_credentials(scram_adds), scram_deletes)


def _alter_quotas(admin, types, names, adds: dict[str, str], deletes: list[str]) -> None:
    found = client_quotas(admin, types, names)
    old = found[0][1] if found else {}
    _invalid(deletes, old)
    ops = []
    for k, v in adds.items():
        try:
            ops.append({"key": k, "value": float(v), "remove": False})
        except ValueError:
            raise Refused(f"Cannot parse quota configuration value for {k}: {v}") from None
    ops += [{"key": k, "value": 0.0, "remove": True} for k in deletes]
    entity = [{"entity_type": QUOTA_ENTITY[t], "entity_name": n or None} for t, n in zip(types, names)]
    body = admin.client.request(ALTER_CLIENT_QUOTAS, {"entries": [{"entity": entity, "ops": ops}],
                                                      "validate_only": False})
    for e in body.entries:
        if e.error_code:
            raise failure(ErrorCode(e.error_code), e.error_message)


DEFAULT_ITERATIONS = 4096     # ConfigCommand.DefaultScramIterations
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


def scram_credentials(adds: dict[str, str]) -> dict[str, tuple[int, str]]:
    """``{mechanism: "iterations=N,password=PW"}`` (brackets already removed) ->
    {mechanism: (iterations, password)}, checked as ConfigCommand does."""
    from kproto.security.scram import MECHANISMS
    out = {}
    for name, value in adds.items():
        cred = _CREDENTIAL.fullmatch(value)
        if cred is None:
            raise UsageError(f"Invalid credential property {name}=<hidden>")    # the value holds a password
        iterations = int(cred.group(1)) if cred.group(1) not in (None, "", "-1") else DEFAULT_ITERATIONS
        if iterations < MECHANISMS[name].min_iterations:
            raise UsageError(f"Iterations {iterations} is less than the minimum "
                             f"{MECHANISMS[name].min_iterations} required for {name}")
        out[name] = (iterations, cred.group(2))
    return out


def alter_scram(admin, names, adds: dict[str, tuple[int, str]], deletes: list[str]) -> None:
    """AlterUserScramCredentials, the password salted here. One request per mechanism:
    Kafka's controller (ScramControlManager) refuses a user named twice in one request."""
    from kproto.security.scram import MECHANISMS
    bodies = [{"deletions": [{"name": n, "mechanism": MECHANISMS[m].type} for n in names], "upsertions": []}
              for m in deletes]
    for mech, (iterations, password) in adds.items():
        ups = []
        for n in names:
            salt = os.urandom(32)
            ups.append({"name": n, "mechanism": MECHANISMS[mech].type, "iterations": iterations, "salt": salt,
                        "salted_password": MECHANISMS[mech].salted_password(password.encode(), salt, iterations)})
        bodies.append({"deletions": [], "upsertions": ups})
    for body in bodies:
        r = admin.client.request(ALTER_SCRAM, body)
        failed = [u for u in r.results if u.error_code]
        if failed:
            raise UsageError(f"{java_exception_class(ErrorCode(failed[0].error_code))}: "
                             f"{failed[0].error_message or ErrorCode(failed[0].error_code).description}")
