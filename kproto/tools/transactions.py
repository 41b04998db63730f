"""``kproto transactions``: kafka-transactions.sh (TransactionsCommand, trunk 1eb76443)
over kproto's admin client: ``list``, ``describe``, ``describe-producers``,
``abort``, ``find-hanging``.

Tables are ToolsUtils.prettyPrintTable's: each cell left-aligned to its
column's widest value and followed by a TAB (the last one too). Failures are
Kafka's printErrorAndExit line on stderr (``<what failed>: <cause>. Enable
debug logging for additional detail.``), exit 1. Differences: flags are
checked before connecting; ``--broker-id`` is accepted but a single-node
cluster has only the broker it is connected to.
"""

from __future__ import annotations

import sys

import click

from kproto.common import now_ms
from kproto.jvm import java_hashmap_order, topic_partition_hash
from kproto.tools.main import ExitStatus, HelpFirstGroup, OneLineCommand, UsageProblem, exit_status_help, help_asked

DEBUG_HINT = " Enable debug logging for additional detail."


def pretty_table(headers: list[str], rows: list[list[str]]) -> str:
    """ToolsUtils.prettyPrintTable."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return "".join("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)) + "\n"
                   for row in [headers, *rows])


class Failed(Exception):
    """printErrorAndExit: the line, exit status 1."""


def _fail(message: str, cause: object | None = None) -> Failed:
    return Failed(message if cause is None else f"{message}: {cause}.{DEBUG_HINT}")


def _admin(ctx: click.Context):
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    o = ctx.obj
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    return Admin(BrokerClient(o["bootstrap_server"], config=config))


EPILOG = exit_status_help("the command failed (kafka-transactions.sh's printErrorAndExit line on stderr)")


@click.group("transactions", cls=HelpFirstGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EPILOG)
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", metavar="HOST:PORT",
              help="Hostname and port for the broker to connect to, in the form `host:port`.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to admin client.")
@click.pass_context
def transactions(ctx: click.Context, bootstrap_server: str | None, command_config: str | None) -> None:
    """List, describe and abort transactions like kafka-transactions.sh."""
    if not bootstrap_server and not help_asked(ctx):
        raise UsageProblem("argument --bootstrap-server is required")
    ctx.obj = {"bootstrap_server": bootstrap_server, "command_config": command_config}


def _run(ctx: click.Context, action) -> None:
    from kproto.errors import KprotoError
    try:
        admin = _admin(ctx)
        try:
            text = action(admin)
        finally:
            admin.client.close()
            admin.close()
    except Failed as e:
        click.echo(str(e), err=True)
        sys.exit(ExitStatus.ERROR)
    except (KprotoError, OSError) as e:
        click.echo(f"kproto: error: {e}", err=True)
        sys.exit(ExitStatus.ERROR)
    sys.stdout.write(text)


@transactions.command("list", cls=OneLineCommand, epilog=EPILOG)
@click.option("--duration-filter", type=int, default=None,
              help="Duration (in millis) to filter by: if < 0, all transactions will be returned; otherwise, "
                   "only transactions running longer than this duration will be returned")
@click.pass_context
def list_(ctx: click.Context, duration_filter: int | None) -> None:
    """list transactions"""
    from kproto.client.transactions import list_transactions

    def action(admin) -> str:
        try:
            listed = list_transactions(admin, duration_filter_ms=-1 if duration_filter is None else duration_filter)
        except Exception as e:
            raise _fail("Failed to list transactions", e) from None
        return pretty_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
                            [[t.transactional_id, str(t.coordinator_id), str(t.producer_id), t.state] for t in listed])
    _run(ctx, action)


@transactions.command("describe", cls=OneLineCommand, epilog=EPILOG)
@click.option("--transactional-id", required=True, help="transactional id")
@click.pass_context
def describe(ctx: click.Context, transactional_id: str) -> None:
    """describe the state of an active transactional-id"""
    from kproto.client.transactions import describe_transactions
    from kproto.errors import ErrorCode, error_for

    def action(admin) -> str:
        d = describe_transactions(admin, [transactional_id]).get(transactional_id)
        if not isinstance(d, tuple):
            cause = error_for(d)
            if d == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                # the admin client's own exception (DescribeTransactionsHandler.handleError)
                cause = (f"DescribeTransactions request for transactionalId `{transactional_id}` "
                         "failed because the ID could not be found")
            raise _fail(f"Failed to describe transaction state of transactional-id `{transactional_id}`", cause)
        start = "None" if d.transaction_start_time_ms is None else str(d.transaction_start_time_ms)
        duration = "None" if d.transaction_start_time_ms is None else str(now_ms() - d.transaction_start_time_ms)
        # TransactionDescription.topicPartitions is a java.util.HashSet
        partitions = java_hashmap_order(d.topic_partitions, topic_partition_hash)
        return pretty_table(
            ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
             "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"],
            [[str(d.coordinator_id), transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
              str(d.transaction_timeout_ms), start, duration, ",".join(f"{t}-{p}" for t, p in partitions)]])
    _run(ctx, action)


def _producers(admin, tp, message: str):
    from kproto.client.transactions import describe_producers
    from kproto.errors import error_for
    found = describe_producers(admin, [tp]).get(tp)
    if not isinstance(found, list):
        raise _fail(message, error_for(found))
    return found


@transactions.command("describe-producers", cls=OneLineCommand, epilog=EPILOG)
@click.option("--broker-id", type=int, help="optional broker id to describe the producer state on a specific replica")
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", type=int, required=True, help="partition number")
@click.pass_context
def describe_producers_(ctx: click.Context, broker_id: int | None, topic: str, partition: int) -> None:
    """describe the states of active producers for a topic partition"""
    def action(admin) -> str:
        where = "leader" if broker_id is None else f"broker {broker_id}"
        found = _producers(admin, (topic, partition),
                           f"Failed to describe producers for partition {topic}-{partition} on {where}")
        return pretty_table(
            ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
             "CurrentTransactionStartOffset"],
            [[str(s.producer_id), str(s.producer_epoch),
              str(-1 if s.coordinator_epoch is None else s.coordinator_epoch),
              str(s.last_sequence), str(s.last_timestamp),
              "None" if s.current_transaction_start_offset is None else str(s.current_transaction_start_offset)]
             for s in found])
    _run(ctx, action)


@transactions.command("abort", cls=OneLineCommand, epilog=EPILOG)
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", type=int, required=True, help="partition number")
@click.option("--start-offset", type=int, help="start offset of the transaction to abort")
@click.option("--producer-id", type=int, help="producer id")
@click.option("--producer-epoch", type=int, help="producer epoch")
@click.option("--coordinator-epoch", type=int, help="coordinator epoch")
@click.pass_context
def abort(ctx: click.Context, topic: str, partition: int, start_offset: int | None, producer_id: int | None,
          producer_epoch: int | None, coordinator_epoch: int | None) -> None:
    """abort a hanging transaction (requires administrative privileges)"""
    from kproto.client.transactions import abort_transaction
    from kproto.errors import ErrorCode, error_for
    if start_offset is None and producer_id is None:
        raise UsageProblem("The transaction to abort must be identified either with --start-offset (for brokers "
                           "on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch "
                           "(for older brokers)")
    if start_offset is None and producer_epoch is None:
        raise UsageProblem("Missing required argument --producer-epoch")
    if start_offset is None and coordinator_epoch is None:
        raise UsageProblem("Missing required argument --coordinator-epoch")
    tp = (topic, partition)

    def action(admin) -> str:
        if start_offset is None:
            spec = (producer_id, producer_epoch, max(coordinator_epoch, 0))
        else:
            found = _producers(admin, tp, f"Failed to validate producer state for partition {topic}-{partition}")
            match = next((s for s in found if s.current_transaction_start_offset == start_offset), None)
            if match is None:
                raise _fail(f"Could not find any open transactions starting at offset {start_offset} "
                            f"on partition {topic}-{partition}")
            spec = (match.producer_id, match.producer_epoch, match.coordinator_epoch or 0)
        error = abort_transaction(admin, tp, *spec)
        if error is not ErrorCode.NONE:
            raise _fail(f"Failed to abort transaction AbortTransactionSpec(topicPartition={topic}-{partition}, "
                        f"producerId={spec[0]}, producerEpoch={spec[1]}, coordinatorEpoch={spec[2]})",
                        error_for(error))
        return ""
    _run(ctx, action)


@transactions.command("find-hanging", cls=OneLineCommand, epilog=EPILOG)
@click.option("--broker-id", type=int, help="broker id to search for hanging transactions")
@click.option("--max-transaction-timeout", type=int, default=15,
              help="maximum transaction timeout in minutes to limit the scope of the search (15 minutes by default)")
@click.option("--topic", help="topic name to limit search to (required if --partition is specified)")
@click.option("--partition", type=int, help="partition number")
@click.pass_context
def find_hanging(ctx: click.Context, broker_id: int | None, max_transaction_timeout: int, topic: str | None,
                 partition: int | None) -> None:
    """find hanging transactions"""
    from kproto.client.transactions import describe_producers, describe_transactions, list_transactions
    if topic is None and broker_id is None:
        raise UsageProblem("The `find-hanging` command requires either --topic or --broker-id to limit the "
                           "scope of the search")
    if partition is not None and topic is None:
        raise UsageProblem("The --partition argument requires --topic to be provided")
    limit_ms = max_transaction_timeout * 60_000

    def action(admin) -> str:
        if topic is not None and partition is not None:
            partitions = [(topic, partition)]
        else:
            meta = admin.metadata([topic] if topic is not None else None)
            partitions = [(t.name, p.partition) for t in meta.topics.values() for p in t.partitions]
        now = now_ms()
        candidates = []                      # (partition, producer state) of transactions open too long
        for tp, states in describe_producers(admin, partitions).items():
            for s in states if isinstance(states, list) else ():
                if s.current_transaction_start_offset is not None and now - s.last_timestamp > limit_ms:
                    candidates.append((tp, s))
        hanging = []
        if candidates:
            pids = {s.producer_id for _, s in candidates}
            ids = {t.producer_id: t.transactional_id for t in list_transactions(admin, producer_ids=pids)}
            described = describe_transactions(admin, set(ids.values()))
            for tp, s in candidates:
                d = described.get(ids.get(s.producer_id, ""))
                if not isinstance(d, tuple) or tp not in d.topic_partitions:
                    hanging.append((tp, s))
        return pretty_table(
            ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
             "LastTimestamp", "Duration(min)"],
            [[t, str(p), str(s.producer_id), str(s.producer_epoch),
              str(-1 if s.coordinator_epoch is None else s.coordinator_epoch), str(s.current_transaction_start_offset),
              str(s.last_timestamp), str((now - s.last_timestamp) // 60_000)] for (t, p), s in hanging])
    _run(ctx, action)
