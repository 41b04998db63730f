"""The transaction coordinator over real logs: ``__transaction_state`` written and
replayed across a restart, markers in the data partitions, read_committed's view
(LSO, aborted transactions), timeouts, and a log with unreadable records."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from kproto.common import TRANSACTION_STATE_TOPIC_NAME
from kproto.errors import ErrorCode
from kproto.log import LogManager
from kproto.log.txn_index import AbortedTxn
from kproto.server.config import BrokerConfig
from kproto.records import NewRecord, RecordBatch, build_record_batch, control_record
from kproto.server.txn_coordinator import (
    AddPartitionsToTxnRequest, DescribeTransactionsRequest, EndTxnRequest,
    InitProducerIdRequest,
)
from kproto.server.txn_coordinator.persistence import transaction_log_key
from kproto.tools.dump_log.decoders import transaction_log_record

E = ErrorCode
SMALL = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


def broker_values(**overrides) -> dict:
    return BrokerConfig.from_props({**SMALL, **overrides}).values


class Node:
    """A LogManager and a TxnService over one data dir, as the broker holds them."""

    def __init__(self, tmp_path, **values) -> None:
        from kproto.server.txn_service import TxnService
        self.tmp_path = tmp_path
        self.values = broker_values(**values)
        self.logs = LogManager(tmp_path)
        if not self.logs.has_topic("t"):
            self.logs.create_topic("t", 2)
        ids = itertools.count(5000)
        self.markers = []
        self.service = TxnService(self.logs, self.values, allocate_producer_id=lambda: next(ids),
                                  on_markers=lambda order, written: self.markers.append((order, written)))

    async def __aenter__(self):
        await self.service.start()
        return self

    async def __aexit__(self, *exc):
        await self.service.close()
        self.logs.close()

    async def begin(self, txn_id="tx", timeout=60_000, parts=(("t", 0), ("t", 1))):
        r = await self.service.ask(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout))
        assert r.error_code == E.NONE
        a = await self.service.ask(AddPartitionsToTxnRequest(
            transactional_id=txn_id, producer_id=r.producer_id, producer_epoch=r.producer_epoch, partitions=parts))
        assert a.error_code == E.NONE
        for topic, p in parts:
            self.logs.get_log(topic, p).append(build_record_batch(
                [NewRecord(b"k", b"v%d" % p)], producer_id=r.producer_id, producer_epoch=r.producer_epoch,
                base_sequence=0, is_transactional=True))
        return r.producer_id, r.producer_epoch

    async def end(self, pid, epoch, commit=True, txn_id="tx", settle=True):
        """EndTxn; with ``settle``, returns once its markers are written too (the answer
        comes at PREPARE_COMMIT/PREPARE_ABORT, the markers after it)."""
        r = await self.service.ask(EndTxnRequest(transactional_id=txn_id, producer_id=pid,
                                                 producer_epoch=epoch, committed=commit))
        if settle:
            await self.service.markers_settled()
        return r

    async def describe(self, txn_id="tx"):
        return (await self.service.ask(DescribeTransactionsRequest(transactional_ids=(txn_id,)))).transaction_states[0]


def markers_in(plog):
    out = []
    for seg in plog.segments:
        for b in seg.batches():
            if isinstance(b, RecordBatch) and b.is_control:
                c = control_record(b.records()[0])
                out.append((b.base_offset, c.type_name, b.producer_id, b.producer_epoch, c.coordinator_epoch))
    return out


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_commit_writes_markers_and_survives_a_restart(tmp_path):
    async def first():
        async with Node(tmp_path) as n:
            pid, epoch = await n.begin()
            t0 = n.logs.get_log("t", 0)
            assert (t0.last_stable_offset, t0.high_watermark) == (0, 1)
            assert (await n.end(pid, epoch)).error_code == E.NONE
            assert markers_in(t0) == [(1, "COMMIT", pid, epoch, 0)]
            assert markers_in(n.logs.get_log("t", 1)) == [(1, "COMMIT", pid, epoch, 0)]
            assert t0.last_stable_offset == 2
            assert [w for _, w in n.markers] == [[("t", 0), ("t", 1)]]
            d = await n.describe()
            assert (d.transaction_state, d.producer_id, d.producer_epoch) == ("CompleteCommit", pid, epoch)
            return pid, epoch

    pid, epoch = run(first())

    async def second():
        async with Node(tmp_path) as n:
            d = await n.describe()
            assert (d.transaction_state, d.producer_id, d.producer_epoch) == ("CompleteCommit", pid, epoch)
            again = await n.service.ask(InitProducerIdRequest(transactional_id="tx", transaction_timeout_ms=60_000,
                                                              producer_id=pid, producer_epoch=epoch))
            assert (again.error_code, again.producer_id, again.producer_epoch) == (E.NONE, pid, epoch + 1)
            # the records are ordinary __transaction_state batches that the dump decoder reads
            p = n.service.coordinator.partition_for("tx")
            plog = n.logs.get_log(TRANSACTION_STATE_TOPIC_NAME, p)
            states = [transaction_log_record(r)[1].value["data"]["transactionStatus"]
                      for seg in plog.segments for b in seg.batches() for r in b]
            assert states == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Empty"]
    run(second())


def test_end_txn_answers_at_prepare_commit_and_the_markers_follow(tmp_path):
    """As TransactionCoordinator.endTransaction: the answer once PrepareCommit is appended,
    the markers after it; meanwhile the transaction is PrepareCommit, the partitions' LSO
    holds and the producer's next AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS."""
    async def go():
        async with Node(tmp_path) as n:
            pid, epoch = await n.begin()
            t0 = n.logs.get_log("t", 0)
            assert (await n.end(pid, epoch, settle=False)).error_code == E.NONE
            assert (await n.describe()).transaction_state == "PrepareCommit"
            assert (markers_in(t0), t0.last_stable_offset) == ([], 0)
            again = await n.service.ask(AddPartitionsToTxnRequest(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, partitions=(("t", 0),)))
            assert again.error_code == E.CONCURRENT_TRANSACTIONS
            await n.service.markers_settled()
            assert (markers_in(t0), t0.last_stable_offset) == ([(1, "COMMIT", pid, epoch, 0)], 2)
            assert (await n.describe()).transaction_state == "CompleteCommit"
            again = await n.service.ask(AddPartitionsToTxnRequest(
                transactional_id="tx", producer_id=pid, producer_epoch=epoch, partitions=(("t", 0),)))
            assert again.error_code == E.NONE
    run(go())


