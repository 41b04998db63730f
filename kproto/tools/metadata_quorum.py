"""``kproto metadata-quorum``: kafka-metadata-quorum.sh (org.apache.kafka.tools.MetadataQuorumCommand,
Kafka 4.4) over DescribeQuorum and Metadata.

    kproto metadata-quorum --bootstrap-server H:P describe --status
    kproto metadata-quorum --bootstrap-server H:P describe --replication [--human-readable]
    kproto metadata-quorum --bootstrap-controller H:P --command-config controller.properties add-controller [--dry-run]
    kproto metadata-quorum --bootstrap-controller H:P remove-controller -i ID -d DIRECTORY_ID [--dry-run]

``--status`` prints the leader, its epoch, the high watermark, the largest follower lag
(offsets and ms) and the voters with their endpoints as JSON; ``--replication`` one
tab-separated row per voter and observer, columns padded to their widest cell (Kafka's
ToolsUtils.prettyPrintTable), the leader first. On kproto's broker the quorum is its one
node (kproto.server.handlers.describe_quorum). Diffed against Kafka's tool on both
brokers by tests/parity/test_kafka_parity_features.py.

``--bootstrap-controller`` talks to the controllers' listeners (kproto's answer no
ApiVersions: the requests go raw, to each controller in turn until the quorum's leader
answers). ``add-controller`` reads the new controller's id, controller listeners and
the directory id of its metadata log dir's meta.properties from ``--command-config``
and sends AddRaftVoter; ``remove-controller`` sends RemoveRaftVoter (KIP-853,
kraft.version 1: a quorum formatted ``--standalone`` / ``--initial-controllers``).
``describe --replication`` works through either; ``--status`` needs the cluster id
from a broker (``--bootstrap-server``).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any, NoReturn

import click

from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help, help_asked

_EXIT = exit_status_help("a request failed, or --status/--replication misused (one line on stderr)")


def _fail(message: str) -> NoReturn:
    click.echo(message, err=True)
    sys.exit(ExitStatus.ERROR)


def _directory_id(value) -> str:
    """Uuid.toString, the zero id included (AAAAAAAAAAAAAAAAAAAAAA)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def _ago(now: int, ts: int) -> str:
    """MetadataQuorumCommand's --human-readable: "N ms ago" (or "N s ago"...)."""
    if ts < 0:
        return "Never"
    delta = max(now - ts, 0)
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if delta >= size:
            return f"{delta // size} {unit} ago"
    return f"{delta} ms ago"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("".join(f"{cell:<{w}}\t" for cell, w in zip(r, widths)) + "\n" for r in rows)


@click.group("metadata-quorum", context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT)
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="The server(s) to connect to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--bootstrap-controller", metavar="HOST:PORT",
              help="A comma-separated list of host:port pairs to use for establishing the connection to the "
                   "Kafka controllers.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client. For add-controller, the file "
                   "is used to specify the controller properties as well.")
@click.pass_context
def metadata_quorum(ctx: click.Context, bootstrap_server: str | None, bootstrap_controller: str | None,
                    command_config: str | None) -> None:
    """Describe the KRaft metadata quorum, add and remove controllers like kafka-metadata-quorum.sh."""
    ctx.ensure_object(dict).update(bootstrap_server=bootstrap_server, bootstrap_controller=bootstrap_controller,
                                   command_config=command_config)
    if bootstrap_server and bootstrap_controller and not help_asked(ctx):
        _fail("argument --bootstrap-controller: not allowed with argument --bootstrap-server")


def _bootstrap(ctx: click.Context) -> None:
    if not ctx.obj["bootstrap_server"] and not ctx.obj["bootstrap_controller"]:
        _fail("one of the arguments --bootstrap-server --bootstrap-controller is required")


def _controllers(text: str) -> list[tuple[str, int]]:
    out = []
    for item in (s.strip() for s in text.split(",") if s.strip()):
        host, colon, port = item.rpartition(":")
        if not colon or not port.isdigit():
            _fail(f"Invalid url in bootstrap.controllers: {item}")
        out.append((host.strip("[]"), int(port)))
    return out


