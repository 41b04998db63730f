"""Loading and recovery: cut segments, garbage tails, corrupt batches, leftovers.

The reference log is 6 batches of mixed shapes in one segment, written with
``index.interval.bytes=100``; every test restores its bytes, damages them,
reopens after an "unclean shutdown" and checks the log ends at the last whole
valid batch with indexes equal to the ones the appends wrote for that prefix.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from kproto.log import LogConfig, LogManager, UnifiedLog
from kproto.log.checkpoint import (
    CorruptCheckpointError, parse_offset_checkpoint, read_offset_checkpoint,
)
from kproto.records import CompressionType, NewRecord, build_message_set, build_record_batch, iter_batches
from tests.helpers import Clock
from tests.log.helpers import index_entries, one_batch, time_entries
from tests.tools.helpers import run_dump_log as run

SEG = "00000000000000000000"
CONFIG = LogConfig.from_props({"index.interval.bytes": "100", "segment.index.bytes": "120"})


def append_reference_batches(log: UnifiedLog) -> None:
    """Offsets 0-8 in six batches; the v1 message at offset 6 kept as such (a
    replica's append keeps it: logs written before Kafka 3 hold them, which
    a leader's append now converts to v2)."""
    for b in [one_batch(0),
              build_record_batch([NewRecord(b"a%d" % i, b"x" * 30, (), 2000 + i) for i in range(3)]),
              build_record_batch([NewRecord(b"z", b"y" * 200, (), 1500)] * 2,
                                 compression=CompressionType.GZIP)]:
        log.append(b)
    log.append(build_message_set([NewRecord(b"m", b"legacy", (), 2500)], magic=1, base_offset=6),
               assign_offsets=False)
    log.append(one_batch(4, ts=2600))
    log.append(build_record_batch([NewRecord(b"last", b"q" * 10, (), 2400)]))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("ref") / "t-0"
    log = UnifiedLog.open(d, CONFIG, clock=Clock())
    append_reference_batches(log)
    log.close()
    data = (d / f"{SEG}.log").read_bytes()
    batches = list(iter_batches(data))
    return {"dir": d, "data": data, "bounds": [(b.position, b.size, b.next_offset) for b in batches],
            "index": (d / f"{SEG}.index").read_bytes(), "timeindex": (d / f"{SEG}.timeindex").read_bytes()}


def expected_indexes(data: bytes, end: int) -> tuple[list, list]:
    """The entries appends write for the batches in data[:end] (interval 100),
    plus the final time index entry a close or recovery writes."""
    index, times, since, max_ts = [], [], 0, (-1, 0)
    for b in iter_batches(data[:end]):
        if b.max_timestamp > max_ts[0]:
            max_ts = (b.max_timestamp, b.last_offset)
        if since > 100:
            index.append((b.last_offset, b.position))
            if not times or max_ts[0] > times[-1][0]:
                times.append(max_ts)
            since = 0
        since += b.size
    if max_ts[0] > (times[-1][0] if times else -1):
        times.append(max_ts)
    return index, times


def restore(reference: dict, tmp_path: Path) -> Path:
    d = tmp_path / "t-0"
    shutil.copytree(reference["dir"], d)
    return d


def reopen(d: Path, **kw) -> UnifiedLog:
    return UnifiedLog.open(d, CONFIG, had_clean_shutdown=False, clock=Clock(), **kw)


def test_reference_indexes_by_hand(reference):
    # Offsets 0, 1-3, 4-5 (gzip), 6 (v1), 7, 8; max timestamps 1000, 2002, 1500, 2500, 2600, 2400.
    assert [(p, s, n) for p, s, n in reference["bounds"]] == [
        (0, 90, 1), (90, 178, 4), (268, 102, 6), (370, 41, 7), (411, 90, 8), (501, 82, 9)]
    # Bytes since the last entry before each batch: 0, 90, 268*, 102*, 41, 131*: entries
    # (last offset, position) at batches 2, 3, 5, each with the largest timestamp so far.
    assert reference["index"] == struct.pack(">iiiiii", 5, 268, 6, 370, 8, 501)
    assert reference["timeindex"] == struct.pack(">qiqiqi", 2002, 3, 2500, 6, 2600, 7)
    assert expected_indexes(reference["data"], len(reference["data"])) == (
        [(5, 268), (6, 370), (8, 501)], [(2002, 3), (2500, 6), (2600, 7)])


def _cut_points() -> list[int]:
    sizes = [90, 178, 102, 41, 90, 82]
    bounds = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    inside = [b + d for b in bounds[:-1] for d in (1, 11, 16, 60)]
    return sorted(set(bounds + inside + [bounds[-1] - 1]))


@pytest.mark.parametrize("cut", _cut_points())
def test_recovery_after_cut(reference, tmp_path, cut):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "r+b") as f:
        f.truncate(cut)
    log = reopen(d)
    whole = [(p, s, n) for p, s, n in reference["bounds"] if p + s <= cut]
    end = whole[-1][0] + whole[-1][1] if whole else 0
    assert log.log_end_offset == (whole[-1][2] if whole else 0)
    assert (d / f"{SEG}.log").read_bytes() == reference["data"][:end]
    assert log.truncations == ([] if end == cut else [(str(d / f"{SEG}.log"), end, log.truncations[0][2])])
    log.close()
    index, times = expected_indexes(reference["data"], end)
    assert [(o, p) for o, p in index_entries(d / f"{SEG}.index")] == index
    assert time_entries(d / f"{SEG}.timeindex") == times
    # The log goes on from there.
    log = reopen(d)
    assert log.append(one_batch(9))[0] == log.log_end_offset - 1 == (whole[-1][2] if whole else 0)