def test_abort_indexes_the_transaction_for_read_committed(tmp_path):
    async def go():
        async with Node(tmp_path) as n:
            pid, epoch = await n.begin()
            assert (await n.end(pid, epoch, commit=False)).error_code == E.NONE
            t1 = n.logs.get_log("t", 1)
            assert markers_in(t1) == [(1, "ABORT", pid, epoch, 0)]
            assert t1.collect_aborted_transactions(0, t1.last_stable_offset) == [AbortedTxn(pid, 0, 1, 2)]
            assert (await n.describe()).transaction_state == "CompleteAbort"
    run(go())


def test_a_restart_mid_commit_finishes_the_markers(tmp_path):
    """The coordinator wrote PrepareCommit, the node died before the markers: on restart
    the markers are written and the transaction completes (TransactionStateManager.loadTransactions)."""
    async def first():
        async with Node(tmp_path) as n:
            pid, epoch = await n.begin()
            n.service.write_markers = lambda order: list(order.partitions)     # every write fails
            await n.end(pid, epoch)
            await asyncio.sleep(0.3)                                           # retried, failing again
            assert (await n.describe()).transaction_state == "PrepareCommit"
            assert markers_in(n.logs.get_log("t", 0)) == []
            return pid, epoch                                                  # the node dies

    pid, epoch = run(first())

    async def second():
        async with Node(tmp_path) as n:
            await n.service.markers_settled()       # ordered by the load, written on the loop's next turn
            assert (await n.describe()).transaction_state == "CompleteCommit"
            assert markers_in(n.logs.get_log("t", 0)) == [(1, "COMMIT", pid, epoch, 0)]
            assert n.logs.get_log("t", 0).last_stable_offset == 2
    run(second())


def test_timed_out_transaction_is_aborted_with_a_fenced_epoch(tmp_path):
    async def go():
        async with Node(tmp_path, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 50}) as n:
            pid, epoch = await n.begin(timeout=100)
            for _ in range(100):
                await asyncio.sleep(0.05)
                if (await n.describe()).transaction_state == "CompleteAbort":
                    break
            assert markers_in(n.logs.get_log("t", 0)) == [(1, "ABORT", pid, epoch + 1, 0)]
            assert (await n.end(pid, epoch)).error_code == E.PRODUCER_FENCED
            # the zombie's data is refused by the log too
            with pytest.raises(Exception) as e:
                n.logs.get_log("t", 0).append(build_record_batch(
                    [NewRecord(b"k", b"late")], producer_id=pid, producer_epoch=epoch, base_sequence=1,
                    is_transactional=True))
            assert e.value.error_code == E.INVALID_PRODUCER_EPOCH
    run(go())


def test_unreadable_records_are_skipped_at_start(tmp_path, caplog):
    async def first():
        async with Node(tmp_path) as n:
            pid, epoch = await n.begin()
            await n.end(pid, epoch)
            p = n.service.coordinator.partition_for("tx")
            plog = n.logs.get_log(TRANSACTION_STATE_TOPIC_NAME, p)
            plog.append(build_record_batch([NewRecord(transaction_log_key("tx"), b"\x00\x09garbage"),
                                            NewRecord(b"\x00", b"short key")]))
            return pid, epoch

    pid, epoch = run(first())

    async def second():
        async with Node(tmp_path) as n:
            d = await n.describe()
            assert (d.transaction_state, d.producer_epoch) == ("CompleteCommit", epoch)
    with caplog.at_level("WARNING", logger="kproto.server.transactions"):
        run(second())
    skipped = [r.getMessage() for r in caplog.records if "skipped an unreadable record" in r.getMessage()]
    assert len(skipped) == 2 and "offset 4" in skipped[0] and "offset 5" in skipped[1]
