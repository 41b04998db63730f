"""kproto dump-log on .index and .timeindex files.

The index files are made by hand with known entries against the v2 segment
of tests/tools/test_dump_log.py, whose batches sit at positions 0 (offsets 0-1),
94 (2), 164 (3, a COMMIT marker) and 242 (4-5). Expected lines and stderr
summaries are written from the entries with the format strings of Kafka's
core/src/main/scala/kafka/tools/DumpLogSegments.scala (trunk 1eb76443), cited
as DLS.scala:N.
"""

from __future__ import annotations

import os
import struct

import pytest

from tests.records.helpers import legacy_segment, v2_segment
from tests.tools.helpers import run_dump_log as run
from tests.tools.helpers import write_segment as write

BASE = "00000000000000000000"


def offset_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


def time_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries)


# Entry 2 says offset 4 but the batch at 164 ends at 3: a mismatch. Then the
# zero-filled tail of a preallocated index, where Kafka stops.
INDEX = offset_index((1, 0), (2, 94), (4, 164), (5, 242), (0, 0), (0, 0))


@pytest.fixture
def segment_dir(tmp_path):
    write(tmp_path, v2_segment())
    write(tmp_path, INDEX, f"{BASE}.index")
    return tmp_path


def test_index_dump_with_mismatch(segment_dir):
    path = segment_dir / f"{BASE}.index"
    code, out, err = run("--files", str(path))
    # DLS.scala:73 then one "offset: <base+rel> position: <pos>" per entry (DLS.scala:176),
    # stopping at the zero-filled tail (an entry after the first whose offset is the base).
    assert out == f"Dumping {path}\n" + "".join(
        f"offset: {rel} position: {pos}\n" for rel, pos in ((1, 0), (2, 94), (4, 164), (5, 242)))
    assert err == f"Mismatches in :{path}\n  Index offset: 4, log offset: 3\n"
    assert code == 0


def test_verify_index_only(segment_dir):
    path = segment_dir / f"{BASE}.index"
    code, out, err = run("--files", str(path), "--verify-index-only")
    assert out == f"Dumping {path}\n"
    assert err == f"Mismatches in :{path}\n  Index offset: 4, log offset: 3\n"
    assert code == 4


def test_mismatches_reverse_order_and_relative_path(segment_dir, monkeypatch):
    write(segment_dir, offset_index((0, 0), (3, 94), (4, 164)), f"{BASE}.index")
    monkeypatch.chdir(segment_dir)
    code, out, err = run("--files", f"./{BASE}.index")
    assert out.splitlines()[0] == f"Dumping ./{BASE}.index"     # the path as typed
    # getAbsolutePath keeps "./"; Scala prepends, so the last mismatch comes first.
    assert err == (f"Mismatches in :{os.getcwd()}/./{BASE}.index\n"
                   "  Index offset: 4, log offset: 3\n"
                   "  Index offset: 3, log offset: 2\n"
                   "  Index offset: 0, log offset: 1\n")


def test_index_with_base_offset(tmp_path):
    write(tmp_path, legacy_segment(), "00000000000000000010.log")
    path = write(tmp_path, offset_index((0, 0), (2, 72), (4, 100), (0, 0)), "00000000000000000010.index")
    code, out, err = run("--files", str(path))
    assert out == (f"Dumping {path}\noffset: 10 position: 0\noffset: 12 position: 72\n"
                   "offset: 14 position: 100\n")
    assert (code, err) == (0, "")


def test_empty_index(segment_dir):
    path = write(segment_dir, b"", f"{BASE}.index")
    code, out, err = run("--files", str(path))
    assert out == f"Dumping {path}\n{path} is empty.\n"
    assert (code, err) == (0, "")


def test_index_sanity_check(segment_dir):
    path = segment_dir / f"{BASE}.index"
    code, out, _ = run("--files", str(path), "--index-sanity-check")
    assert out == f"Dumping {path}\n{path} passed sanity check.\n" and code == 0
    write(segment_dir, INDEX + b"\x00\x00\x00\x01", f"{BASE}.index")
    code, out, err = run("--files", str(path), "--index-sanity-check")
    assert out == f"Dumping {path}\n"
    assert err == (f"kproto: error: {path}: Index file {path} is corrupt, found 52 bytes which is "
                   "neither positive nor a multiple of 8\n")
    assert code == 4


