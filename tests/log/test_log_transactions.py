"""The log's transaction side: producer state, the last stable offset, ``.txnindex`` and
``.snapshot`` files in Kafka's byte layout, and how a restart uses them.

Rules cited from Kafka trunk 1eb76443: ProducerStateManager.java, ProducerAppendInfo.java,
TransactionIndex.java, AbortedTxn.java, UnifiedLog.scala (roll takes a snapshot,
collectAbortedTransactions), LogLoader.scala, and UnifiedLogTest.scala's
testLastStableOffset* / testAbortedTransactionSpanningMultipleSegments cases.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from kproto.errors import ErrorCode
from kproto.log import AppendOrigin, LogConfig, UnifiedLog
from kproto.log.index import CorruptIndexError
from kproto.log.producer_state import (
    CorruptSnapshotError, ProducerStateManager, read_snapshot, snapshot_path,
)
from kproto.log.segment import LogSegment
from kproto.log.txn_index import AbortedTxn, TransactionIndex, parse_txn_index
from kproto.records import NewRecord, build_control_batch, build_record_batch
from tests.helpers import Clock

ABORT, COMMIT = 0, 1


def data(pid: int, epoch: int = 0, seq: int = 0, n: int = 1, txn: bool = True, ts: int = 5_000) -> bytes:
    return build_record_batch([NewRecord(b"k", b"v" * 10, (), ts)] * n, producer_id=pid, producer_epoch=epoch,
                              base_sequence=seq, is_transactional=txn)


def marker(pid: int, kind: int, epoch: int = 0, coordinator_epoch: int = 0) -> bytes:
    return build_control_batch(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch,
                               timestamp=6_000)


def write_marker(log: UnifiedLog, pid: int, kind: int, **kw) -> int:
    return log.append(marker(pid, kind, **kw), origin=AppendOrigin.COORDINATOR).first_offset


def open_log(tmp_path: Path, **props) -> UnifiedLog:
    config = LogConfig.from_props({k.replace("_", "."): str(v) for k, v in props.items()})
    return UnifiedLog.open(tmp_path / "t-0", config, clock=Clock())


def reopen(log: UnifiedLog, **kw) -> UnifiedLog:
    log.close()
    return UnifiedLog.open(log.dir, log.config, clock=Clock(), **kw)


# --- last stable offset and the aborted-transaction index -------------------------------------

def test_lso_waits_for_the_oldest_open_transaction(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7, n=2))                       # 0-1, txn of 7
    log.append(data(9, txn=False))                 # 2, idempotent, not in a transaction
    log.append(data(8))                            # 3, txn of 8
    assert (log.last_stable_offset, log.high_watermark) == (0, 4)
    write_marker(log, 7, ABORT)                    # 4
    assert log.last_stable_offset == 3             # 8 still open
    write_marker(log, 8, COMMIT)                   # 5
    assert log.last_stable_offset == log.high_watermark == 6
    # one entry per aborted transaction, LSO = what it became once the abort was written
    path = log.dir / "00000000000000000000.txnindex"
    assert path.read_bytes() == struct.pack(">hqqqq", 0, 7, 0, 4, 3)
    assert log.collect_aborted_transactions(0, 6) == [AbortedTxn(7, 0, 4, 3)]
    assert log.collect_aborted_transactions(5, 6) == []           # ended before the fetch offset


def test_lso_never_below_the_log_start_offset(tmp_path):
    """DeleteRecords past an open transaction's first offset: the LSO follows the
    log start (UnifiedLog.maybeIncrementFirstUnstableOffset), so read_committed
    fetches from the start are not stuck below it."""
    log = open_log(tmp_path)
    log.append(data(7))                            # 0, txn of 7, open
    log.append(data(9, txn=False, n=2))            # 1-2
    assert log.last_stable_offset == 0
    assert log.maybe_increment_log_start_offset(2)
    assert (log.last_stable_offset, log.high_watermark) == (2, 3)
    write_marker(log, 7, COMMIT)                   # 3
    assert log.last_stable_offset == log.high_watermark == 4


def test_no_txnindex_file_until_an_abort(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7))
    write_marker(log, 7, COMMIT)
    assert not list(log.dir.glob("*.txnindex"))
    assert log.collect_aborted_transactions(0, 2) == []


def test_aborted_transaction_spanning_segments(tmp_path):
    """The entry lives with the segment that holds the ABORT marker; the search starts
    at the fetch offset's segment and stops at the first entry whose LSO reaches the bound."""
    log = open_log(tmp_path, segment_bytes=200)
    log.append(data(7))                            # 0, segment 0
    log.append(data(9, txn=False))                 # 1
    log.append(data(9, seq=1, txn=False))          # 2 -> rolls
    m = write_marker(log, 7, ABORT)
    seg = log.segments[-1]
    assert len(log.segments) >= 2 and seg.base_offset <= m
    assert seg.txn_index.entries == (AbortedTxn(7, 0, m, m + 1),)
    assert log.segments[0].txn_index.entries == ()
    assert log.collect_aborted_transactions(0, log.log_end_offset) == [AbortedTxn(7, 0, m, m + 1)]
    log.append(data(8))
    write_marker(log, 8, ABORT)
    both = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [t.producer_id for t in both] == [7, 8]
    # an upper bound the first entry's LSO already reaches: the search is complete there
    found = seg.txn_index.collect_aborted_txns(0, m + 1)
    assert found.is_complete and [t.producer_id for t in found.aborted] == [7]


