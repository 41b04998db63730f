"""kproto dump-log on .log segments: Kafka's text and JSON, corruption, --explain.

Segments are built from kafka-python's own record builders (third-party
bytes: DefaultRecordBatchBuilder, LegacyRecordBatchBuilder; the two gzip
batches are kept as the bytes those builders produced); the base offset and
partition leader epoch, which a broker stamps and which lie outside the CRC,
are patched in as a broker would. The expected text is built by
tests/tools/kafka_lines.py: every field read from the raw bytes with ``struct``
(independently of kproto) and laid out with the format strings of Kafka's
DumpLogSegments.scala, cited there line by line. The scenarios of Kafka's own
DumpLogSegmentsTest are in tests/parity/test_kafka_parity_dump_log.py.
"""

from __future__ import annotations

import json
import re
import struct

import crc32c
import pytest

from tests.records.helpers import legacy_segment, v2_batch, v2_segment
from tests.tools.helpers import SEGMENT
from tests.tools.helpers import run_dump_log as run
from tests.tools.helpers import write_segment as write
from tests.tools.kafka_lines import dump_lines

# --- Kafka's text, re-derived from the bytes (tests/tools/kafka_lines.py) ---------------------------

def test_v2_shallow(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, err = run("--files", str(path))
    assert (code, err) == (0, "")
    assert out == dump_lines(v2_segment(), str(path), 0, deep=False, print_data=False)


def test_v2_deep_print_data(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, err = run("--files", str(path), "--print-data-log")
    assert (code, err) == (0, "")
    assert out == dump_lines(v2_segment(), str(path), 0, deep=True, print_data=True)


def test_deep_iteration_without_data(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, _ = run("--files", str(path), "--deep-iteration")
    # Without data printing the record lines stop before " key:" / " payload:".
    assert code == 0 and out == dump_lines(v2_segment(), str(path), 0, deep=True, print_data=False)


def test_legacy_deep(tmp_path):
    path = write(tmp_path, legacy_segment(), "00000000000000000010.log")
    code, out, err = run("--files", str(path), "--print-data-log")
    assert (code, err) == (0, "")
    assert out == dump_lines(legacy_segment(), str(path), 10, deep=True, print_data=True)


def test_batch_lines_match_raw_bytes(tmp_path):
    """Every number on every batch line, re-derived from the bytes by struct
    (an implementation independent of kproto)."""
    for data, name in ((v2_segment(), SEGMENT), (legacy_segment(), "00000000000000000010.log")):
        path = write(tmp_path, data, name)
        _, out, _ = run("--files", str(path))
        lines = [l for l in out.splitlines() if l.startswith(("baseOffset:", "offset:"))]
        pos = 0
        for line in lines:
            f = dict(re.findall(r"(\w+): (\S+)", line))
            length, = struct.unpack_from(">i", data, pos + 8)
            magic = data[pos + 16]
            assert int(f["position"]) == pos and int(f["size"]) == length + 12
            assert int(f["magic"]) == magic
            if magic == 2:
                (base, _, ple, _, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
                 count) = struct.unpack_from(">qiibIhiqqqhii", data, pos)
                assert crc == crc32c.crc32c(data[pos + 21:pos + 12 + length])
                assert f["isvalid"] == "true" and int(f["crc"]) == crc
                assert (int(f["baseOffset"]), int(f["lastOffset"]), int(f["count"])) == (base, base + lod, count)
                assert (int(f["producerId"]), int(f["producerEpoch"])) == (pid, pepoch)
                assert int(f["partitionLeaderEpoch"]) == ple
                assert int(f["baseSequence"]) == bseq
                assert int(f["lastSequence"]) == (-1 if bseq < 0 else bseq + lod)
                assert f["isTransactional"] == ("true" if attrs & 0x10 else "false")
                assert f["isControl"] == ("true" if attrs & 0x20 else "false")
                assert f["deleteHorizonMs"] == "OptionalLong.empty"
                assert int(f["LogAppendTime" if attrs & 8 else "CreateTime"]) == max_ts
                assert f["compresscodec"] == ["none", "gzip", "snappy", "lz4", "zstd"][attrs & 7]
            else:
                offset, _, crc, _, attrs = struct.unpack_from(">qiIbb", data, pos)
                import zlib
                assert crc == zlib.crc32(data[pos + 16:pos + 12 + length])
                assert int(f["offset"]) == offset and int(f["crc"]) == crc
                if magic == 1:
                    ts, = struct.unpack_from(">q", data, pos + 18)
                    assert int(f["CreateTime"]) == ts
                else:
                    assert f["NoTimestampType"] == "-1"
                assert f["compresscodec"] == ["none", "gzip", "snappy", "lz4"][attrs & 7]
            pos += length + 12
        assert pos == len(data)


def test_skip_record_metadata(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, _ = run("--files", str(path), "--print-data-log", "--skip-record-metadata")
    records = [l for l in out.splitlines()[2:] if not l.startswith("baseOffset:")]
    # Kafka 4.4 (measured): "| key: k payload: v", "| payload: v" without a key
    # (3.x: " payload: v"), and an empty line for a control record.
    assert records == [
        "| key: k payload: hello",
        "| payload: world",
        "| key: k2",
        "",
        "| key: g1 payload: zip-" + "a" * 40,
        "| key: g2 payload: zip-" + "b" * 40,
    ]
    assert code == 0


@pytest.mark.parametrize("decoder, key, value", [
    ("hex", "6b", "68656c6c6f"),
    ("base64", "aw==", "aGVsbG8="),
    ("utf8", "k", "hello"),
])
def test_key_value_decoders(tmp_path, decoder, key, value):
    path = write(tmp_path, v2_segment())
    _, out, _ = run("--files", str(path), "--key-decoder", decoder, "--value-decoder", decoder)
    first = out.splitlines()[3]
    assert first.endswith(f"headerKeys: [] key: {key} payload: {value}")


def test_decoder_flag_alone_turns_on_data(tmp_path):
    # Kafka: any decoder option implies --print-data-log (and so deep iteration).
    path = write(tmp_path, v2_segment())
    _, out, _ = run("--files", str(path), "--value-decoder")
    assert out.splitlines()[3].endswith("key: k payload: hello")


def test_json_decoder(tmp_path):
    data = v2_batch(0, [(1, b'{"a": [1, 2]}', b"not json", [])])
    path = write(tmp_path, data)
    _, out, _ = run("--files", str(path), "--key-decoder", "json", "--value-decoder", "json")
    assert out.splitlines()[3].endswith('key: {"a":[1,2]} payload: not json')
    _, out, _ = run("--files", str(path), "--key-decoder", "json", "--json", "--print-data-log")
    assert json.loads(out.splitlines()[1])["records"][0]["key"] == {"a": [1, 2]}


# --- JSON ------------------------------------------------------------------------------------

def test_json_lines(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, err = run("--files", str(path), "--json", "--print-data-log")
    assert (code, err) == (0, "")
    objs = [json.loads(l) for l in out.splitlines()]
    assert objs[0] == {"file": str(path), "logStartingOffset": 0}
    # Field names and values are those of Kafka's text lines, in the same order.
    text = dump_lines(v2_segment(), str(path), 0, deep=True, print_data=True).splitlines()[2:]
    batches = [l for l in text if l.startswith("baseOffset:")]
    records = [l[2:] for l in text if l.startswith("| ")]
    assert len(objs) - 1 == len(batches)

    def same(obj, line):
        pairs = re.findall(r"(\w+): (\[[^]]*\]|\S+)", line)
        assert [k for k in obj if k != "records"] == [k for k, _ in pairs]
        for k, v in pairs:
            got = obj[k]
            want = {"OptionalLong.empty": None, "true": True, "false": False}.get(v, v)
            if isinstance(got, list):
                want = [] if v == "[]" else v[1:-1].split(",")
            elif isinstance(got, int) and not isinstance(got, bool):
                want = int(v)
            assert got == want, (k, got, v)

    for obj, line in zip(objs[1:], batches):
        same(obj, line)
    flat = [r for obj in objs[1:] for r in obj["records"]]
    assert len(flat) == len(records)
    for obj, line in zip(flat, records):
        same(obj, line)


def test_json_shallow_has_no_records(tmp_path):
    path = write(tmp_path, legacy_segment(), "00000000000000000010.log")
    _, out, _ = run("--files", str(path), "--json")
    objs = [json.loads(l) for l in out.splitlines()]
    assert [o.get("offset") for o in objs[1:]] == [10, 11, 12, 14]
    assert all("records" not in o for o in objs)
    assert list(objs[3]) == ["offset", "position", "NoTimestampType", "size", "magic",
                             "compresscodec", "crc", "isvalid"]


# --- tails and corruption ----------------------------------------------------------------

def test_truncated_tail_is_kafkas_invalid_bytes_line(tmp_path):
    data = v2_segment()
    path = write(tmp_path, data[:-10])
    code, out, err = run("--files", str(path))
    lines = out.splitlines()
    assert lines[-1] == f"Found {len(data) - 10 - 242} invalid bytes at the end of {SEGMENT}"
    assert len([l for l in lines if l.startswith("baseOffset:")]) == 3
    assert (code, err) == (0, "")


def test_short_tail_under_17_bytes(tmp_path):
    path = write(tmp_path, v2_segment() + b"\x01" * 17)
    code, out, err = run("--files", str(path))
    assert out.splitlines()[-1] == f"Found 17 invalid bytes at the end of {SEGMENT}"
    assert (code, err) == (0, "")


def test_zero_filled_tail(tmp_path):
    # A preallocated segment: Kafka throws on the zero length; kproto prints
    # Kafka's invalid-bytes line and exits 0.
    path = write(tmp_path, v2_segment() + bytes(4096))
    code, out, err = run("--files", str(path), "--deep-iteration")
    assert out.splitlines()[-1] == f"Found 4096 invalid bytes at the end of {SEGMENT}"
    assert (code, err) == (0, "")


def test_max_bytes_suppresses_invalid_bytes_line(tmp_path):
    path = write(tmp_path, v2_segment())
    code, out, _ = run("--files", str(path), "--max-bytes", "200")
    lines = out.splitlines()
    assert [l.split()[1] for l in lines if l.startswith("baseOffset:")] == ["0", "2"]
    assert not any(l.startswith("Found") for l in lines) and code == 0


def test_bit_flip_crc_mismatch(tmp_path):
    data = bytearray(v2_segment())
    data[94 + 66] ^= 0x01            # "k2" -> "j2": inside batch 1's CRC range
    path = write(tmp_path, bytes(data))
    code, out, err = run("--files", str(path), "--print-data-log")
    want = dump_lines(v2_segment(), str(path), 0, deep=True, print_data=True).splitlines()
    got = out.splitlines()
    assert got[:5] == want[:5] and got[7:] == want[7:]     # everything else as before
    stored = int.from_bytes(data[94 + 17:94 + 21], "big")
    computed = crc32c.crc32c(bytes(data[94 + 21:94 + 70]))
    assert got[5] == want[5].replace(" isvalid: true", " isvalid: false")
    assert got[6] == "| offset: 2 CreateTime: 1700000000150 keySize: 2 valueSize: -1 sequence: 5 headerKeys: [] key: j2"
    assert err == (f"kproto: error: {path} @ byte 111: crc: crc mismatch "
                   f"(stored {stored}, computed {computed})\n")
    assert code == 4


def test_corrupt_length_stops_with_one_error(tmp_path):
    data = bytearray(v2_segment())
    data[164 + 8:164 + 12] = (5).to_bytes(4, "big")    # batch 2 length 5 < 14, not a zero tail
    path = write(tmp_path, bytes(data))
    code, out, err = run("--files", str(path))
    assert [l.split()[1] for l in out.splitlines() if l.startswith("baseOffset:")] == ["0", "2"]
    assert err == (f"kproto: error: {path} @ byte 164: batch_length: Found record size 5 smaller "
                   "than minimum record overhead (14)\n")
    assert code == 4


def test_bad_record_inside_valid_frame(tmp_path):
    # A record count larger than the records present, CRC recomputed: the
    # frame is intact, its records are not.
    data = bytearray(v2_batch(0, [(1, b"k", b"v", [])]))
    data[57:61] = (2).to_bytes(4, "big")
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    path = write(tmp_path, bytes(data) + v2_batch(1, [(2, b"k", b"w", [])]))
    code, out, err = run("--files", str(path), "--print-data-log")
    assert out.splitlines()[-1].endswith("key: k payload: w")       # the next batch still printed
    assert err.startswith(f"kproto: error: {path} @ byte ") and err.count("\n") == 1
    assert code == 4


def test_unknown_file_and_missing_file(tmp_path):
    other = write(tmp_path, b"x", "partition.metadata")
    code, out, err = run("--files", f"{other},{tmp_path}/nothere.log")
    assert out == f"Dumping {other}\nDumping {tmp_path}/nothere.log\n"
    assert err.splitlines()[0] == f"Ignoring unknown file {other}"
    assert err.splitlines()[1].startswith("kproto: error: ") and "nothere.log" in err
    assert len(err.splitlines()) == 2
    assert code == 3                    # some files read, one failed
    code, _, err = run("--files", f"{tmp_path}/nothere.log")
    assert code == 1 and err.count("\n") == 1


def test_segment_name_must_carry_a_base_offset(tmp_path):
    path = write(tmp_path, v2_segment(), "segment.log")
    code, out, err = run("--files", str(path))
    assert out == f"Dumping {path}\n"
    assert err == (f"kproto: error: {path}: the file name does not start with a base offset "
                   "(<20 digits>.log, .index, .timeindex)\n")
    assert code == 1


def test_non_consecutive_offsets_summary(tmp_path):
    data = v2_batch(0, [(1, b"a", b"1", [])]) + v2_batch(5, [(2, b"b", b"2", [])]) \
        + v2_batch(9, [(3, b"c", b"3", [])])
    path = write(tmp_path, data)
    code, _, err = run("--files", str(path), "--deep-iteration")
    # Scala prepends each pair: reverse order of discovery.
    assert err == f"Non-consecutive offsets in {path}\n  5 is followed by 9\n  0 is followed by 5\n"
    assert code == 0


# --- --explain -------------------------------------------------------------------------------

def test_explain_one_batch(tmp_path):
    """--explain is kproto's own view (no Kafka counterpart): each row's offset
    and hex must be the file's bytes there, the rows must tile the batch, and
    each header field's value must be what struct reads at that offset."""
    data = v2_batch(0, [(1700000000100, b"k", b"hello", [("h", b"1")])])
    path = write(tmp_path, data)
    code, out, err = run("--files", str(path), "--explain")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:3] == dump_lines(data, str(path), 0, deep=False, print_data=False).splitlines()
    rows = [re.fullmatch(r"\s+(\d+)  ((?:[0-9a-f]{2} )+)\s+(\S+) = (.*)", line) for line in lines[3:]]
    assert all(rows), lines[3:]
    pos = 0
    fields = {}
    for row in rows:
        offset, raw = int(row[1]), bytes.fromhex(row[2])
        assert offset == pos and data[offset:offset + len(raw)] == raw
        fields[row[3]] = row[4]
        pos += len(raw)
    assert pos == len(data)
    header = struct.unpack_from(">qiibIhiqqqhii", data)
    names = ["base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
             "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
             "base_sequence", "records_count"]
    for name, value in zip(names, header):
        assert fields[name].split()[0] == str(value), name
    assert fields["crc"].endswith(f"(crc32c over frame bytes 21..{len(data) - 1}: ok)")
    assert (fields["records[0].key"], fields["records[0].value"]) == ('"k"', '"hello"')
    assert (fields["records[0].headers[0].key"], fields["records[0].headers[0].value"]) == ('"h"', '"1"')


def test_explain_compressed_and_legacy(tmp_path):
    path = write(tmp_path, legacy_segment(), "00000000000000000010.log")
    code, out, _ = run("--files", str(path), "--explain")
    assert code == 0
    assert "value (gzip) = " in out and "value[1].value = \"q\"" in out
    assert "       +12  " in out        # rows inside decompressed data are +offsets
    assert "(crc32 over frame bytes 16..35: ok)" in out


def test_crc_mismatch_with_undecodable_records_is_one_error(tmp_path):
    data = bytearray(v2_segment())
    data[94 + 65] ^= 0x01            # batch 1's key length varint: the record no longer parses
    path = write(tmp_path, bytes(data))
    code, out, err = run("--files", str(path), "--print-data-log")
    lines = out.splitlines()
    assert lines[5].endswith("isvalid: false") and lines[6].startswith("baseOffset: 3 ")
    assert err.splitlines()[0].startswith(f"kproto: error: {path} @ byte 111: crc: crc mismatch")
    # The skipped record leaves a gap that Kafka's summary reports.
    assert err.splitlines()[1:] == [f"Non-consecutive offsets in {path}", "  1 is followed by 3"]
    assert code == 4


def test_explain_marks_crc_mismatch(tmp_path):
    data = bytearray(v2_batch(0, [(1700000000100, b"k", b"hello", [("h", b"1")])]))
    data[70] ^= 0x20                 # "hello" -> "heLlo"
    path = write(tmp_path, bytes(data))
    code, out, err = run("--files", str(path), "--explain")
    computed = crc32c.crc32c(bytes(data[21:]))
    assert f"crc = 3775931214  (MISMATCH: crc32c over frame bytes 21..77 is {computed})" in out
    assert 'records[0].value = "heLlo"' in out
    assert code == 4 and err.count("\n") == 1


def test_kraft_snapshot_header_and_refused_kinds(tmp_path):
    snap = write(tmp_path, v2_segment(), "00000000000000000100-0000000002.checkpoint")
    code, out, _ = run("--files", str(snap))
    assert out.splitlines()[:2] == [f"Dumping {snap}", "Snapshot end offset: 100, epoch: 2"]
    assert code == 0
    producer = write(tmp_path, b"\x00\x01", f"{'0' * 20}.snapshot")     # a producer snapshot cut short
    code, out, err = run("--files", str(producer))
    assert out == f"Dumping {producer}\n"
    assert err == (f"kproto: error: {producer} @ byte 2: Snapshot failed schema validation: "
                   "the header is cut short\n")
    assert code == 4


@pytest.mark.slow
def test_memory_stays_flat(tmp_path):
    """A 160 MiB segment dumped with records and payloads: the peak resident
    size of the process stays far below the file size (mmap, pages released
    as printed, lines written as they are made)."""
    import subprocess
    import sys

    from kproto.records import NewRecord, build_record_batch

    path = tmp_path / SEGMENT
    with open(path, "wb") as f:
        offset, written = 0, 0
        value = b"v" * 400
        while written < 160 << 20:
            batch = build_record_batch([NewRecord(b"k", value, (), 1700000000000 + i) for i in range(500)],
                                       base_offset=offset)
            f.write(batch)
            written += len(batch)
            offset += 500
    # VmHWM: the peak RSS of this process image (ru_maxrss would carry over
    # the forking pytest process's peak through exec).
    child = ("import re, sys\n"
             "from kproto.tools.main import cli\n"
             "try:\n    cli(sys.argv[1:])\n"
             "except SystemExit as e:\n    code = e.code\n"
             "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
             "print(code, hwm, file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", child, "dump-log", "--files", str(path), "--print-data-log"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    code, peak_kib = map(int, proc.stderr.split()[-2:])
    assert code == 0, proc.stderr
    assert peak_kib < 110 * 1024, peak_kib      # well under the 160 MiB file


def _patch_header(batch: bytes, *, attrs_or=0, max_ts=None) -> bytes:
    data = bytearray(batch)
    data[21:23] = (int.from_bytes(data[21:23], "big") | attrs_or).to_bytes(2, "big")
    if max_ts is not None:
        data[35:43] = max_ts.to_bytes(8, "big")
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def test_sequence_wrap_log_append_time_and_delete_horizon(tmp_path):
    wrap = v2_batch(0, [(1000, b"a", b"1", []), (1001, b"b", b"2", [])], pid=9, epoch=1,
                    seq=2147483647)
    # A broker stamps LogAppendTime (attribute bit 3) and the append time as max timestamp.
    lat = _patch_header(v2_batch(2, [(1000, b"c", b"3", [])]), attrs_or=0x08, max_ts=5000)
    # The cleaner's delete horizon (bit 6) lives in base_timestamp.
    horizon = _patch_header(v2_batch(3, [(7000, b"d", None, [])]), attrs_or=0x40)
    path = write(tmp_path, wrap + lat + horizon)
    _, out, _ = run("--files", str(path), "--print-data-log")
    lines = out.splitlines()
    assert " baseSequence: 2147483647 lastSequence: 0 " in lines[2]
    assert lines[3] == ("| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 1 sequence: 2147483647 "
                        "headerKeys: [] key: a payload: 1")
    assert lines[4] == "| offset: 1 CreateTime: 1001 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: b payload: 2"
    assert " LogAppendTime: 5000 " in lines[5]
    assert lines[6] == "| offset: 2 LogAppendTime: 5000 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] key: c payload: 3"
    assert " deleteHorizonMs: OptionalLong[7000] " in lines[7]
    assert lines[8] == "| offset: 3 CreateTime: 7000 keySize: 1 valueSize: -1 sequence: -1 headerKeys: [] key: d"


# --- the shared third-party fixtures (kproto/conformance/corpus/records), when present --------------------

from kproto.conformance import RECORDS_DIR as FIXTURES  # noqa: E402  the corpus ships in the package


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.bin")))
def test_third_party_fixture_dumps(tmp_path, name):
    """Each fixture, written as a segment, dumps cleanly; batches and records
    agree with the producer inputs recorded beside it."""
    data = (FIXTURES / f"{name}.bin").read_bytes()
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    path = write(tmp_path, data)
    code, out, err = run("--files", str(path), "--deep-iteration", "--json")
    assert (code, err) == (0, "")
    batches = [o for o in map(json.loads, out.splitlines()) if "magic" in o]
    assert len(batches) == len(expected["batches"])
    for got, want in zip(batches, expected["batches"]):
        assert (got["magic"], got["compresscodec"], got["isvalid"]) == (want["magic"], want["codec"], True)
        assert (want["timestamp_type"] or "NoTimestampType") in got
        assert [r["offset"] for r in got["records"]] == [r["offset"] for r in want["records"]]
        assert [r["keySize"] for r in got["records"]] == [
            -1 if r["key"] is None else len(r["key"]) // 2 for r in want["records"]]
        assert [r["valueSize"] for r in got["records"]] == [
            -1 if r["value"] is None else len(r["value"]) // 2 for r in want["records"]]


@pytest.mark.parametrize("codec, name", [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_kafka_python_codecs(tmp_path, codec, name):
    value = b"compressible " * 20
    path = write(tmp_path, v2_batch(0, [(1, b"k", value, []), (2, None, value, [])], codec=codec))
    code, out, err = run("--files", str(path), "--print-data-log")
    lines = out.splitlines()
    assert f" compresscodec: {name} " in lines[2] and lines[2].endswith("isvalid: true")
    assert lines[3].endswith(f"key: k payload: {value.decode()}")
    assert lines[4].endswith(f"headerKeys: [] payload: {value.decode()}")
    assert (code, err) == (0, "")


def test_pure_python_path_prints_the_same(tmp_path):
    """KPROTO_NO_EXTENSIONS=1 (no C record codec) prints what the C path prints,
    compressed batches included (lz4 decompresses into a bytearray)."""
    import os
    import subprocess
    import sys
    from kproto.compression import CompressionType
    from kproto.records import NewRecord, build_record_batch
    data = b"".join(build_record_batch([NewRecord(b"k%d" % i, b"v%d" % i, [("h", b"x")], 1700000000000 + i)
                                        for i in range(3)], base_offset=3 * n, compression=codec)
                    for n, codec in enumerate((CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD,
                                               CompressionType.GZIP, CompressionType.SNAPPY)))
    path = write(tmp_path, data)
    kproto = [sys.executable, "-m", "kproto.tools.main", "dump-log", "--print-data-log", "--files", str(path)]
    outs = []
    for extra in ({}, {"KPROTO_NO_EXTENSIONS": "1"}):
        proc = subprocess.run(kproto, capture_output=True, text=True, timeout=60, env={**os.environ, **extra})
        assert (proc.returncode, proc.stderr) == (0, "")
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    assert [line.split(" key: ")[1] for line in outs[0].splitlines() if line.startswith("| ")] == [
        f"k{i} payload: v{i}" for _ in range(5) for i in range(3)]


@pytest.mark.parametrize("show", [True, False])
def test_record_lines_from_c_equal_pythons(show):
    # csrc/lines.c writes a v2 data batch's lines in one call; the Python loop it
    # replaces is the reference: nulls, replaced UTF-8, several and empty header keys,
    # an offset gap, a sequence that wraps past Int.MAX, LogAppendTime.
    from kproto.records import NewRecord, TimestampType, build_record_batch, iter_batches
    from kproto.tools.dump_log import lines as L
    from kproto.tools.render import LineWriter, plain_decoder
    from tests.records.codec_check import c_codec
    c_codec()
    recs = [NewRecord(b"k\xff\xfe" + "é".encode(), "é€".encode() + b"\xed\xa0\x80", [("a", b"1"), ("", None), ("ü", b"")], 5),
            NewRecord(None, None, [], 6), NewRecord(b"", b"", [("h", b"x")], 7)]
    segment = (build_record_batch(recs, base_offset=3, base_sequence=2**31 - 2, producer_id=1)
               + build_record_batch(recs, base_offset=10, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                    log_append_time=99))
    outputs = []
    for block in (True, False):
        class Sink(LineWriter):
            def __init__(self):
                self.lines, self._more = [], 0
                self.append = self.lines.append
        sink = Sink()
        printer = L.RecordPrinter(data=show, skip_metadata=False, kdec=plain_decoder("utf8", False),
                                  vdec=plain_decoder("utf8", False), parser=None, control_record=None,
                                  block=sink.block if block else None)
        printer.last = 1
        for b in iter_batches(segment):
            printer.lines(sink.append, b, b.records())
        outputs.append(("\n".join(sink.lines), printer.last, printer.gaps, len(sink.lines) + sink._more))
    assert outputs[0] == outputs[1]
    text = outputs[0][0]
    assert outputs[0][1:] == (12, [(1, 3), (5, 10)], 6)
    assert "sequence: 2147483647" in text and "sequence: 0 " in text and "LogAppendTime: 99" in text
    if show:
        assert "key: k\ufffd\ufffdé payload: é€\ufffd\ufffd\ufffd" in text