def test_index_entry_pointing_nowhere(segment_dir):
    path = write(segment_dir, offset_index((1, 0), (5, 9999)), f"{BASE}.index")
    code, out, err = run("--files", str(path))
    assert out.splitlines()[1:] == ["offset: 1 position: 0", "offset: 5 position: 9999"]
    assert err == (f"kproto: error: {path} @ byte 8: entries[1]: no complete batch at log position "
                   "9999 within --max-message-size 5242880\n")
    assert code == 4


def test_missing_log_for_index(tmp_path):
    path = write(tmp_path, INDEX, f"{BASE}.index")
    code, out, err = run("--files", str(path))
    assert out == f"Dumping {path}\n"
    assert err.startswith("kproto: error: ") and f"{BASE}.log" in err and code == 1


# --- .timeindex --------------------------------------------------------------------------------

TIMEINDEX = time_index(
    (1700000000123, 1),      # batch 0 ends at 1, max timestamp ...123: fine
    (1700000000150, 2),      # fine
    (1700000000140, 3),      # the marker batch's timestamp is ...200: mismatch; and below ...150
    (1700000000250, 4),      # no batch ends at 4: the next one ends at 5
    (1700000000301, 5),      # fine
    (1700000000400, 7),      # beyond the log: "found log offset: -1"
    (0, 0),                  # zero-filled tail: stop
)


def test_time_index_dump(segment_dir):
    path = write(segment_dir, TIMEINDEX, f"{BASE}.timeindex")
    code, out, err = run("--files", str(path))
    # DLS.scala:230 per entry, up to the zero-filled tail.
    assert out == f"Dumping {path}\n" + "".join(
        f"timestamp: {ts} offset: {rel}\n" for ts, rel in struct.iter_unpack(">qi", TIMEINDEX[:-12]))
    # DLS.scala:398-415. The marker batch (offset 3) has max timestamp ...200 in the segment.
    marker_max_ts, = struct.unpack_from(">q", v2_segment(), 164 + 35)
    assert err == (
        f"Found timestamp mismatch in :{path}\n"
        f"  Index timestamp: 1700000000140, log timestamp: {marker_max_ts}\n"
        f"Found out of order timestamp in :{path}\n"
        "  Index timestamp: 1700000000140, Previously indexed timestamp: 1700000000150\n"
        "The following indexed offsets are not found in the log.\n"
        "Indexed offset: 4, found log offset: 5\n"
        "Indexed offset: 7, found log offset: -1\n")
    assert code == 0


def test_time_index_sanity(segment_dir):
    path = write(segment_dir, TIMEINDEX, f"{BASE}.timeindex")
    code, out, err = run("--files", str(path), "--index-sanity-check")
    # The untrimmed zero entry is the last entry: timestamp 0 < the first.
    assert out == f"Dumping {path}\n"
    assert err == (f"kproto: error: {path} @ byte 72: Corrupt time index found, time index file ({path}) "
                   "has non-zero size but the last timestamp is 0 which is less than the first "
                   "timestamp 1700000000123\n")
    assert code == 4
    write(segment_dir, TIMEINDEX[:-12], f"{BASE}.timeindex")
    code, out, err = run("--files", str(path), "--index-sanity-check")
    assert (code, out, err) == (0, f"Dumping {path}\n{path} passed sanity check.\n", "")


def test_time_index_json(segment_dir):
    import json
    path = write(segment_dir, TIMEINDEX, f"{BASE}.timeindex")
    _, out, _ = run("--files", str(path), "--json", "--verify-index-only")
    assert [json.loads(l) for l in out.splitlines()] == [{"file": str(path)}]
    _, out, _ = run("--files", str(path), "--json")
    objs = [json.loads(l) for l in out.splitlines()]
    assert objs[1] == {"timestamp": 1700000000123, "offset": 1} and len(objs) == 7