@pytest.mark.parametrize("garbage, at, reason", [
    (b"\x00" * 50, 0, "batch_length: Found record size 0 smaller than minimum record overhead (14)"),
    (random.Random(7).randbytes(300), 16, "magic: unknown magic 80"),
    (struct.pack(">qi", 9, 2**30) + b"\x02" * 40, 0, "incomplete batch: 52 bytes left in the file"),
])
def test_recovery_drops_garbage_tail(reference, tmp_path, garbage, at, reason):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "ab") as f:
        f.write(garbage)
    log = reopen(d)
    assert log.log_end_offset == 9
    assert (d / f"{SEG}.log").read_bytes() == reference["data"]
    [(path, position, message)] = log.truncations
    assert position == len(reference["data"])
    assert message == f"{d / SEG}.log @ byte {len(reference['data']) + at}: {reason}"
    log.close()
    assert (d / f"{SEG}.index").read_bytes() == reference["index"]
    assert (d / f"{SEG}.timeindex").read_bytes() == reference["timeindex"]


def test_recovery_truncates_at_a_corrupt_batch_in_the_middle(reference, tmp_path):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "r+b") as f:
        f.seek(90 + 100)                 # inside batch 1's records: its CRC fails
        f.write(b"!")
    log = reopen(d)
    assert log.log_end_offset == 1 and (d / f"{SEG}.log").stat().st_size == 90
    [(_, at, message)] = log.truncations
    assert at == 90 and message.startswith(f"{d / SEG}.log @ byte 107: crc: crc mismatch (stored ")


def test_recovery_rejects_offsets_going_backwards(reference, tmp_path):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "ab") as f:
        f.write(reference["data"][:90])  # batch 0 again: offset 0 after offset 9
    log = reopen(d)
    assert log.log_end_offset == 9 and log.truncations[0][1] == len(reference["data"])
    assert "out of order" in log.truncations[0][2]


def test_clean_shutdown_skips_recovery(reference, tmp_path):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "r+b") as f:
        f.seek(190)
        f.write(b"!")                    # a bad CRC: only a recovery would see it
    log = UnifiedLog.open(d, CONFIG, had_clean_shutdown=True, clock=Clock())
    assert log.truncations == [] and log.active_segment.size == len(reference["data"])
    assert log.recovery_point == log.log_end_offset == 9


def test_bad_tail_after_clean_shutdown_is_recovered(reference, tmp_path):
    d = restore(reference, tmp_path)
    with open(d / f"{SEG}.log", "ab") as f:
        f.write(b"\x00" * 50)
    log = UnifiedLog.open(d, CONFIG, had_clean_shutdown=True, clock=Clock())
    assert [t[1] for t in log.truncations] == [len(reference["data"])]
    assert log.log_end_offset == 9 and log.active_segment.size == len(reference["data"])


def test_missing_index_is_rebuilt_even_after_clean_shutdown(reference, tmp_path):
    d = restore(reference, tmp_path)
    (d / f"{SEG}.index").unlink()
    log = UnifiedLog.open(d, CONFIG, had_clean_shutdown=True, clock=Clock())
    log.close()
    assert (d / f"{SEG}.index").read_bytes() == reference["index"]


def test_crash_with_untrimmed_indexes(tmp_path):
    d = tmp_path / "t-0"
    log = UnifiedLog.open(d, CONFIG, clock=Clock())
    append_reference_batches(log)
    # No close: the active indexes stay preallocated (120 bytes), zero-filled.
    assert os.path.getsize(d / f"{SEG}.index") == 120
    recovered = reopen(d)
    assert recovered.log_end_offset == 9 and recovered.recovery_point == 0
    assert recovered.active_segment.offset_index.entry_bytes() == (
        struct.pack(">iiiiii", 5, 268, 6, 370, 8, 501))
    assert os.path.getsize(d / f"{SEG}.index") == 120     # active again: preallocated


def _three_segments(tmp_path: Path) -> Path:
    d = tmp_path / "t-0"
    log = UnifiedLog.open(d, LogConfig.from_props({"segment.bytes": "180"}), clock=Clock())
    for i in range(6):
        log.append(one_batch(i))
    log.close()
    assert sorted(p.name for p in d.glob("*.log")) == [f"{b:020d}.log" for b in (0, 2, 4)]
    return d