def controller_request(bootstrap: str, api_key: int, version: int, body: dict) -> Any:
    """``body`` to each controller until one that is not NOT_LEADER_OR_FOLLOWER / NOT_CONTROLLER
    answers (the quorum's leader); the last answer otherwise."""
    import asyncio

    from kproto.errors import ErrorCode
    from kproto.server.cluster.channel import Channel

    async def ask() -> Any:
        answer = None
        for host, port in _controllers(bootstrap):
            channel = Channel(host, port, "kproto-metadata-quorum", timeout=60)
            try:
                answer = await channel.request(api_key, version, body)
            except (ConnectionError, OSError):
                continue
            finally:
                channel.close()
            if _error_code(answer) not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_CONTROLLER):
                return answer
        if answer is None:
            raise ConnectionError(f"no controller of {bootstrap} answered")
        return answer
    return asyncio.run(ask())


def _error_code(answer: Any) -> int:
    if answer.get("error_code"):
        return answer.error_code
    for t in answer.get("topics") or []:
        for p in t.partitions:
            if p.error_code:
                return p.error_code
    return 0


@metadata_quorum.command(cls=OneLineCommand, epilog=_EXIT)
@click.option("--status", is_flag=True, help="The current state of the metadata quorum.")
@click.option("--replication", is_flag=True, help="The detailed replication state of the quorum.")
@click.option("--human-readable", is_flag=True, help="Timestamps as durations ago (with --replication).")
@click.pass_context
def describe(ctx: click.Context, status: bool, replication: bool, human_readable: bool) -> None:
    """Describe the metadata quorum (MetadataQuorumCommand.handleDescribe*)."""
    if status == replication:
        _fail("Only one of --status or --replication should be specified with describe sub-command"
              if status else "One of --status or --replication must be specified with describe sub-command")
    if human_readable and not replication:
        _fail("The option --human-readable is only supported along with --replication")
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.common import CLUSTER_METADATA_TOPIC_NAME, now_ms
    from kproto.errors import KafkaError, KprotoError, java_exception
    from kproto.schemas import protocol as P
    _bootstrap(ctx)
    if ctx.obj["bootstrap_controller"]:
        if status:
            _fail("kproto: error: describe --status needs the cluster id from a broker: use --bootstrap-server")
        try:
            body = controller_request(ctx.obj["bootstrap_controller"], P.describe_quorum.API.key, 2, {
                "topics": [{"topic_name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{"partition_index": 0}]}]})
        except (KprotoError, OSError) as e:
            _fail(f"kproto: error: {e}")
        if _error_code(body):
            _fail(java_exception(_error_code(body)))
        cluster_id = None
    else:
        try:
            config = load_client_properties(ctx.obj["command_config"]) if ctx.obj["command_config"] else None
            with BrokerClient(ctx.obj["bootstrap_server"], config=config) as client:
                admin = Admin(client)
                body = admin.describe_quorum()
                cluster_id = admin.metadata([]).cluster_id if status else None
        except (KafkaError, KprotoError, OSError) as e:
            _fail(f"kproto: error: {e}")
    p = body.topics[0].partitions[0]
    voters, observers = list(p.current_voters), list(p.observers)
    leader = next((v for v in voters if v.replica_id == p.leader_id), None)
    leader_end = leader.log_end_offset if leader is not None else p.high_watermark
    if status:
        others = [r for r in voters + observers if r.replica_id != p.leader_id]
        lag = max((leader_end - r.log_end_offset for r in others), default=0)
        caught_up = leader.get("last_caught_up_timestamp", -1) if leader is not None else -1
        lag_ms = max((caught_up - r.get("last_caught_up_timestamp", -1) for r in others), default=0)
        endpoints = {n.node_id: [f"{ln.name}://{ln.host}:{ln.port}" for ln in n.listeners]
                     for n in body.get("nodes") or []}
        voter_json = ", ".join(json.dumps({"id": v.replica_id, "endpoints": endpoints.get(v.replica_id, [])})
                               for v in voters)
        observer_json = ", ".join(json.dumps({"id": o.replica_id}) for o in observers)
        for label, value in (("ClusterId", cluster_id), ("LeaderId", p.leader_id), ("LeaderEpoch", p.leader_epoch),
                             ("HighWatermark", p.high_watermark), ("MaxFollowerLag", lag),
                             ("MaxFollowerLagTimeMs", lag_ms), ("CurrentVoters", f"[{voter_json}]"),
                             ("CurrentObservers", f"[{observer_json}]")):
            click.echo(f"{label + ':':<24}{value}")
        return
    now = now_ms()
    rows = [["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
             "Status"]]
    ordered = ([(leader, "Leader")] if leader is not None else []) + \
        [(v, "Follower") for v in voters if v is not leader] + [(o, "Observer") for o in observers]
    for r, role in ordered:
        fetch, caught = r.get("last_fetch_timestamp", -1), r.get("last_caught_up_timestamp", -1)
        rows.append([str(r.replica_id), _directory_id(r.replica_directory_id), str(r.log_end_offset),
                     str(leader_end - r.log_end_offset),
                     _ago(now, fetch) if human_readable else str(fetch),
                     _ago(now, caught) if human_readable else str(caught), role])
    click.echo(_table(rows), nl=False)


def _controller_properties(path: str | None) -> tuple[int, Any, list[tuple[str, str, int]]]:
    """(node.id, the metadata log dir's directory id, the controller listeners) of a controller's
    properties (MetadataQuorumCommand.getControllerId / getMetadataDirectoryId /
    getControllerAdvertisedListeners), Kafka's texts."""
    from pathlib import Path

    from kproto.log.checkpoint import read_meta_properties
    from kproto.log.manager import parse_topic_id
    from kproto.properties import parse_properties
    if not path:
        _fail("You must supply the configuration file of the controller you are adding when using add-controller.")
    try:
        props = parse_properties(Path(path).read_text(), path, strict=False)
    except OSError as e:
        _fail(f"kproto: error: {e}")
    if "node.id" not in props:
        _fail("node.id not found in configuration file. Is this a valid controller configuration file?")
    node_id = int(props["node.id"])
    if node_id < 0:
        _fail("node.id was negative in configuration file. Is this a valid controller configuration file?")
    if "controller" not in [r.strip() for r in props.get("process.roles", "").split(",")]:
        _fail("process.roles did not contain 'controller' in configuration file. Is this a valid controller "
              "configuration file?")
    directory = props.get("metadata.log.dir") or (props.get("log.dirs") or props.get("log.dir") or "").split(",")[0]
    if not directory:
        _fail("Neither metadata.log.dir nor log.dirs were found. Is this a valid controller configuration file?")
    meta = read_meta_properties(Path(directory.strip()))
    if meta is None:
        _fail(f"Unable to read meta.properties from {directory}")
    if "directory.id" not in meta:
        _fail(f"No directory id found in {directory}")
    return node_id, parse_topic_id(meta["directory.id"]), controller_endpoints(props)


def controller_endpoints(props: dict[str, str]) -> list[tuple[str, str, int]]:
    """(listener name, host, port) of each of controller.listener.names, ``advertised.listeners``
    over ``listeners`` (MetadataQuorumCommand.getControllerAdvertisedListeners)."""
    listeners: dict[str, tuple[str, int]] = {}
    for key in ("listeners", "advertised.listeners"):
        for item in (s.strip() for s in props.get(key, "").split(",") if s.strip()):
            name, _, address = item.partition("://")
            host, _, port = address.rpartition(":")
            listeners[name.strip().upper()] = (host.strip("[]") or "localhost", int(port))
    if "controller.listener.names" not in props:
        _fail("controller.listener.names was not found. Is this a valid controller configuration file?")
    endpoints = []
    for name in (n.strip().upper() for n in props["controller.listener.names"].split(",") if n.strip()):
        if name not in listeners:
            _fail(f"Cannot find information about controller listener name: {name}")
        endpoints.append((name, *listeners[name]))
    return endpoints


def _uuid(text: str, flag: str) -> Any:
    """Uuid.fromString, its refusals' texts."""
    import binascii
    import uuid
    if len(text) > 24:
        _fail(f"Failed to parse {flag}: Input string with prefix `{text[:24]}` is too long to be decoded as a "
              f"base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as e:
        _fail(f"Failed to parse {flag}: {e}")
    if len(raw) != 16:
        _fail(f"Failed to parse {flag}: Input string `{text}` decoded as {len(raw)} bytes, which is not equal to "
              f"the expected 16 bytes of a base64-encoded UUID")
    return uuid.UUID(bytes=raw)


def _change(ctx: click.Context, api_key: int, version: int, body: dict) -> None:
    from kproto.errors import KprotoError, java_exception
    if not ctx.obj["bootstrap_controller"]:
        _fail("kproto: error: add-controller and remove-controller go to the controllers: use --bootstrap-controller")
    try:
        answer = controller_request(ctx.obj["bootstrap_controller"], api_key, version, body)
    except (KprotoError, OSError) as e:
        _fail(f"kproto: error: {e}")
    if answer.error_code:
        _fail(java_exception(answer.error_code, answer.get("error_message")))


@metadata_quorum.command("add-controller", cls=OneLineCommand, epilog=_EXIT)
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_context
def add_controller(ctx: click.Context, dry_run: bool) -> None:
    """Add a controller to the KRaft controller cluster (MetadataQuorumCommand.handleAddController)."""
    from kproto.log.manager import format_topic_id
    from kproto.schemas import protocol as P
    _bootstrap(ctx)
    node_id, directory_id, endpoints = _controller_properties(ctx.obj["command_config"])
    if not dry_run:
        _change(ctx, P.add_raft_voter.API.key, 1, {
            "cluster_id": None, "timeout_ms": 30_000, "voter_id": node_id, "voter_directory_id": directory_id,
            "listeners": [{"name": n, "host": h, "port": p} for n, h, p in endpoints], "ack_when_committed": True})
    shown = ", ".join(f"{n}://{f'[{h}]' if ':' in h else h}:{p}" for n, h, p in endpoints)
    click.echo(f"{'DRY RUN of adding' if dry_run else 'Added'} controller {node_id} with directory id "
               f"{format_topic_id(directory_id)} and endpoints: {shown}")


@metadata_quorum.command("remove-controller", cls=OneLineCommand, epilog=_EXIT)
@click.option("--controller-id", "-i", type=int, required=True, help="The id of the controller to remove.")
@click.option("--controller-directory-id", "-d", required=True, help="The directory ID of the controller to remove.")
@click.option("--dry-run", is_flag=True, help="True if we should print what would be done, but not do it.")
@click.pass_context
def remove_controller(ctx: click.Context, controller_id: int, controller_directory_id: str, dry_run: bool) -> None:
    """Remove a controller from the KRaft controller cluster (MetadataQuorumCommand.handleRemoveController)."""
    from kproto.log.manager import format_topic_id
    from kproto.schemas import protocol as P
    _bootstrap(ctx)
    if controller_id < 0:
        _fail(f"Invalid negative --controller-id: {controller_id}")
    directory_id = _uuid(controller_directory_id, "--controller-directory-id")
    if not dry_run:
        _change(ctx, P.remove_raft_voter.API.key, 0, {"cluster_id": None, "voter_id": controller_id,
                                                      "voter_directory_id": directory_id})
    click.echo(f"{'DRY RUN of removing ' if dry_run else 'Removed '}KRaft controller {controller_id} with directory id "
               f"{format_topic_id(directory_id)}")