def test_producer_state_rules_before_the_append(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7, epoch=2))
    with pytest.raises(Exception) as e:                            # data outside the open transaction
        log.append(data(7, epoch=2, seq=1, txn=False))
    assert e.value.error_code == ErrorCode.INVALID_TXN_STATE
    write_marker(log, 7, COMMIT, epoch=2, coordinator_epoch=5)
    with pytest.raises(Exception) as e:                            # a marker from a deposed coordinator
        write_marker(log, 7, ABORT, epoch=2, coordinator_epoch=4)
    assert e.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    with pytest.raises(Exception) as e:                            # a zombie's data
        log.append(data(7, epoch=1, seq=0))
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    # a fencing abort bumps the epoch: the old epoch's batches are forgotten
    log.append(data(7, epoch=2, seq=1))
    write_marker(log, 7, ABORT, epoch=3, coordinator_epoch=5)
    assert log.producer_state.producers[7].producer_epoch == 3
    assert log.producer_state.check(7, 4, 0, 0) is None            # a new epoch starts at sequence 0
    assert log.log_end_offset == 4


def test_truncation_reopens_the_transaction(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7))
    write_marker(log, 7, ABORT)
    assert log.last_stable_offset == 2
    log.truncate_to(1)
    assert log.last_stable_offset == 0
    assert log.segments[0].txn_index.entries == ()
    assert (log.dir / "00000000000000000000.txnindex").read_bytes() == b""


# --- producer snapshots -----------------------------------------------------------------

def test_snapshot_has_kafkas_layout(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7, epoch=1, seq=3, n=2, ts=4_000))            # 0-1, open
    log.append(data(9, txn=False, ts=4_500))                      # 2
    log.append(data(11, epoch=0))                                 # 3
    write_marker(log, 11, COMMIT, coordinator_epoch=2)            # 4
    log.roll()
    raw = snapshot_path(log.dir, 5).read_bytes()
    entries = (struct.pack(">qhiqiqiq", 7, 1, 4, 1, 1, 4_000, -1, 0)
               + struct.pack(">qhiqiqiq", 9, 0, 0, 2, 0, 4_500, -1, -1)
               + struct.pack(">qhiqiqiq", 11, 0, 0, 3, 0, 6_000, 2, -1))
    body = struct.pack(">i", 3) + entries
    assert raw == struct.pack(">hI", 1, crc32c(body)) + body
    [e7, e9, e11] = read_snapshot(raw)
    assert (e7.current_txn_first_offset, e7.batches[-1].first_seq, e7.batches[-1].first_offset) == (0, 3, 0)
    assert (e11.coordinator_epoch, e11.last_timestamp, e11.current_txn_first_offset) == (2, 6_000, None)