def test_corruption_deletes_later_segments(tmp_path):
    d = _three_segments(tmp_path)
    with open(d / f"{2:020d}.log", "r+b") as f:
        f.truncate(120)                  # batch 3 cut in half
    log = UnifiedLog.open(d, LogConfig.from_props({"segment.bytes": "180"}), had_clean_shutdown=False,
                          clock=Clock(), recovery_point=2)
    assert log.log_end_offset == 3 and [s.base_offset for s in log.segments] == [0, 2]
    assert sorted(p.name for p in d.iterdir() if p.suffix != ".snapshot") == [
        f"{b:020d}{s}" for b in (0, 2) for s in (".index", ".log", ".timeindex")]
    # the producer snapshots past the new log end went with the data (ProducerStateManager.truncateAndReload)
    assert sorted(p.name for p in d.glob("*.snapshot")) == [f"{2:020d}.snapshot"]


def test_recovery_starts_at_the_recovery_point(tmp_path):
    d = _three_segments(tmp_path)
    with open(d / f"{0:020d}.log", "r+b") as f:
        f.seek(80)
        f.write(b"!")                    # corrupt, but below the recovery point
    log = UnifiedLog.open(d, LogConfig(), had_clean_shutdown=False, recovery_point=4, clock=Clock())
    assert log.truncations == [] and log.log_end_offset == 6
    assert (d / f"{0:020d}.log").stat().st_size == 180


def test_leftover_files_are_cleaned_and_swaps_completed(tmp_path):
    d = _three_segments(tmp_path)
    swapped = one_batch(0, base_offset=2)
    (d / f"{2:020d}.log.swap").write_bytes(swapped)
    (d / f"{2:020d}.index.swap").write_bytes(b"")
    (d / f"{2:020d}.timeindex.swap").write_bytes(b"")
    (d / f"{4:020d}.log.cleaned").write_bytes(b"junk")
    (d / f"{6:020d}.log.deleted").write_bytes(b"junk")
    (d / f"{9:020d}.index").write_bytes(b"")          # orphaned
    log = UnifiedLog.open(d, LogConfig(), clock=Clock())
    assert sorted(p.name for p in d.iterdir() if p.suffix != ".snapshot") == [
        f"{b:020d}{s}" for b in (0, 2, 4) for s in (".index", ".log", ".timeindex")]
    assert (d / f"{2:020d}.log").read_bytes() == swapped
    assert log.log_end_offset == 6


def test_log_start_offset_beyond_the_log_end_empties_the_log(tmp_path):
    d = _three_segments(tmp_path)
    log = UnifiedLog.open(d, LogConfig(), log_start_offset=20, clock=Clock())
    assert log.log_start_offset == log.log_end_offset == 20
    assert [s.base_offset for s in log.segments] == [20]


# --- checkpoint files ----------------------------------------------------------------------

def test_checkpoint_parse_errors():
    assert parse_offset_checkpoint("0\n2\nt 0 5\nother.topic 3 7\n") == {("t", 0): 5, ("other.topic", 3): 7}
    assert parse_offset_checkpoint("") == {}
    with pytest.raises(CorruptCheckpointError, match="Unrecognised version:1, expected version: 0"):
        parse_offset_checkpoint("1\n0\n", "f")
    with pytest.raises(CorruptCheckpointError, match=r"f @ byte 4: Malformed line in checkpoint file \[f\]: t x 5"):
        parse_offset_checkpoint("0\n1\nt x 5\n", "f")
    with pytest.raises(CorruptCheckpointError, match=r"Expected \[2\] entries in checkpoint file \[f\], but found only \[1\]"):
        parse_offset_checkpoint("0\n2\nt 0 5\n", "f")


def test_manager_recovers_only_after_an_unclean_stop(tmp_path):
    data = tmp_path / "data"
    mgr = LogManager(data, clock=Clock(), cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
    log = mgr.create_topic("t", 1)[0]
    for i in range(3):
        log.append(one_batch(i))
    mgr.close()
    assert (data / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":-1}'
    assert (data / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 3\n"
    assert (data / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    seg = data / "t-0" / f"{SEG}.log"
    with open(seg, "r+b") as f:
        f.seek(150)
        f.write(b"!")                                # batch 1's CRC no longer matches
    mgr = LogManager(data, clock=Clock())            # clean: trusted as is
    assert mgr.had_clean_shutdown and not (data / ".kafka_cleanshutdown").exists()
    assert seg.stat().st_size == 270 and mgr.get_log("t", 0).log_end_offset == 3
    # A crash now (no close): the next open recovers from the checkpointed point (0).
    mgr2 = LogManager(data, clock=Clock())
    assert not mgr2.had_clean_shutdown
    log = mgr2.get_log("t", 0)
    assert seg.stat().st_size == 90 and log.log_end_offset == 1
    assert [t[1] for t in log.truncations] == [90]
    mgr2.close()
    assert read_offset_checkpoint(data / "recovery-point-offset-checkpoint") == {("t", 0): 1}


def test_dump_log_verifies_the_indexes_written(reference):
    """kproto dump-log (DumpLogSegments) cross-checks index entries against the log."""
    for suffix in (".index", ".timeindex"):
        code, out, err = run("--files", str(reference["dir"] / f"{SEG}{suffix}"), "--verify-index-only")
        assert (code, err) == (0, "")
