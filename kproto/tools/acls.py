"""``kproto acls``: ACLs as ``kafka-acls.sh`` manages them (CreateAcls, DescribeAcls, DeleteAcls).

    kproto acls --bootstrap-server H:P --add --allow-principal User:alice --operation Read --topic orders
    kproto acls --bootstrap-server H:P --add --allow-principal User:alice --producer --topic orders --idempotent
    kproto acls --bootstrap-server H:P --add --allow-principal User:bob --consumer --topic orders --group billing
    kproto acls --bootstrap-server H:P --list --topic orders
    kproto acls --bootstrap-server H:P --remove --force --topic orders

Flags, shortcuts (--producer: Write, Describe, Create on topics, Write and
Describe on transactional ids, IdempotentWrite on the cluster with
--idempotent; --consumer: Read and Describe on topics, Read on groups) and
output lines as Kafka 4.4's AclCommand (an ``Acl ... already exists.`` line for
each ACL already there, no listing after --add or --remove), with resources and
ACL sets printed sorted where Kafka prints a hash order.
"""

from __future__ import annotations

import click

from kproto.errors import ErrorCode, UsageError
from kproto.security.acl import (
    CLUSTER_NAME, SUPPORTED_OPERATIONS, AccessControlEntry, AclOperation, AclPermissionType, PatternType,
    ResourceType,
)
from kproto.tools.main import OneLineCommand, exit_status_help

O = AclOperation
Pattern = tuple[ResourceType, str | None, PatternType]


def operation(name: str) -> AclOperation:
    """``Read``, ``IdempotentWrite``, ``describe_configs`` -> the enum (Kafka's SecurityUtils.operation)."""
    name = name.strip()
    key = name.upper() if "_" in name or name.isupper() else \
        "".join("_" + c if c.isupper() else c for c in name).strip("_").upper()
    try:
        return AclOperation[key]
    except KeyError:
        raise UsageError(f"Unknown operation: {name}") from None


def camel(op: AclOperation) -> str:
    return "".join(w.title() for w in op.name.split("_"))


def _pattern_str(p: Pattern) -> str:
    t, name, pt = p
    return f"ResourcePattern(resourceType={t.name}, name={'<any>' if name is None else name}, patternType={pt.name})"


def _entry_str(e: AccessControlEntry) -> str:
    return (f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
            f"permissionType={e.permission_type.name})")


def _entries_str(entries) -> str:
    """One ``\t(principal=...)`` line per entry, sorted as printed (Kafka prints a HashSet's order)."""
    return "\n".join(sorted("\t" + _entry_str(e) for e in entries))


@click.command("acls", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the broker refused or could not be reached (one line on stderr)"))
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", required=True, metavar="HOST:PORT")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file with client configs (security.protocol, sasl.*, ssl.*).")
@click.option("--add", is_flag=True, help="Indicates you are trying to add ACLs.")
@click.option("--remove", is_flag=True, help="Indicates you are trying to remove ACLs.")
@click.option("--list", "list_", is_flag=True, help="List ACLs for the specified resource.")
@click.option("--topic", "topics", multiple=True, help="topic to which ACLs should be added or removed.")
@click.option("--group", "groups", multiple=True, help="Consumer Group to which the ACLs should be added or removed.")
@click.option("--cluster", is_flag=True, help="Add/Remove cluster ACLs.")
@click.option("--transactional-id", "txn_ids", multiple=True, help="The transactionalId to which ACLs should be added "
              "or removed.")
@click.option("--resource-pattern-type", default="LITERAL", show_default=True,
              type=click.Choice(["ANY", "MATCH", "LITERAL", "PREFIXED"], case_sensitive=False))
@click.option("--allow-principal", "allow", multiple=True, help="principal in PrincipalType:name format.")
@click.option("--deny-principal", "deny", multiple=True, help="principal in PrincipalType:name format.")
@click.option("--allow-host", "allow_hosts", multiple=True, help="Host from which principals listed in "
              "--allow-principal will have access (default *).")
@click.option("--deny-host", "deny_hosts", multiple=True, help="Host from which principals listed in "
              "--deny-principal will be denied access (default *).")
