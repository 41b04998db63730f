"""``kproto cluster``: N ``kproto serve`` processes replicating on loopback (kproto.testing.Cluster)."""

from __future__ import annotations

import signal
import sys

import click

from kproto.tools.main import exit_status_help


@click.command(epilog=exit_status_help("a node cannot start (a bad config, a data dir of another cluster)",
                                       ok="stopped by Ctrl-C or SIGTERM, every node shut down cleanly",
                                       interrupted=False))
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(1, 64),
              help="How many brokers: the first --controllers are controllers and brokers too (combined mode) "
                   "unless --isolated.")
@click.option("--controllers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="How many voters the KRaft quorum has (1 or 3: one may fail).")
@click.option("--isolated", is_flag=True,
              help="Kafka's isolated mode: the controllers are nodes of their own (process.roles=controller, "
                   "ids 3000..), not brokers.")
@click.option("--data-dir", default="./kproto-cluster", show_default=True,
              help="Each node's data goes in DATA_DIR/node-<id> (kept; a restart on it keeps the topics).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Kafka broker config for every node, e.g. min.insync.replicas=2 (repeatable).")
def cluster(brokers: int, controllers: int, isolated: bool, data_dir: str, configs: tuple[str, ...]) -> None:
    """Run a replicating cluster on loopback until Ctrl-C: prints the bootstrap servers and node -> PID."""
    from kproto.server.config import parse_config_args
    from kproto.testing import Cluster

    if controllers > brokers and not isolated:
        from kproto.errors import InvalidConfigError
        raise InvalidConfigError(f"--controllers {controllers} is more than --brokers {brokers}: every "
                                 "controller is also a broker (or --isolated)")
    c = Cluster(brokers, controllers=controllers, isolated=isolated, data_dir=data_dir,
                config=parse_config_args(configs))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        with c:
            click.echo(f"kproto cluster ready: bootstrap servers {c.bootstrap_servers} (data {data_dir})")
            for node, b in c.nodes.items():
                role = (" (controller only)" if node in c.controller_only else
                        " (controller)" if node in c.voter_ids else "")
                click.echo(f"node {node}{role}: pid {b.pid} on {b.bootstrap_servers}")
            sys.stdout.flush()
            signal.pause()
    except KeyboardInterrupt:
        pass
