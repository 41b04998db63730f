"""The transaction coordinator on the broker: ``TransactionCoordinator``
(sans-I/O) driven by the shared coordinator shell (kproto.server.runtime.shell)
over ``__transaction_state``, plus its markers: ``take_markers`` orders a
COMMIT/ABORT control batch on each partition of a transaction, written through
``UnifiedLog.append`` with the coordinator's origin and reported with
``markers_done`` (the partitions that failed). A partition whose topic is gone
counts as written, as Kafka drops it. Transactions caught preparing at start-up
get their markers written again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Iterable

from kproto.common import TRANSACTION_STATE_TOPIC_NAME, now_ms
from kproto.errors import ErrorCode, KafkaError
from kproto.log import AppendOrigin, LogManager
from kproto.log.manager import LEADER_EPOCH
from kproto.records import build_control_batch
from kproto.schemas import protocol as P
from kproto.server.runtime.shell import CoordinatorShell
from kproto.server.txn_coordinator import (
    TV_2, AddPartitionsToTxnRequest, TransactionConfig, TransactionCoordinator, TransactionResult,
    TransactionState, WriteTxnMarkers,
)

log = logging.getLogger("kproto.server.transactions")

__all__ = ["TxnService", "txn_config"]

#: How long a leader waits for its ISR to have markers (request.timeout.ms's default)
REQUEST_TIMEOUT_MS = 30000

_RETRIABLE_VERIFICATION = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                     ErrorCode.NOT_COORDINATOR})


def txn_config(values: dict) -> TransactionConfig:
    """The coordinator's settings from the broker's (Kafka names, kproto.server.config)."""
    def get(name: str) -> int:
        return values[name]
    return TransactionConfig(
        transaction_max_timeout_ms=get("transaction.max.timeout.ms"),
        transactional_id_expiration_ms=get("transactional.id.expiration.ms"),
        transaction_abort_timed_out_transaction_cleanup_interval_ms=get(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
        transaction_remove_expired_transaction_cleanup_interval_ms=get(
            "transaction.remove.expired.transaction.cleanup.interval.ms"),
        transaction_state_log_num_partitions=get("transaction.state.log.num.partitions"),
        offsets_topic_num_partitions=get("offsets.topic.num.partitions"))


def marker_batch(order: WriteTxnMarkers) -> bytes:
    """The order's control batch (offsets are assigned by the append)."""
    return build_control_batch(order.result.value, producer_id=order.producer_id, producer_epoch=order.producer_epoch,
                               coordinator_epoch=order.coordinator_epoch, timestamp=now_ms())