@click.option("--principal", "list_principals", multiple=True, help="List ACLs for the specified principal.")
@click.option("--operation", "operations", multiple=True, help="Operation that is being allowed or denied: Read, "
              "Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
              "IdempotentWrite, All (default All).")
@click.option("--producer", is_flag=True, help="Convenience option to add/remove ACLs for producer role.")
@click.option("--consumer", is_flag=True, help="Convenience option to add/remove ACLs for consumer role.")
@click.option("--idempotent", is_flag=True, help="Enable idempotence for the producer (with --producer).")
@click.option("--force", is_flag=True, help="Assume Yes to all queries and do not prompt.")
def acls(**o) -> None:
    """Add, remove or list ACLs like kafka-acls.sh."""
    if [o["add"], o["remove"], o["list_"]].count(True) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove.")
    if o["idempotent"] and not o["producer"]:
        raise UsageError("The --idempotent option is only available if --producer is set")
    if (o["producer"] or o["consumer"]) and o["operations"]:
        raise UsageError("Option --producer/--consumer cannot be combined with --operation")
    if o["consumer"] and not (o["topics"] and o["groups"]):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")
    pattern_type = PatternType[o["resource_pattern_type"].upper()]
    if (o["add"]) and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(f"A '--resource-pattern-type' value of '{pattern_type.name}' is not valid when adding acls.")
    patterns: list[Pattern] = [(ResourceType.TOPIC, t, pattern_type) for t in o["topics"]]
    if o["cluster"] or o["idempotent"]:
        patterns.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    patterns += [(ResourceType.GROUP, g, pattern_type) for g in o["groups"]]
    patterns += [(ResourceType.TRANSACTIONAL_ID, t, pattern_type) for t in o["txn_ids"]]
    from kproto.security.principal import KafkaPrincipal
    for p in o["allow"] + o["deny"] + o["list_principals"]:
        KafkaPrincipal.parse(p)                 # Type:name, or a usage error
    from kproto.client.transport import BrokerClient, load_client_properties
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    with BrokerClient(o["bootstrap_server"], config=config) as client:
        if o["list_"]:
            _list(client, patterns, o["list_principals"])
            return
        if not patterns:
            raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> "
                             "or --delegation-token <Delegation Token ID>")
        wanted = _entries_per_pattern(o, patterns)
        if o["add"]:
            _add(client, wanted)
        else:
            _remove(client, wanted, o["force"])


def _entries(o: dict, ops) -> set[AccessControlEntry]:
    out = set()
    for principals, hosts, perm in ((o["allow"], o["allow_hosts"] or ("*",), AclPermissionType.ALLOW),
                                    (o["deny"], o["deny_hosts"] or ("*",), AclPermissionType.DENY)):
        out |= {AccessControlEntry(p.strip(), h.strip(), op, perm) for p in principals for h in hosts for op in ops}
    return out


def _entries_per_pattern(o: dict, patterns: list[Pattern]) -> dict[Pattern, set[AccessControlEntry]]:
    out: dict[Pattern, set] = {}
    if o["producer"] or o["consumer"]:
        for p in patterns:
            t = p[0]
            ops = set()
            if o["producer"]:
                ops |= {ResourceType.TOPIC: {O.WRITE, O.DESCRIBE, O.CREATE}, ResourceType.TRANSACTIONAL_ID:
                        {O.WRITE, O.DESCRIBE}, ResourceType.CLUSTER: {O.IDEMPOTENT_WRITE}}.get(t, set())
            if o["consumer"]:
                ops |= {ResourceType.TOPIC: {O.READ, O.DESCRIBE}, ResourceType.GROUP: {O.READ}}.get(t, set())
            if ops:
                out[p] = _entries(o, ops)
    else:
        ops = {operation(x) for x in o["operations"]} or {O.ALL}
        for p in patterns:
            bad = [x for x in ops if x != O.ALL and x not in SUPPORTED_OPERATIONS[p[0]]]
            if bad:
                raise UsageError(f"ResourceType {p[0].name.title()} only supports operations "
                                 f"{','.join(sorted(camel(x) for x in SUPPORTED_OPERATIONS[p[0]] | {O.ALL}))}")
            out[p] = _entries(o, ops)
    return out


