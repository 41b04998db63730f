"""``kproto metadata-quorum``: kafka-metadata-quorum.sh (org.apache.kafka.tools.MetadataQuorumCommand,
Kafka 4.4) over DescribeQuorum and Metadata.

    kproto metadata-quorum --bootstrap-server H:P describe --status
    kproto metadata-quorum --bootstrap-server H:P describe --replication [--human-readable]

``--status`` prints the leader, its epoch, the high watermark, the largest follower lag
(offsets and ms) and the voters with their endpoints as JSON; ``--replication`` one
tab-separated row per voter and observer, columns padded to their widest cell (Kafka's
ToolsUtils.prettyPrintTable), the leader first. On kproto's broker the quorum is its one
node (kproto.server.handlers.describe_quorum). Diffed against Kafka's tool on both
brokers by tests/parity/test_kafka_parity_features.py.
"""

from __future__ import annotations

import base64
import json
import sys

import click

from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help

_EXIT = exit_status_help("a request failed, or --status/--replication misused (one line on stderr)")


def _fail(message: str) -> None:
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
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to Admin Client.")
@click.pass_context
def metadata_quorum(ctx: click.Context, bootstrap_server: str | None, command_config: str | None) -> None:
    """Describe the KRaft metadata quorum like kafka-metadata-quorum.sh."""
    ctx.ensure_object(dict).update(bootstrap_server=bootstrap_server, command_config=command_config)


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
    from kproto.common import now_ms
    from kproto.errors import KafkaError, KprotoError
    if not ctx.obj["bootstrap_server"]:
        _fail("one of the arguments --bootstrap-server --bootstrap-controller is required")
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
