"""``kproto cluster-tool``: kafka-cluster.sh (org.apache.kafka.tools.ClusterTool, Kafka 4.4)
over DescribeCluster and UnregisterBroker.

    kproto cluster-tool cluster-id --bootstrap-server H:P
    kproto cluster-tool unregister --bootstrap-server H:P --id N
    kproto cluster-tool list-endpoints --bootstrap-server H:P [--include-fenced-brokers]

Named ``cluster-tool``, Kafka's class name, because ``kproto cluster`` already starts a
cluster. ``cluster-id`` prints "Cluster ID: X"; ``unregister`` removes a broker's
registration (KIP-631: one that is gone for good; Kafka unregisters a live one too)
and prints "Broker N is no longer registered."; ``list-endpoints`` prints the brokers
as ClusterTool's table. Kafka's ``--bootstrap-controller`` (the controllers' own
listener) is not served: kproto's controllers answer only the quorum's and the
brokers' requests. Diffed against Kafka's tool on both brokers by
tests/tools/test_cluster_tool.py.
"""

from __future__ import annotations

import sys

import click

from kproto.tools.main import ExitStatus, OneLineCommand, exit_status_help

_EXIT = exit_status_help("the request failed (one line on stderr)")


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(ExitStatus.ERROR)


def _options(f):
    f = click.option("--command-config", "-c", type=click.Path(dir_okay=False),
                     help="Config properties file for the Admin client.")(f)
    f = click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     help="(DEPRECATED) A property file containing configurations for the Admin client.")(f)
    f = click.option("--bootstrap-controller", "-C", metavar="HOST:PORT",
                     help="Not served by kproto (its controllers answer only brokers).")(f)
    return click.option("--bootstrap-server", "-b", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
                        help="The server(s) to connect to (or KPROTO_BOOTSTRAP_SERVER).")(f)


def _admin_call(bootstrap_server: str | None, bootstrap_controller: str | None, command_config: str | None,
                config_file: str | None, call):
    """Run ``call(admin)`` over one connection; any failure is one line and exit 1."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KafkaError, KprotoError
    if bootstrap_controller:
        _fail("kproto: error: --bootstrap-controller is not supported: use --bootstrap-server")
    if not bootstrap_server:
        _fail("one of the arguments --bootstrap-server --bootstrap-controller is required")
    properties = command_config or config_file
    try:
        config = load_client_properties(properties) if properties else None
        with BrokerClient(bootstrap_server, config=config) as client:
            return call(Admin(client))
    except (KafkaError, KprotoError, OSError) as e:
        _fail(f"kproto: error: {e}")


@click.group("cluster-tool", context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EXIT)
def cluster_tool() -> None:
    """Get a cluster's id, list its endpoints, unregister a broker like kafka-cluster.sh."""


@cluster_tool.command("cluster-id", cls=OneLineCommand, epilog=_EXIT)
@_options
def cluster_id(bootstrap_server, bootstrap_controller, config_file, command_config) -> None:
    """Get information about the ID of a cluster (ClusterTool.clusterIdCommand)."""
    body = _admin_call(bootstrap_server, bootstrap_controller, command_config, config_file,
                       lambda admin: admin.describe_cluster())
    if body.cluster_id is None:
        click.echo("No cluster ID found. The Kafka version is probably too old.")
    else:
        click.echo(f"Cluster ID: {body.cluster_id}")


@cluster_tool.command(cls=OneLineCommand, epilog=_EXIT)
@_options
@click.option("--id", "-i", "broker_id", type=int, required=True, help="The ID of the broker to unregister.")
def unregister(bootstrap_server, bootstrap_controller, config_file, command_config, broker_id: int) -> None:
    """Unregister a broker (ClusterTool.unregisterCommand)."""
    _admin_call(bootstrap_server, bootstrap_controller, command_config, config_file,
                lambda admin: admin.unregister_broker(broker_id))
    click.echo(f"Broker {broker_id} is no longer registered.")


@cluster_tool.command("list-endpoints", cls=OneLineCommand, epilog=_EXIT)
@_options
@click.option("--include-fenced-brokers", is_flag=True,
              help="Whether to include fenced brokers when listing broker endpoints")
def list_endpoints(bootstrap_server, bootstrap_controller, config_file, command_config,
                   include_fenced_brokers: bool) -> None:
    """List endpoints (ClusterTool.listEndpoints): one row per broker, the host column as
    wide as the widest host, the others 10 wide, a space between."""
    body = _admin_call(bootstrap_server, bootstrap_controller, command_config, config_file,
                       lambda admin: admin.describe_cluster(include_fenced_brokers=include_fenced_brokers))
    brokers = sorted(body.brokers, key=lambda b: b.broker_id)
    width = max([len("HOST"), *(len(b.host) for b in brokers)])
    rows = [("ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE")]
    rows += [(str(b.broker_id), b.host, str(b.port), "null" if b.rack is None else b.rack,
              "fenced" if b.get("is_fenced") else "unfenced",
              "broker") for b in brokers]
    for r in rows:
        click.echo(f"{r[0]:<10} {r[1]:<{width}} {r[2]:<10} {r[3]:<10} {r[4]:<10} {r[5]:<15}")
