"""TransactionCoordinator: Kafka's transaction coordinator as a sans-I/O state machine.

The contract is the group coordinator's (``kproto.server.coordinator``), plus markers:

* ``handle(request, now_ms)`` returns the response, or a ``Pending`` handle when
  it waits for a ``__transaction_state`` append.
* ``take_appends()`` returns the records to append (``Append``: partition of
  ``__transaction_state``, key/value pairs); append them in order and report
  each with ``append_done(id, now_ms, error)``.
* ``take_markers()`` returns ``WriteTxnMarkers`` orders: write a COMMIT or
  ABORT control batch to every partition listed, then report with
  ``markers_done(id, now_ms, failed)``; partitions in ``failed`` are ordered
  again after ``marker_retry_backoff_ms`` (a partition whose topic is gone
  counts as written, as Kafka drops it).
  Once every marker of a transaction is written the coordinator appends its
  CompleteCommit/CompleteAbort record.
* ``poll(now_ms)`` fires the periodic sweeps (``transaction.abort.timed.out.
  transaction.cleanup.interval.ms``: abort transactions older than their
  timeout, fencing the producer's epoch; ``transaction.remove.expired.
  transaction.cleanup.interval.ms``: expire idle transactional ids) and hands
  out the responses that became ready.
* ``begin_load``/``load_partition``/``unload_partition`` as the group
  coordinator's; a loaded transaction that was preparing its commit or abort
  gets its markers ordered again.

It never reads a clock or touches a file. Behaviour follows Kafka 4.4's
TransactionCoordinator.scala; the request/state rules are the table in ``state``.
A transaction whose client uses transaction version 2 (KIP-890 part 2: EndTxn v5+,
partitions added by Produce v12+ and TxnOffsetCommit v5+) has its epoch bumped
by every EndTxn, the markers carry the bumped epoch, and an epoch overflow
rotates to a new producer id once the markers are written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kproto.common import GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.server.runtime.core import CoordinatorRuntime, Pending
from kproto.server.runtime.state_topic import LogRecord
from kproto.server.runtime.state_topic import partition_for as hash_partition
from kproto.server.txn_coordinator.config import TransactionConfig
from kproto.server.txn_coordinator.events import (
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    DescribedTransaction, DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest,
    EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, ListedTransaction, ListTransactionsRequest,
    ListTransactionsResponse, Request, Response, WriteTxnMarkers,
)
from kproto.server.txn_coordinator.metadata import (
    LAST_CLIENT_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition, TransactionMetadata, TxnTransitMetadata,
    is_epoch_exhausted, supports_epoch_bump,
)
from kproto.server.txn_coordinator.persistence import (
    replay, transaction_log_key, transaction_log_value, value_version,
)
from kproto.server.txn_coordinator.state import (
    REQUEST_OUTCOMES, TransactionResult, TransactionState, TxnEvent,
)

__all__ = ["TransactionCoordinator", "txn_append_error"]

log = logging.getLogger("kproto.server.transactions")

S = TransactionState
E = ErrorCode
_ABORT_SWEEP = ("txn", "abort-timed-out")
_EXPIRE_SWEEP = ("txn", "expire-ids")

Reply = Callable[[ErrorCode], None]


def txn_append_error(error: ErrorCode) -> ErrorCode:
    """A failed ``__transaction_state`` append as the client sees it (appendTransactionToLog)."""
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                 E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE):
        return E.UNKNOWN_SERVER_ERROR
    return error


class TransactionCoordinator(CoordinatorRuntime):
    def __init__(self, config: TransactionConfig | None = None, *, allocate_producer_id: Callable[[], int],
                 owned_partitions: Iterable[int] | None = None,
                 transaction_version: Callable[[], int] = lambda: 0) -> None:
        """``allocate_producer_id``: the broker's producer id block (ids are shared
        with idempotent producers). ``owned_partitions``: the ``__transaction_state``
        partitions this node coordinates (default: all, a single-node cluster).
        ``transaction_version``: the finalized transaction.version (the records' value version)."""
        super().__init__(config or TransactionConfig())    # type: ignore[arg-type]
        self.config: TransactionConfig
        self._allocate = allocate_producer_id
        self._transaction_version = transaction_version
        n = self.config.transaction_state_log_num_partitions
        self.transactions: dict[str, TransactionMetadata] = {}
        self._owned: dict[int, int] = {p: 0 for p in (range(n) if owned_partitions is None else owned_partitions)}
        self._loading: set[int] = set()
        self._markers: list[WriteTxnMarkers] = []
        self._marker_orders: dict[int, tuple[WriteTxnMarkers, TransactionMetadata, set[TopicPartition]]] = {}
        self._sweeps_scheduled = False
        self._handlers: dict[type, Callable[[object, Pending, int], None]] = {
            InitProducerIdRequest: self._init_producer_id, AddPartitionsToTxnRequest: self._add_partitions,
            AddOffsetsToTxnRequest: self._add_offsets, EndTxnRequest: self._end_txn_request,
            DescribeTransactionsRequest: self._describe, ListTransactionsRequest: self._list,
        }

    # --- public entry points --------------------------------------------------------

    def handle(self, request: Request, now_ms: int) -> Response | Pending:
        handler = self._handlers.get(type(request))
        if handler is None:
            raise TypeError(f"not a transaction coordinator request: {type(request).__name__}")
        now_ms = self._observe(now_ms)
        self._ensure_sweeps(now_ms)
        handle = self._new_handle(type(request).__name__.removesuffix("Request"))
        handler(request, handle, now_ms)
        return self._ready.pop(handle, handle)

    def partition_for(self, transactional_id: str) -> int:
        """The ``__transaction_state`` partition of ``transactional_id``."""
        return hash_partition(transactional_id, self.config.transaction_state_log_num_partitions)

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        """For inspection only (do not mutate)."""
        return self.transactions.get(transactional_id)

    def take_markers(self) -> list[WriteTxnMarkers]:
        """Marker orders, oldest first (see the module docstring)."""
        out, self._markers = self._markers, []
        return out

    def has_markers(self) -> bool:
        """Are marker orders waiting for ``take_markers``?"""
        return bool(self._markers)

    def markers_done(self, marker_id: int, now_ms: int, failed: Iterable[TopicPartition] = ()) -> None:
        """The markers of ``marker_id`` are written, except on ``failed``."""
        now_ms = self._observe(now_ms)
        entry = self._marker_orders.pop(marker_id, None)
        if entry is None:
            raise KeyError(f"unknown marker order {marker_id}")
        order, meta, waiting = entry
        failed = set(failed) & set(order.partitions)
        waiting -= set(order.partitions) - failed
        if failed:
            # ordered again after a backoff (the marker channel's retry), never in a busy loop
            def retry(now: int, parts: tuple[TopicPartition, ...] = tuple(sorted(failed))) -> None:
                if self.transactions.get(order.transactional_id) is meta:
                    self._order_markers(order.transactional_id, order.producer_id, order.producer_epoch,
                                        order.coordinator_epoch, order.result, parts, meta, waiting)
            self._timers.schedule(("txn", "markers", order.id), now_ms + self.config.marker_retry_backoff_ms,
                                  retry)
        elif not waiting:
            self._complete_markers(order, meta, now_ms)

    def begin_load(self, partition: int, now_ms: int) -> None:
        """This node became the partition's coordinator; its ids answer
        COORDINATOR_LOAD_IN_PROGRESS until ``load_partition``."""
        self._observe(now_ms)
        self._drop_partition(partition)
        self._loading.add(partition)

    def load_partition(self, partition: int, records: Iterable[LogRecord], now_ms: int,
                       coordinator_epoch: int = 0) -> tuple[str, ...]:
        """Replay the partition's records and own it (unreadable records are
        skipped and logged). Transactions caught preparing get their markers
        ordered again. Returns the transactional ids loaded."""
        now_ms = self._observe(now_ms)
        self._drop_partition(partition)
        result = replay(records, partition=partition)
        self._owned[partition] = coordinator_epoch
        self._ensure_sweeps(now_ms)
        for txn_id, meta in result.transactions.items():
            if self.partition_for(txn_id) != partition:
                log.warning("%s-%d: transactional id %r belongs to partition %d; skipped",
                            TRANSACTION_STATE_TOPIC_NAME, partition, txn_id, self.partition_for(txn_id))
                continue
            self.transactions[txn_id] = meta
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                result_ = TransactionResult.COMMIT if meta.state is S.PREPARE_COMMIT else TransactionResult.ABORT
                self._order_markers(txn_id, meta.producer_id, meta.producer_epoch, coordinator_epoch, result_,
                                    tuple(sorted(meta.topic_partitions)), meta, set(meta.topic_partitions))
        return tuple(t for t in result.transactions if t in self.transactions)

    def unload_partition(self, partition: int, now_ms: int) -> None:
        self._observe(now_ms)
        self._drop_partition(partition)

    # --- ownership ------------------------------------------------------------------

    def _drop_partition(self, partition: int) -> None:
        if not 0 <= partition < self.config.transaction_state_log_num_partitions:
            raise ValueError(f"__transaction_state has no partition {partition}")
        self._owned.pop(partition, None)
        self._loading.discard(partition)
        for txn_id in [t for t in self.transactions if self.partition_for(t) == partition]:
            del self.transactions[txn_id]
        for marker_id, (order, _, _) in list(self._marker_orders.items()):
            if self.partition_for(order.transactional_id) == partition:
                del self._marker_orders[marker_id]
        self._markers = [m for m in self._markers if self.partition_for(m.transactional_id) != partition]

    def _ownership_error(self, transactional_id: str) -> ErrorCode:
        p = self.partition_for(transactional_id)
        if p in self._loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        return E.NONE if p in self._owned else E.NOT_COORDINATOR

    # --- the log --------------------------------------------------------------------

    def _persist(self, meta: TransactionMetadata, transit: TxnTransitMetadata, now_ms: int,
                 on_done: Reply, *, retry: bool = False) -> None:
        """Write ``transit``; complete it and call ``on_done(NONE)`` once appended,
        or drop it and call ``on_done(error)``. ``retry``: append again while the
        log answers COORDINATOR_NOT_AVAILABLE (marker completion, which no client waits for)."""
        txn_id = meta.transactional_id
        partition = self.partition_for(txn_id)
        epoch = self._owned.get(partition)

        record = [(transaction_log_key(txn_id), transaction_log_value(
            transit, value_version(self._transaction_version())))]

        def done(error: ErrorCode, now: int) -> None:
            error = txn_append_error(error)
            current = self.transactions.get(txn_id)
            same = current is meta and self._owned.get(self.partition_for(txn_id)) == epoch
            if error is E.NONE:
                if not same:
                    error = E.NOT_COORDINATOR
                elif transit.state is S.DEAD:
                    del self.transactions[txn_id]
                else:
                    meta.complete_transition(transit)
            elif same and retry and error is E.COORDINATOR_NOT_AVAILABLE:
                self._append(partition, record, now, done)
                return
            elif same:
                meta.abort_transition()
            on_done(error)

        self._append(partition, record, now_ms, done)

    # --- InitProducerId -------------------------------------------------------------

    def _init_producer_id(self, r: InitProducerIdRequest, handle: Pending, now_ms: int) -> None:
        def reply(error: ErrorCode, pid: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH) -> None:
            self._reply(handle, InitProducerIdResponse(error_code=error, producer_id=pid, producer_epoch=epoch))

        if r.transactional_id is None:
            return reply(E.NONE, self._allocate(), 0)       # idempotent only: always a new id
        if r.transactional_id == "":
            return reply(E.INVALID_REQUEST)
        if not 0 < r.transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return reply(E.INVALID_TRANSACTION_TIMEOUT)
        if (r.producer_id == NO_PRODUCER_ID) != (r.producer_epoch == NO_PRODUCER_EPOCH):
            return reply(E.INVALID_REQUEST)                  # KafkaApis: both or neither
        if (error := self._ownership_error(r.transactional_id)) is not E.NONE:
            return reply(error)
        meta = self.transactions.get(r.transactional_id)
        if meta is None:
            meta = self.transactions[r.transactional_id] = TransactionMetadata(
                transactional_id=r.transactional_id, producer_id=self._allocate(),
                producer_epoch=NO_PRODUCER_EPOCH, txn_timeout_ms=r.transaction_timeout_ms,
                state=S.EMPTY, txn_last_update_timestamp=now_ms)
        expected = None if r.producer_id == NO_PRODUCER_ID else (r.producer_id, r.producer_epoch)
        if meta.pending_state is not None:
            return reply(E.CONCURRENT_TRANSACTIONS)
        if expected is not None and not (
                meta.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == meta.producer_id
                or (expected[0] == meta.previous_producer_id and is_epoch_exhausted(expected[1]))):
            return reply(E.PRODUCER_FENCED)
        outcome = REQUEST_OUTCOMES[meta.state][TxnEvent.INIT_PRODUCER_ID]
        if not outcome.appends:
            return reply(outcome.answer)
        if meta.state is S.ONGOING:
            # fence the old instance and abort; the new one retries on CONCURRENT_TRANSACTIONS
            fence = meta.prepare_fence_epoch()
            return self._end_transaction(r.transactional_id, fence.producer_id, fence.producer_epoch,
                                         TransactionResult.ABORT, False, now_ms,
                                         lambda error, *_: reply(error if error is not E.NONE else outcome.answer))
        if meta.is_epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
            transit = meta.prepare_producer_id_rotation(self._allocate(), r.transaction_timeout_ms, now_ms,
                                                        record_last_epoch=expected is not None)
        else:
            transit = meta.prepare_increment_epoch(r.transaction_timeout_ms,
                                                   None if expected is None else expected[1], now_ms)
            if transit is None:
                return reply(E.PRODUCER_FENCED)

        def done(error: ErrorCode) -> None:
            if error is E.NONE:
                log.info("initialized transactional id %r with producer id %d epoch %d", r.transactional_id,
                         transit.producer_id, transit.producer_epoch)
                reply(E.NONE, transit.producer_id, transit.producer_epoch)
            else:
                reply(error)
        self._persist(meta, transit, now_ms, done)

    # --- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------

    def _add_partitions(self, r: AddPartitionsToTxnRequest, handle: Pending, now_ms: int) -> None:
        if r.verify_only:
            return self._reply(handle, self._verify(r))
        self._add(r.transactional_id, r.producer_id, r.producer_epoch, frozenset(r.partitions), now_ms,
                  lambda error: self._reply(handle, AddPartitionsToTxnResponse(error_code=error)),
                  r.client_transaction_version)

    def _add_offsets(self, r: AddOffsetsToTxnRequest, handle: Pending, now_ms: int) -> None:
        partition = (GROUP_METADATA_TOPIC_NAME, hash_partition(r.group_id, self.config.offsets_topic_num_partitions))
        self._add(r.transactional_id, r.producer_id, r.producer_epoch, frozenset({partition}), now_ms,
                  lambda error: self._reply(handle, AddOffsetsToTxnResponse(error_code=error)),
                  r.client_transaction_version)

    def _verify(self, r: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
        """handleVerifyPartitionsInTransaction: is each partition in the open transaction?"""
        meta = self.transactions.get(r.transactional_id) if r.transactional_id else None
        if not r.transactional_id:
            error = E.INVALID_REQUEST
        elif (error := self._ownership_error(r.transactional_id)) is not E.NONE:
            pass
        elif meta is None or meta.producer_id != r.producer_id:
            error = E.INVALID_PRODUCER_ID_MAPPING
        elif meta.producer_epoch != r.producer_epoch:
            error = E.PRODUCER_FENCED
        elif meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = E.CONCURRENT_TRANSACTIONS
        else:
            return AddPartitionsToTxnResponse(error_code=E.NONE, verified=tuple(
                (tp, E.NONE if tp in meta.topic_partitions else E.TRANSACTION_ABORTABLE) for tp in r.partitions))
        return AddPartitionsToTxnResponse(error_code=error, verified=tuple((tp, error) for tp in r.partitions))

    def _add(self, txn_id: str, pid: int, epoch: int, partitions: frozenset[TopicPartition], now_ms: int,
             reply: Reply, client_transaction_version: int = 0) -> None:
        if not txn_id:
            return reply(E.INVALID_REQUEST)
        if (error := self._ownership_error(txn_id)) is not E.NONE:
            return reply(error)
        meta = self.transactions.get(txn_id)
        if meta is None or meta.producer_id != pid:
            return reply(E.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != epoch:
            return reply(E.PRODUCER_FENCED)
        if meta.pending_state is not None:
            return reply(E.CONCURRENT_TRANSACTIONS)
        event = TxnEvent.ADD_PARTITIONS_AGAIN if partitions <= meta.topic_partitions else TxnEvent.ADD_PARTITIONS
        outcome = REQUEST_OUTCOMES[meta.state][event]
        if not outcome.appends:
            return reply(outcome.answer)
        self._persist(meta, meta.prepare_add_partitions(partitions, now_ms, client_transaction_version), now_ms,
                      reply)

    # --- EndTxn ---------------------------------------------------------------------

    def _end_txn_request(self, r: EndTxnRequest, handle: Pending, now_ms: int) -> None:
        result = TransactionResult.COMMIT if r.committed else TransactionResult.ABORT

        def reply(error: ErrorCode, pid: int = NO_PRODUCER_ID, epoch: int = NO_PRODUCER_EPOCH) -> None:
            self._reply(handle, EndTxnResponse(error_code=error, producer_id=pid, producer_epoch=epoch))
        self._end_transaction(r.transactional_id, r.producer_id, r.producer_epoch, result, True, now_ms, reply,
                              r.client_transaction_version)

    def _end_transaction(self, txn_id: str, pid: int, epoch: int, result: TransactionResult, from_client: bool,
                         now_ms: int, reply: Callable[..., None], client_transaction_version: int | None = None) -> None:
        """TransactionCoordinator.endTransaction. ``reply(error, producer_id, producer_epoch)``: the
        id and epoch for the next transaction on success. ``client_transaction_version``: the
        client's (EndTxn's version); None for the coordinator's own aborts, which use the
        finalized transaction.version ("since this is not from client, use server TV")."""
        tv = self._transaction_version() if client_transaction_version is None else client_transaction_version
        if not txn_id:
            return reply(E.INVALID_REQUEST)
        if (error := self._ownership_error(txn_id)) is not E.NONE:
            return reply(error)
        meta = self.transactions.get(txn_id)
        if meta is None:
            return reply(E.INVALID_PRODUCER_ID_MAPPING)
        fencing = meta.pending_state is S.PREPARE_EPOCH_FENCE
        # a client must hold the current epoch; the coordinator's own aborts carry the fenced one
        valid = (not from_client or epoch == meta.producer_epoch) and epoch >= meta.producer_epoch
        retry = overflow = False
        if supports_epoch_bump(tv) and not fencing:
            # TV2: an EndTxn retried after its bump carries the epoch before it (retryOnEpochBump),
            # after an overflow the previous id at the last client epoch (retryOnOverflow)
            overflow = (meta.previous_producer_id == pid and epoch == LAST_CLIENT_EPOCH
                        and meta.producer_epoch == 0)
            retry = overflow or meta.producer_epoch == epoch + 1
            current = epoch == meta.producer_epoch
            valid = {S.PREPARE_COMMIT: retry, S.PREPARE_ABORT: retry, S.COMPLETE_COMMIT: retry or current,
                     S.COMPLETE_ABORT: retry or current}.get(meta.state, current)
        if meta.producer_id != pid and not overflow:
            return reply(E.INVALID_PRODUCER_ID_MAPPING)
        if not valid:
            return reply(E.PRODUCER_FENCED)
        if meta.pending_state is not None and not fencing:
            return reply(E.CONCURRENT_TRANSACTIONS)
        event = TxnEvent.END_TXN_COMMIT if result is TransactionResult.COMMIT else TxnEvent.END_TXN_ABORT
        outcome = REQUEST_OUTCOMES[meta.state][event]
        next_state, no_partition = outcome.next_state, False
        if supports_epoch_bump(tv) and meta.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            # TV2 between transactions: the retry of the last EndTxn is answered again; an abort
            # at the current epoch only bumps it (a transaction without partitions); else INVALID_TXN_STATE
            same = (result is TransactionResult.COMMIT) == (meta.state is S.COMPLETE_COMMIT)
            if retry and same and meta.state is not S.EMPTY:
                return reply(E.NONE, meta.producer_id, meta.producer_epoch)
            if retry:
                return reply(E.INVALID_TXN_STATE)
            if result is not TransactionResult.ABORT:
                return reply(E.INVALID_TXN_STATE)
            next_state, no_partition = S.PREPARE_ABORT, True
        elif not outcome.appends:
            if fencing:
                meta.abort_transition()
            if outcome.answer is E.NONE:            # a retry of a completed EndTxn (TV1)
                return reply(E.NONE, meta.producer_id, meta.producer_epoch)
            return reply(outcome.answer)
        next_pid = NO_PRODUCER_ID
        if supports_epoch_bump(tv) and not fencing and meta.is_epoch_exhausted:
            next_pid = self._allocate()             # the bump leaves no epoch: rotate once the markers are out
        if fencing:
            # the fence becomes the abort: the bumped epoch is the transaction's from now on
            meta.abort_transition()
            meta.producer_epoch, meta.last_producer_epoch = epoch, NO_PRODUCER_EPOCH
        transit = meta.prepare_abort_or_commit(next_state, now_ms, tv, next_pid, no_partition_added=no_partition)

        def done(error: ErrorCode) -> None:
            if error is not E.NONE:
                if fencing and self.transactions.get(txn_id) is meta:
                    meta.has_failed_epoch_fence = True
                return reply(error)
            reply(E.NONE, meta.producer_id, meta.producer_epoch)
            self._order_markers(txn_id, meta.producer_id, meta.producer_epoch,
                                self._owned.get(self.partition_for(txn_id), 0), result,
                                tuple(sorted(meta.topic_partitions)), meta, set(meta.topic_partitions))
        self._persist(meta, transit, now_ms, done)

    # --- markers --------------------------------------------------------------------

    def _order_markers(self, txn_id: str, pid: int, epoch: int, coordinator_epoch: int, result: TransactionResult,
                       partitions: tuple[TopicPartition, ...], meta: TransactionMetadata,
                       waiting: set[TopicPartition]) -> None:
        order = WriteTxnMarkers(next(self._ids), txn_id, pid, epoch, coordinator_epoch, result, partitions)
        self._marker_orders[order.id] = (order, meta, waiting)
        if partitions:
            self._markers.append(order)
        else:
            self._complete_markers(order, meta, self._clock)

    def _complete_markers(self, order: WriteTxnMarkers, meta: TransactionMetadata, now_ms: int) -> None:
        self._marker_orders.pop(order.id, None)
        if self.transactions.get(order.transactional_id) is not meta or meta.pending_state is not None:
            return                                           # unloaded, or expired meanwhile
        if meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return
        self._persist(meta, meta.prepare_complete(now_ms), now_ms, lambda error: None, retry=True)

    # --- describe and list ----------------------------------------------------------

    def _describe(self, r: DescribeTransactionsRequest, handle: Pending, now_ms: int) -> None:
        out = []
        for txn_id in r.transactional_ids:
            error = E.INVALID_REQUEST if txn_id == "" else self._ownership_error(txn_id)
            meta = self.transactions.get(txn_id) if error is E.NONE else None
            if error is E.NONE and meta is not None:
                error = REQUEST_OUTCOMES[meta.state][TxnEvent.DESCRIBE].answer
            elif error is E.NONE:
                error = E.TRANSACTIONAL_ID_NOT_FOUND
            if error is not E.NONE or meta is None:
                out.append(DescribedTransaction(transactional_id=txn_id, error_code=error))
                continue
            topics: dict[str, list[int]] = {}
            for topic, p in sorted(meta.topic_partitions):
                topics.setdefault(topic, []).append(p)
            out.append(DescribedTransaction(
                transactional_id=txn_id, error_code=E.NONE, transaction_state=meta.state.value,
                transaction_timeout_ms=meta.txn_timeout_ms, transaction_start_time_ms=meta.txn_start_timestamp,
                producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                topics=tuple((t, tuple(ps)) for t, ps in topics.items())))
        self._reply(handle, DescribeTransactionsResponse(transaction_states=tuple(out)))

    def _list(self, r: ListTransactionsRequest, handle: Pending, now_ms: int) -> None:
        if self._loading:
            return self._reply(handle, ListTransactionsResponse(error_code=E.COORDINATOR_LOAD_IN_PROGRESS))
        names = {s.value: s for s in TransactionState}
        wanted = {names[f] for f in r.state_filters if f in names}
        unknown = tuple(f for f in r.state_filters if f not in names)
        listed = []
        for txn_id, meta in sorted(self.transactions.items()):
            if (meta.state is S.DEAD or (r.producer_id_filters and meta.producer_id not in r.producer_id_filters)
                    or (r.state_filters and meta.state not in wanted)
                    or (r.duration_filter >= 0 and now_ms - meta.txn_start_timestamp <= r.duration_filter)):
                continue
            listed.append(ListedTransaction(transactional_id=txn_id, producer_id=meta.producer_id,
                                            transaction_state=meta.state.value))
        self._reply(handle, ListTransactionsResponse(error_code=E.NONE, unknown_state_filters=unknown,
                                                     transaction_states=tuple(listed)))

    # --- timers ---------------------------------------------------------------------

    def _ensure_sweeps(self, now_ms: int) -> None:
        if not self._sweeps_scheduled:
            self._sweeps_scheduled = True
            self._schedule_abort_sweep(now_ms)
            self._schedule_expire_sweep(now_ms)

    def _schedule_abort_sweep(self, now_ms: int) -> None:
        interval = self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        self._timers.schedule(_ABORT_SWEEP, now_ms + interval, self._abort_timed_out)

    def _schedule_expire_sweep(self, now_ms: int) -> None:
        interval = self.config.transaction_remove_expired_transaction_cleanup_interval_ms
        self._timers.schedule(_EXPIRE_SWEEP, now_ms + interval, self._expire_ids)

    def _abort_timed_out(self, now_ms: int) -> None:
        """abortTimedOutTransactions: fence the epoch and abort, like a new producer instance would."""
        self._schedule_abort_sweep(now_ms)
        for txn_id, meta in list(self.transactions.items()):
            if (meta.pending_state is not None or meta.txn_start_timestamp + meta.txn_timeout_ms >= now_ms
                    or not REQUEST_OUTCOMES[meta.state][TxnEvent.TIMEOUT].appends):
                continue
            fence = meta.prepare_fence_epoch()

            def done(error: ErrorCode, *_: int, txn_id: str = txn_id) -> None:
                log.info("rollback of timed-out transaction %r: %s", txn_id, error.name)
            self._end_transaction(txn_id, fence.producer_id, fence.producer_epoch, TransactionResult.ABORT,
                                  False, now_ms, done)

    def _expire_ids(self, now_ms: int) -> None:
        """removeExpiredTransactionalIds: tombstones for ids idle longer than transactional.id.expiration.ms."""
        self._schedule_expire_sweep(now_ms)
        horizon = now_ms - self.config.transactional_id_expiration_ms
        for meta in list(self.transactions.values()):
            if (meta.pending_state is None and REQUEST_OUTCOMES[meta.state][TxnEvent.EXPIRE].appends
                    and meta.txn_last_update_timestamp <= horizon):
                self._persist(meta, meta.prepare_dead(), now_ms, lambda error: None)