def _check(errors: list[tuple[int, str | None]]) -> None:
    for code, message in errors:
        if code:
            raise UsageError(f"Error while executing ACL command: {message or ErrorCode(code).description}")


def _add(client, wanted) -> None:
    """AclCommand.addAcls: what the broker already has is reported, the rest created."""
    from kproto.schemas import protocol as P
    for pattern in sorted(wanted, key=_pattern_str):
        existing = _describe(client, pattern).get(pattern, set())
        for e in sorted(wanted[pattern] & existing, key=_entry_str):
            click.echo(f"Acl (pattern={_pattern_str(pattern)}, entry={_entry_str(e)}) already exists.")
        entries = wanted[pattern] - existing
        if not entries:
            continue
        click.echo(f"Adding ACLs for resource `{_pattern_str(pattern)}`: \n {_entries_str(entries)}\n")
        r = client.request(P.create_acls.API.key, {"creations": [
            {"resource_type": pattern[0], "resource_name": pattern[1], "resource_pattern_type": pattern[2],
             "principal": e.principal, "host": e.host, "operation": e.operation,
             "permission_type": e.permission_type} for e in sorted(entries)]})
        _check([(x.error_code, x.error_message) for x in r.results])


def _filter(pattern: Pattern, e: AccessControlEntry | None = None) -> dict:
    return {"resource_type_filter": pattern[0], "resource_name_filter": pattern[1],
            "pattern_type_filter": pattern[2], "principal_filter": e.principal if e else None,
            "host_filter": e.host if e else None, "operation": e.operation if e else O.ANY,
            "permission_type": e.permission_type if e else AclPermissionType.ANY}


def _remove(client, wanted, force: bool) -> None:
    from kproto.schemas import protocol as P
    for pattern, entries in wanted.items():
        what = (f"delete all ACLs for resource filter `{_pattern_str(pattern)}`" if not entries else
                f"remove ACLs: \n {_entries_str(entries)}\n from resource filter `{_pattern_str(pattern)}`")
        if not force and not click.confirm(f"Are you sure you want to {what}? (y/n)", prompt_suffix="", default=False,
                                           show_default=False):
            continue
        filters = [_filter(pattern, e) for e in sorted(entries)] or [_filter(pattern)]
        r = client.request(P.delete_acls.API.key, {"filters": filters})
        _check([(x.error_code, x.error_message) for x in r.filter_results])


def _describe(client, pattern: Pattern) -> dict[Pattern, set[AccessControlEntry]]:
    """DescribeAcls for every entry on resources matching ``pattern``, per resource."""
    from kproto.schemas import protocol as P
    r = client.request(P.describe_acls.API.key, _filter(pattern))
    _check([(r.error_code, r.error_message)])
    found: dict[Pattern, set] = {}
    for res in r.resources:
        key = (ResourceType(res.resource_type), res.resource_name, PatternType(res.pattern_type))
        found.setdefault(key, set()).update(
            AccessControlEntry(a.principal, a.host, AclOperation(a.operation), AclPermissionType(a.permission_type))
            for a in res.acls)
    return found


def _list(client, patterns: list[Pattern], principals) -> None:
    found: dict[Pattern, set] = {}
    for pattern in patterns or [(ResourceType.ANY, None, PatternType.ANY)]:
        for key, entries in _describe(client, pattern).items():
            found.setdefault(key, set()).update(entries)
    groups = [(None, found)] if not principals else [
        (p, {k: {e for e in v if e.principal == p} for k, v in found.items()}) for p in principals]
    for principal, table in groups:
        if principal is not None:
            click.echo(f"ACLs for principal `{principal}`")
        for pattern in sorted(table, key=_pattern_str):
            if table[pattern]:
                click.echo(f"Current ACLs for resource `{_pattern_str(pattern)}`:\n{_entries_str(table[pattern])}\n")