class TxnService(CoordinatorShell):
    name = "transaction coordinator"
    loaded_noun = "transactional id(s)"

    def __init__(self, logs: LogManager, values: dict, *, allocate_producer_id: Callable[[], int],
                 append_lock: threading.Lock | None = None,
                 on_markers: Callable[[WriteTxnMarkers, list[tuple[str, int]]], None] | None = None,
                 transaction_version: Callable[[], int] = lambda: 0,
                 replication: Any = None, replication_factor: int = 1) -> None:
        """``on_markers(order, written)``: called after markers reach partitions
        (the broker wakes fetches; the group coordinator completes transactional offsets).
        ``transaction_version``: the finalized transaction.version (kproto.features).
        ``replication``: the node's ReplicaManager on a node of a cluster, where the
        coordinator owns the ``__transaction_state`` partitions this node leads."""
        self.values = values
        self.config = txn_config(values)
        self.on_markers = on_markers
        self.transaction_version = transaction_version
        coordinator = TransactionCoordinator(self.config, allocate_producer_id=allocate_producer_id,
                                             transaction_version=transaction_version,
                                             owned_partitions=None if replication is None else ())
        super().__init__(coordinator, logs,
                         TRANSACTION_STATE_TOPIC_NAME, self.config.transaction_state_log_num_partitions,
                         {"cleanup.policy": "compact", "compression.type": "uncompressed",
                          "segment.bytes": values["transaction.state.log.segment.bytes"]},
                         append_lock=append_lock, log=log)
        self.replication, self.replication_factor = replication, replication_factor
        self._marker_pass: asyncio.Handle | None = None     # the loop turn that writes markers
        self._settled_waiters: list[asyncio.Future] = []

    def _load(self, partition: int, records: Iterable) -> tuple:
        # the coordinator epoch is the partition's leader epoch (TransactionCoordinator.onElection)
        epoch = self.replication.partitions[(self.topic, partition)].leader_epoch
        return self.coordinator.load_partition(partition, records, now_ms(), coordinator_epoch=epoch)

    def drive(self) -> None:
        """The shell's pass, then the coordinator's marker orders on the loop's next turn:
        EndTxn is answered once PREPARE_COMMIT/PREPARE_ABORT is appended and its markers
        follow, as TransactionCoordinator.endTransaction hands them to the
        TransactionMarkerChannelManager after the response callback (until they are
        written the transaction is preparing: the producer's next AddPartitionsToTxn gets
        CONCURRENT_TRANSACTIONS). Scheduled after the responses this pass made ready: the
        answer is written first, and the markers in the same loop turn, before the
        producer's next request is read."""
        super().drive()
        if self._marker_pass is None and self.coordinator.has_markers():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:        # no loop (a synchronous caller): written now
                self._write_markers()
                return
            self._marker_pass = loop.call_soon(self._write_markers)

    def _write_markers(self) -> None:
        """The coordinator's marker orders, each written and reported, then its follow-ups
        (the COMPLETE_COMMIT/COMPLETE_ABORT appends)."""
        self._marker_pass = None
        if self._closed:
            return
        for order in self.coordinator.take_markers():
            if self.replication is not None:
                self._spawn(self._send_markers(order))
                continue
            failed = self.write_markers(order)
            self.coordinator.markers_done(order.id, now_ms(), failed)
        self.drive()
        if self._marker_pass is None:
            for waiter in self._settled_waiters:
                if not waiter.done():
                    waiter.set_result(None)
            self._settled_waiters.clear()

    async def close(self) -> None:
        for waiter in self._settled_waiters:
            waiter.cancel()
        await super().close()

    async def markers_settled(self) -> None:
        """Return once no marker order is waiting to be written here (the orders sent to
        other brokers of a cluster are not waited for)."""
        if self._marker_pass is None and not self.coordinator.has_markers():
            return
        waiter = asyncio.get_running_loop().create_future()
        self._settled_waiters.append(waiter)
        await waiter

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._replicating.add(task)
        task.add_done_callback(self._replicating.discard)

    async def _send_markers(self, order: WriteTxnMarkers) -> None:
        """A node of a cluster: each partition's marker through its leader, as
        TransactionMarkerChannelManager sends WriteTxnMarkers per leader broker; the ones here
        are written as that request's handler writes them (replicated_markers)."""
        r = self.replication
        by_leader: dict[int, list[tuple[str, int]]] = {}
        errors: dict[tuple[str, int], ErrorCode] = {}
        for topic, partition in order.partitions:
            reg = r.image.partition(topic, partition)
            if reg is None:
                errors[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION      # gone: dropped
            elif reg.leader not in r.image.alive():
                errors[(topic, partition)] = ErrorCode.NOT_LEADER_OR_FOLLOWER      # retried after the backoff
            else:
                by_leader.setdefault(reg.leader, []).append((topic, partition))
        for leader, parts in by_leader.items():
            if leader == r.node_id:
                errors.update(await self.replicated_markers(order, parts))
                continue
            topics: dict[str, list[int]] = {}
            for topic, partition in parts:
                topics.setdefault(topic, []).append(partition)
            try:
                answer = await r.request_broker(leader, P.write_txn_markers.API.key, 1, {"markers": [{
                    "producer_id": order.producer_id, "producer_epoch": order.producer_epoch,
                    "transaction_result": order.result is TransactionResult.COMMIT,
                    "coordinator_epoch": order.coordinator_epoch,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}]})
                for t in answer.markers[0].topics:
                    for p in t.partitions:
                        errors[(t.name, p.partition_index)] = ErrorCode(p.error_code)
            except (ConnectionError, KafkaError) as e:
                log.info("markers of %r to broker %d: %s", order.transactional_id, leader, e)
                errors.update(dict.fromkeys(parts, ErrorCode.NOT_LEADER_OR_FOLLOWER))
        failed = [tp for tp, error in errors.items()
                  if error not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        self.coordinator.markers_done(order.id, now_ms(), failed)
        self.drive()

    async def replicated_markers(self, order: WriteTxnMarkers,
                                 partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """A leader's markers on a node of a cluster: appended with its leader epoch, done once
        the ISR has them (KafkaApis.handleWriteTxnMarkersRequest appends with requiredAcks -1);
        NOT_LEADER_OR_FOLLOWER where this node does not lead."""
        r = self.replication
        errors = {tp: self.write_marker(order, *tp) for tp in partitions}
        waits = {tp: r.on_append(*tp) for tp, error in errors.items() if error is ErrorCode.NONE}
        deadline = now_ms() + REQUEST_TIMEOUT_MS
        for tp, required in waits.items():
            errors[tp] = await r.wait_acks(*tp, required, deadline)
        written = [tp for tp, error in errors.items() if error is ErrorCode.NONE]
        if self.on_markers is not None and written:
            self.on_markers(order, written)
        return errors

    def write_markers(self, order: WriteTxnMarkers) -> list[tuple[str, int]]:
        """Append the order's control batch to each partition; the partitions that failed."""
        batch = marker_batch(order)     # the same bytes for each partition: built once
        errors = {tp: self.write_marker(order, *tp, batch=batch) for tp in order.partitions}
        written = [tp for tp, error in errors.items() if error is ErrorCode.NONE]
        if self.on_markers is not None and written:
            self.on_markers(order, written)
        return [tp for tp, error in errors.items() if error not in (ErrorCode.NONE,
                                                                   ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]

    def write_marker(self, order: WriteTxnMarkers, topic: str, partition: int, *,
                     batch: bytes | None = None) -> ErrorCode:
        """One partition's marker (also WriteTxnMarkers' path); UNKNOWN_TOPIC_OR_PARTITION if it is gone.
        ``batch``: the order's ``marker_batch``, if already built."""
        epoch = LEADER_EPOCH
        if self.replication is not None:
            part, error = self.replication.leader_for(topic, partition)
            if error:
                return error
            plog, epoch = part.log, part.leader_epoch
        else:
            plog = self.logs.get_log(topic, partition)
        if plog is None:
            log.info("dropping the %s marker of %r for %s-%d: no such partition", order.result.name,
                     order.transactional_id, topic, partition)
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        batch = batch or marker_batch(order)
        try:
            with self.append_lock:
                plog.append(batch, leader_epoch=epoch, origin=AppendOrigin.COORDINATOR)
        except KafkaError as e:
            log.warning("writing the %s marker of %r to %s-%d failed: %s", order.result.name,
                        order.transactional_id, topic, partition, e)
            return ErrorCode(e.error_code)
        return ErrorCode.NONE

    def open_offsets_transactions(self, offsets_topic: str) -> set[tuple[int, int]]:
        """(``offsets_topic`` partition, producer id) of each transaction that the coordinator
        will end with a marker in that partition: open or preparing, with it added."""
        return {(partition, meta.producer_id) for meta in self.coordinator.transactions.values()
                if meta.state in (TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
                                  TransactionState.PREPARE_ABORT)
                for topic, partition in meta.topic_partitions if topic == offsets_topic}

    def implicit_add(self, version: int, first_version: int) -> bool:
        """Does a request at ``version`` add its partition to the transaction itself (KIP-890
        part 2: Produce v12+, TxnOffsetCommit v5+, ``first_version``), as
        AddPartitionsToTxnManager's addPartition operation? Only while transaction.version 2 is
        finalized: a client told less sends AddPartitionsToTxn/AddOffsetsToTxn first."""
        return version >= first_version and self.transaction_version() >= TV_2

    async def verify(self, transactional_id: str, topic: str, partition: int, producer_id: int,
                     producer_epoch: int, *, abortable: bool = False, add: bool = False) -> ErrorCode:
        """KIP-890: may the producer write transactionally to ``topic``-``partition``?
        NONE when its transaction is already open there (UnifiedLog.maybeStartTransactionVerification
        asks nobody then) or the coordinator has the partition in the producer's open
        transaction; with ``add`` (transaction version 2) the coordinator adds it to the
        transaction instead of checking. Otherwise the coordinator's error as
        AddPartitionsToTxnManager hands it on: PRODUCER_FENCED as INVALID_PRODUCER_EPOCH
        ("producers expect to handle" it), TRANSACTION_ABORTABLE as INVALID_TXN_STATE unless
        the client knows it (``abortable``)."""
        plog = self.logs.get_log(topic, partition)
        entry = plog.producer_state.producers.get(producer_id) if plog is not None else None
        if entry is not None and entry.current_txn_first_offset is not None:
            return ErrorCode.NONE
        ask = self._verify_here if self.replication is None else self._verify_at_coordinator
        error = await ask(transactional_id, topic, partition, producer_id, producer_epoch, add)
        if error is ErrorCode.PRODUCER_FENCED:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if error is ErrorCode.TRANSACTION_ABORTABLE and not abortable:
            return ErrorCode.INVALID_TXN_STATE
        return error

    async def _verify_here(self, transactional_id: str, topic: str, partition: int, producer_id: int,
                           producer_epoch: int, add: bool) -> ErrorCode:
        """This node's coordinator: checks (verify_only), or with ``add`` adds the partition
        (a write to __transaction_state, so through the shell)."""
        request = AddPartitionsToTxnRequest(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            partitions=((topic, partition),), verify_only=not add, client_transaction_version=TV_2 if add else 0)
        if add:
            return (await self.ask(request)).error_code
        r = self.coordinator.handle(request, now_ms())
        return r.verified[0][1] if r.verified else r.error_code

    async def _verify_at_coordinator(self, transactional_id: str, topic: str, partition: int, producer_id: int,
                                     producer_epoch: int, add: bool) -> ErrorCode:
        """A node of a cluster asks the transactional id's coordinator (the leader of its
        ``__transaction_state`` partition), as AddPartitionsToTxnManager sends
        AddPartitionsToTxn v4+ with verify_only (not with ``add``, transaction version 2: the
        coordinator adds the partition); COORDINATOR_NOT_AVAILABLE while it has none."""
        r = self.replication
        reg = r.image.partition(self.topic, self.coordinator.partition_for(transactional_id))
        if reg is None or reg.leader not in r.image.alive():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if reg.leader == r.node_id:
            return await self._verify_here(transactional_id, topic, partition, producer_id, producer_epoch, add)
        try:
            answer = await r.request_broker(reg.leader, P.add_partitions_to_txn.API.key, 5 if add else 4, {
                "transactions": [{"transactional_id": transactional_id, "producer_id": producer_id,
                                  "producer_epoch": producer_epoch, "verify_only": not add,
                                  "topics": [{"name": topic, "partitions": [partition]}]}]})
        except (ConnectionError, KafkaError) as e:
            log.info("verifying %r at broker %d: %s", transactional_id, reg.leader, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if answer.error_code or not answer.results_by_transaction:
            return ErrorCode(answer.error_code)
        results = [p.partition_error_code for t in answer.results_by_transaction[0].topic_results
                   for p in t.results_by_partition]
        return ErrorCode(results[0]) if results else ErrorCode.NONE

    async def verify_produce(self, transactional_id: str, batches, *, version: int
                             ) -> dict[tuple[str, int], tuple[ErrorCode, str]]:
        """The transactional batches of a Produce at ``version``, each verified (``verify``;
        Produce v11+ knows TRANSACTION_ABORTABLE, v12+ adds the partition with transaction
        version 2) and refused with ReplicaManager's errors: INVALID_TXN_STATE when the
        partition is not in the transaction, NOT_ENOUGH_REPLICAS (retriable for every
        client) when the coordinator cannot say yet, the error itself otherwise.
        ``batches``: (topic, partition, first batch or None). Returns (error, message) of the refused."""
        refused = {}
        add = self.implicit_add(version, 12)
        for topic, partition, batch in batches:
            if batch is None or not batch.is_transactional or self.logs.get_log(topic, partition) is None:
                continue
            error = await self.verify(transactional_id, topic, partition, batch.producer_id, batch.producer_epoch,
                                      abortable=version >= 11, add=add)
            if error is ErrorCode.NONE:
                continue
            log.info("refusing a transactional batch of %r for %s-%d: %s", transactional_id, topic,
                     partition, error.name)
            if error is ErrorCode.INVALID_TXN_STATE:
                refused[(topic, partition)] = (error, "Partition was not added to the transaction")
            elif error in _RETRIABLE_VERIFICATION:
                refused[(topic, partition)] = (ErrorCode.NOT_ENOUGH_REPLICAS,
                                               "Unable to verify the partition has been added to the "
                                               f"transaction. Underlying error: {error.name}")
            else:
                refused[(topic, partition)] = (error, error.name)
        return refused

    async def ask(self, request: Any) -> Any:
        """One coordinator request (kproto.server.txn_coordinator.events) -> its response;
        the first creates ``__transaction_state``."""
        self.ensure_topic()
        return await super().ask(request)
