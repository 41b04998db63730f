"""``kproto serve``: the reference broker."""

from __future__ import annotations

import sys

import click


@click.command()
@click.option("--listen", default="127.0.0.1:9092", show_default=True, help="HOST:PORT to accept on.")
@click.option("--data-dir", default="./kproto-data", show_default=True, help="Log directory.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help="Broker config override.")
def serve(listen: str, data_dir: str, configs: tuple[str, ...]) -> None:
    """Run the reference broker (not built yet: issue 4)."""
    click.echo("kproto: error: the reference broker is not built yet (issue 4)", err=True)
    sys.exit(1)
