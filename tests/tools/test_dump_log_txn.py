"""kproto dump-log on .txnindex and .snapshot files, against the lines of
DumpLogSegments.dumpTxnIndex / dumpProducerIdSnapshot (Scala, 3.5-3.9):

    version: 0 producerId: P firstOffset: F lastOffset: L lastStableOffset: LSO
    producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset: OptionalLong.empty lastTimestamp: T firstSequence: F lastSequence: L lastOffset: O offsetDelta: D timestamp: T

(the producer line ends in a space when the producer has no batch). The files
are written by kproto's log from real transactional batches and markers.
"""

from __future__ import annotations

import json
import struct

from kproto.log import AppendOrigin, LogConfig, UnifiedLog
from kproto.records import NewRecord, build_control_batch, build_record_batch
from tests.helpers import Clock
from tests.tools.helpers import run_dump_log as run


def make_log(tmp_path):
    log = UnifiedLog.open(tmp_path / "t-0", LogConfig(), clock=Clock())
    log.append(build_record_batch([NewRecord(b"k", b"v", (), 1_000)] * 2, producer_id=7, producer_epoch=1,
                                  base_sequence=0, is_transactional=True))                  # 0-1
    log.append(build_record_batch([NewRecord(b"k", b"v", (), 1_500)], producer_id=8, producer_epoch=0,
                                  base_sequence=5, is_transactional=True))                  # 2
    log.append(build_control_batch(0, producer_id=7, producer_epoch=1, coordinator_epoch=3, timestamp=2_000),
               origin=AppendOrigin.COORDINATOR)                                             # 3: ABORT
    log.append(build_control_batch(0, producer_id=8, producer_epoch=0, coordinator_epoch=3, timestamp=2_100),
               origin=AppendOrigin.COORDINATOR)                                             # 4: ABORT
    log.append(build_record_batch([NewRecord(b"k", b"v", (), 2_500)], producer_id=9, producer_epoch=0,
                                  base_sequence=0, is_transactional=True))                  # 5, open
    log.close()                                      # the snapshot at the log end, 6
    return log.dir


def test_txnindex_lines(tmp_path):
    d = make_log(tmp_path)
    path = d / "00000000000000000000.txnindex"
    code, out, err = run("--files", str(path))
    assert (code, err) == (0, "")
    assert out == (f"Dumping {path}\n"
                   "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 2\n"
                   "version: 0 producerId: 8 firstOffset: 2 lastOffset: 4 lastStableOffset: 5\n")


def test_snapshot_lines(tmp_path):
    d = make_log(tmp_path)
    path = d / "00000000000000000006.snapshot"
    code, out, err = run("--files", str(path))
    assert (code, err) == (0, "")
    assert out == (
        f"Dumping {path}\n"
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 2000 firstSequence: 0 lastSequence: 1 lastOffset: 1 offsetDelta: 1 timestamp: 2000\n"
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 2100 firstSequence: 5 lastSequence: 5 lastOffset: 2 offsetDelta: 0 timestamp: 2100\n"
        "producerId: 9 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[5] "
        "lastTimestamp: 2500 firstSequence: 0 lastSequence: 0 lastOffset: 5 offsetDelta: 0 timestamp: 2500\n")
    code, out, _ = run("--json", "--files", str(path))
    first = json.loads(out.splitlines()[0])
    assert first["producerId"] == 7 and first["currentTxnFirstOffset"] is None


def test_producer_without_a_batch_ends_in_a_space(tmp_path):
    entry = struct.pack(">qhiqiqiq", 42, 3, -1, -1, 0, 77, 2, -1)
    body = struct.pack(">i", 1) + entry
    from crc32c import crc32c
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    code, out, _ = run("--files", str(path))
    assert out.splitlines()[1] == ("producerId: 42 producerEpoch: 3 coordinatorEpoch: 2 "
                                   "currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 77 ")


def test_corrupt_files_are_one_line_each(tmp_path):
    d = make_log(tmp_path)
    snap = d / "00000000000000000006.snapshot"
    raw = bytearray(snap.read_bytes())
    raw[-1] ^= 1
    snap.write_bytes(bytes(raw))
    index = d / "00000000000000000000.txnindex"
    index.write_bytes(index.read_bytes()[:34] + b"\x01" + index.read_bytes()[35:])
    code, out, err = run("--files", f"{snap},{index}")
    lines = err.splitlines()
    assert len(lines) == 2 and code == 4
    assert lines[0].startswith(f"kproto: error: {snap} @ byte 2: Snapshot is corrupt (CRC is no longer valid). "
                               "Stored crc: ")
    assert lines[1] == (f"kproto: error: {index} @ byte 34: Unexpected aborted transaction version 1 in "
                        "transaction index, current version is 0")
    # everything readable before the bad entry is printed
    assert out.splitlines()[-1] == "version: 0 producerId: 7 firstOffset: 0 lastOffset: 3 lastStableOffset: 2"
