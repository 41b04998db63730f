"""The ``kproto`` command: one click group, one module per command.

Errors are one line on stderr and a documented exit status, never a traceback
(``--debug`` shows it).
"""

from __future__ import annotations

import gc
import importlib
import sys
from enum import IntEnum

import click

from kproto import __version__
from kproto.errors import DecodeError, KafkaError, KprotoError


class ExitStatus(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    PARTIAL = 3
    CORRUPT = 4
    INTERRUPTED = 130


class UsageProblem(click.ClickException):
    """Bad flags: one line on stderr (``prefix`` is the command's house style:
    Kafka's tools print the bare message), exit status 2."""

    exit_code = ExitStatus.USAGE
    prefix = ""

    def show(self, file=None) -> None:
        click.echo(self.prefix + self.message, err=True)


class OneLineCommand(click.Command):
    """click's own parse errors as one line too (no usage block)."""

    usage_problem: type[UsageProblem] = UsageProblem

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            raise self.usage_problem(e.format_message()) from None


class HelpFirstGroup(click.Group):
    """A group whose callback demands an option its subcommands need: ``--help``
    anywhere before ``--`` is answered first, as argparse (Kafka's tools) does,
    so the callback skips its checks when ``help_asked(ctx)``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        words = args[:args.index("--")] if "--" in args else args
        ctx.meta["kproto.help_asked"] = any(w in ctx.help_option_names for w in words)
        return super().parse_args(ctx, args)


def help_asked(ctx: click.Context) -> bool:
    return bool(ctx.meta.get("kproto.help_asked"))


def exit_status_help(failed: str, *, ok: str = "ok", partial: str | None = None,
                     corrupt: str | None = None, interrupted: bool = True) -> str:
    """The "Exit status" paragraph each command's ``--help`` ends with (its
    click ``epilog``), numbered from ``ExitStatus``: 0 ``ok``, 1 ``failed``,
    2 bad flags, 3 ``partial`` and 4 ``corrupt`` where the command has them,
    130 on Ctrl-C (``KprotoGroup.invoke``) unless the command stops cleanly on it."""
    parts = [(ExitStatus.OK, ok), (ExitStatus.ERROR, failed),
             (ExitStatus.USAGE, "bad flags (one line on stderr)"), (ExitStatus.PARTIAL, partial),
             (ExitStatus.CORRUPT, corrupt), (ExitStatus.INTERRUPTED, "interrupted" if interrupted else None)]
    return "Exit status: " + "; ".join(f"{int(code)} {text}" for code, text in parts if text) + "."


# Commands load on use, so `kproto --help` stays fast (no construct, rich or
# client imports). name -> ("module:attribute", one-line help for the listing).
COMMANDS = {
    "serve": ("kproto.tools.serve:serve", "Run the reference broker."),
    "cluster": ("kproto.tools.cluster:cluster", "Run N replicating brokers on loopback until Ctrl-C."),
    "storage": ("kproto.tools.storage:storage", "Format KRaft log directories like kafka-storage.sh format."),
    "cluster-tool": ("kproto.tools.cluster_tool:cluster_tool",
                     "Get the cluster id, list endpoints, unregister a broker like kafka-cluster.sh."),
    "dump-log": ("kproto.tools.dump_log.command:dump_log", "Dump log segments and index files like kafka-dump-log.sh."),
    "topics": ("kproto.tools.topics.command:topics", "Create, delete, describe, or change a topic like kafka-topics.sh."),
    "delete-records": ("kproto.tools.delete_records:delete_records",
                       "Delete records below an offset per partition like kafka-delete-records.sh."),
    "offsets": ("kproto.tools.offsets:offsets", "Migrate, export and import ZooKeeper-stored consumer offsets."),
    "decode": ("kproto.tools.decode:decode", "Decode captured Kafka traffic (pcap, pcapng, stdin) like tshark, completely."),
    "export": ("kproto.tools.export:export", "Export log segments to Parquet/JSON/CSV, or committed offsets, with Spark."),
    "groups": ("kproto.tools.groups.command:groups", "List, describe, delete consumer groups and reset their offsets like kafka-consumer-groups.sh."),
    "streams-groups": ("kproto.tools.streams_groups:streams_groups",
                       "List and describe Kafka Streams (KIP-1071) groups like kafka-streams-groups.sh."),
    "share-groups": ("kproto.tools.share_groups:share_groups",
                     "List, describe and delete share groups and manage their offsets like kafka-share-groups.sh."),
    "transactions": ("kproto.tools.transactions:transactions", "List, describe and abort transactions like kafka-transactions.sh."),
    "conformance": ("kproto.tools.conformance:conformance", "Check a Kafka decoder against the third-party corpus."),
    "users": ("kproto.tools.users:users", "SCRAM users: kproto configs --entity-type users, in short."),
    "configs": ("kproto.tools.configs:configs",
                "Describe or alter topic, broker, user and client configs like kafka-configs.sh."),
    "acls": ("kproto.tools.acls:acls", "Add, remove or list ACLs like kafka-acls.sh."),
    "consume": ("kproto.tools.consume:consume",
                "Print a topic's records (broker, data directory or capture) like kafka-console-consumer.sh."),
    "produce": ("kproto.tools.produce:produce", "Send lines or JSON records to a topic like kafka-console-producer.sh."),
    "broker-api-versions": ("kproto.tools.broker_api_versions:broker_api_versions",
                            "Print each broker's API versions like kafka-broker-api-versions.sh."),
    "producer-perf-test": ("kproto.tools.perf:producer_perf_test",
                           "Measure producing like kafka-producer-perf-test.sh."),
    "consumer-perf-test": ("kproto.tools.perf:consumer_perf_test",
                           "Measure consuming like kafka-consumer-perf-test.sh."),
    "verifiable-producer": ("kproto.tools.verifiable:verifiable_producer",
                            "Produce integers and print a JSON line per ack like Kafka's VerifiableProducer."),
    "verifiable-consumer": ("kproto.tools.verifiable:verifiable_consumer",
                            "Consume as a group member, printing JSON events like Kafka's VerifiableConsumer."),
    "log-dirs": ("kproto.tools.log_dirs:log_dirs",
                 "Print each broker's log directories and partition sizes like kafka-log-dirs.sh."),
    "features": ("kproto.tools.features:features",
                 "Describe, upgrade or downgrade feature flags like kafka-features.sh."),
    "metadata-quorum": ("kproto.tools.metadata_quorum:metadata_quorum",
                        "Describe the metadata quorum like kafka-metadata-quorum.sh."),
    "get-offsets": ("kproto.tools.get_offsets:get_offsets",
                    "Print topic:partition:offset for a time like kafka-get-offsets.sh."),
    "leader-election": ("kproto.tools.leader_election:leader_election",
                        "Elect preferred or unclean leaders like kafka-leader-election.sh."),
    "reassign-partitions": ("kproto.tools.reassign_partitions:reassign_partitions",
                            "Generate, execute, verify, list or cancel partition reassignments like "
                            "kafka-reassign-partitions.sh."),
}


class KprotoGroup(click.Group):
    """Lazy commands; kproto errors become one line and an exit status."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, name: str):
        if name in COMMANDS:
            module, attr = COMMANDS[name][0].split(":")
            # imports make many objects and no garbage: collecting during them
            # is ~10 % of a command's start-up for nothing
            enabled = gc.isenabled()
            gc.disable()
            try:
                return getattr(importlib.import_module(module), attr)
            finally:
                if enabled:
                    gc.enable()
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(ExitStatus.INTERRUPTED)
        except Exception as e:   # the CLI's last line of defence: one line, no traceback
            if ctx.obj and ctx.obj.get("debug"):
                raise
            status = ExitStatus.CORRUPT if isinstance(e, DecodeError) else ExitStatus.ERROR
            if isinstance(e, (KprotoError, KafkaError, OSError)):
                msg = str(e)
            else:
                msg = f"{type(e).__name__}: {e}"
            click.echo(f"kproto: error: {msg}", err=True)
            sys.exit(status)


@click.group(cls=KprotoGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=exit_status_help("error", partial="partial failure", corrupt="corrupt input found")
             + " Each command's --help says what its statuses mean.")
@click.version_option(__version__, prog_name="kproto")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """kproto: Kafka's wire protocol and log format, exact and fast."""
    ctx.ensure_object(dict)["debug"] = debug


if __name__ == "__main__":
    cli()