def test_snapshot_errors_are_kafkas():
    good = ProducerStateManager().snapshot_bytes()
    with pytest.raises(CorruptSnapshotError, match="Snapshot contained an unknown file version 2"):
        read_snapshot(b"\x00\x02" + good[2:])
    bad_crc = good[:2] + b"\x00\x00\x00\x01" + good[6:]
    with pytest.raises(CorruptSnapshotError, match=r"Snapshot is corrupt \(CRC is no longer valid\). "
                                                   rf"Stored crc: 1. Computed crc: {crc32c(good[6:])}"):
        read_snapshot(bad_crc, "x.snapshot")
    with pytest.raises(CorruptSnapshotError, match="x.snapshot @ byte 6: Snapshot failed schema validation"):
        read_snapshot(good[:6] + struct.pack(">i", 2), "x.snapshot")


def test_restart_starts_from_the_snapshot(tmp_path, monkeypatch):
    log = open_log(tmp_path, segment_bytes=200)
    for seq in range(6):
        log.append(data(9, seq=seq, txn=False))
    log.append(data(7))
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    end = log.log_end_offset
    read = []
    original = LogSegment.batches
    monkeypatch.setattr(LogSegment, "batches", lambda self, *a, **k: read.append(self.base_offset)
                        or original(self, *a, **k))
    log = reopen(log)
    assert read == []                                             # clean close: the snapshot at the end
    assert log.last_stable_offset == end - 1
    assert log.producer_state.check(9, 0, 5, 5).first_offset == 5  # its last batch, from the snapshot
    # without the close-time snapshot, only the segment after the newest roll snapshot is read
    log.close()
    snapshot_path(log.dir, end).unlink()
    log = UnifiedLog.open(log.dir, log.config, clock=Clock())
    assert set(read) == {bases[-1]}
    assert log.last_stable_offset == end - 1


def test_unreadable_snapshot_is_skipped_and_the_log_replayed(tmp_path, caplog):
    log = open_log(tmp_path)
    log.append(data(7))
    log.append(data(8, txn=False))
    log = reopen(log)
    path = snapshot_path(log.dir, 2)
    log.close()
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="kproto.log"):
        log = UnifiedLog.open(log.dir, log.config, clock=Clock())
    assert "Snapshot is corrupt (CRC is no longer valid)" in caplog.text
    assert log.last_stable_offset == 0 and set(log.producer_state.producers) == {7, 8}


def test_unclean_shutdown_rebuilds_the_txnindex(tmp_path):
    log = open_log(tmp_path)
    log.append(data(7, n=2))
    log.append(data(8))
    write_marker(log, 7, ABORT)
    write_marker(log, 8, ABORT)
    expected = (log.dir / "00000000000000000000.txnindex").read_bytes()
    assert len(expected) == 68
    log.close()
    for p in log.dir.glob("*.snapshot"):
        p.unlink()
    (log.dir / "00000000000000000000.txnindex").write_bytes(b"\x01" + expected[1:])   # version 1 in byte 0
    log = UnifiedLog.open(log.dir, log.config, clock=Clock(), had_clean_shutdown=False, recovery_point=0)
    assert (log.dir / "00000000000000000000.txnindex").read_bytes() == expected
    assert log.last_stable_offset == log.log_end_offset


# --- the index file alone ---------------------------------------------------------------

def test_txnindex_file_rules(tmp_path):
    index = TransactionIndex(tmp_path / "00000000000000000010.txnindex", 10)
    index.append(AbortedTxn(1, 3, 12, 13))
    with pytest.raises(ValueError, match="must increase sequentially, but 12 is not greater than current"):
        index.append(AbortedTxn(2, 5, 12, 13))
    index.append(AbortedTxn(2, 11, 15, 16))
    raw = (tmp_path / "00000000000000000010.txnindex").read_bytes()
    assert parse_txn_index(raw + b"\x00" * 33) == [AbortedTxn(1, 3, 12, 13), AbortedTxn(2, 11, 15, 16)]
    with pytest.raises(Exception, match=r"f @ byte 34: Unexpected aborted transaction version 1"):
        parse_txn_index(raw[:34] + b"\x01" + raw[35:], "f")
    low = TransactionIndex(tmp_path / "00000000000000000020.txnindex", 20)
    low.append(AbortedTxn(1, 3, 12, 13))
    with pytest.raises(CorruptIndexError, match="is less than start offset 20"):
        low.sanity_check()
    index.truncate_to(15)
    assert index.entries == (AbortedTxn(1, 3, 12, 13),) and len(index.path.read_bytes()) == 34
