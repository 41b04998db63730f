"""``kproto serve``: the reference broker."""

from __future__ import annotations

import asyncio
import logging
import sys

import click

from kproto.errors import UsageError
from kproto.tools.main import exit_status_help


def _listen(value: str, option: str = "--listen") -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"{option}: expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


@click.command(epilog=exit_status_help("the broker cannot start (the address in use, a bad config)",
                                       ok="stopped by SIGTERM or Ctrl-C, after a clean shutdown",
                                       interrupted=False))
@click.option("--listen", default="127.0.0.1:9092", show_default=True,
              help="HOST:PORT to accept on: one PLAINTEXT listener (--config listeners=... for several, TLS, SASL).")
@click.option("--data-dir", default="./kproto-data", show_default=True, help="Log directory.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Kafka broker config, e.g. num.partitions=3 or log.segment.bytes=1048576 (repeatable).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"]))
@click.option("--control", metavar="HOST:PORT", default=None,
              help="Open the fault plane's HTTP/JSON endpoint there (README \"Fault plane\"); port 0 picks one, "
                   "named in the ready line.")
@click.option("--kafka-version", metavar="X.Y", default=None,
              help="Advertise in ApiVersions exactly the APIs and versions Apache Kafka X.Y's broker did "
                   "(2.1 .. 3.9, 4.4), within what kproto serves; other versions answer UNSUPPORTED_VERSION.")
def serve(listen: str, data_dir: str, configs: tuple[str, ...], log_level: str, control: str | None,
          kafka_version: str | None) -> None:
    """Run the reference broker until SIGTERM or Ctrl-C (then it checkpoints and exits)."""
    from kproto.server.broker import serve as run
    from kproto.server.config import BrokerConfig, parse_config_args
    from kproto.memory import keep_freed_memory

    host, port = _listen(listen)
    control_at = _listen(control, "--control") if control is not None else None
    if kafka_version is not None:
        from kproto.server.emulation import release
        kafka_version = release(kafka_version)
    config = BrokerConfig.from_props(parse_config_args(configs))
    from kproto.server.cluster.settings import cluster_settings, check_served
    settings = cluster_settings(config.values)
    if settings is not None:
        check_served(settings, config.values)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    keep_freed_memory()

    def ready(h: str, p: int, where: tuple[str, int] | None) -> None:
        control_note = f"; control http://{where[0]}:{where[1]}" if where else ""
        role = "controller" if settings is not None and "broker" not in settings.roles else "broker"
        click.echo(f"kproto {role} ready on {h}:{p} (data {data_dir}{control_note})")
        sys.stdout.flush()

    try:
        asyncio.run(run(data_dir, config, host, port, ready, control=control_at,
                        kafka_version=kafka_version))
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
