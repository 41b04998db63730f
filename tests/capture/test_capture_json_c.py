"""decode's C paths (generators.cjson, csrc/packet.c) == the Python ones, byte for byte."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from crc32c import crc32c

from kproto import accel
from kproto import records as R
from kproto.capture import exchanges
from kproto.capture.body import _batches
from kproto.capture.jsonout import batches_json, dumps, fast_batches_json, rows_json
from kproto.compression import CompressionType
from kproto.conformance import RECORDS_DIR
from kproto.errors import DecodeError
from kproto.framing import frame
from kproto.records import NewRecord, TimestampType, build_control_batch, build_message_set, build_record_batch
from kproto.schemas import records as S
from kproto.protocol import encode_request, encode_response
from tests.capture.capture_session import pcap_bytes, tcp_packet
from tests.components import VENV_BIN

# the C path is off under the switch; without it, an unbuilt extension fails these tests
pytestmark = pytest.mark.skipif(accel.DISABLED, reason="KPROTO_NO_EXTENSIONS is set: no C path to compare")

ODD_TEXT = ['"q" \\ /', "\n\r\t\b\f\x00\x1f\x7f", "\u00e9\u4e2d", "\U0001f600 x", ""]


def _python_rows(batch) -> str:
    return str(rows_json(batch.records(), False))


def _check_batch(batch) -> None:
    """records_json (C) gives what the Python renderer gives, or raises as records() does."""
    try:
        want = _python_rows(batch)
    except DecodeError as e:
        with pytest.raises(type(e)) as got:
            batch.records_json()
        assert str(got.value) == str(e)
        return
    assert batch.records_json().decode("ascii") == want


@pytest.mark.parametrize("name", sorted(p.stem for p in RECORDS_DIR.glob("*.bin")))
def test_records_json_equals_python_on_every_record_fixture(name):
    data = (RECORDS_DIR / f"{name}.bin").read_bytes()
    for batch in R.iter_batches(data, verify_crc=False, allow_incomplete=True):
        if isinstance(batch, R.RecordBatch):
            _check_batch(batch)
            _check_field(bytes(batch.data))


def _with_crc(batch: bytes) -> bytes:
    b = bytearray(batch)
    b[S.CRC_OFFSET[2]:S.CRC_OFFSET[2] + 4] = crc32c(bytes(b[S.V2_CRC_FROM:])).to_bytes(4, "big")
    return bytes(b)


def _python_field(raw: bytes) -> tuple[str, list[str]]:
    warnings: list[str] = []
    return str(batches_json(_batches(raw, warnings, "", rows_json))), warnings


def _check_field(raw: bytes) -> str | None:
    """fast_batches_json gives the Python path's text when that path has nothing
    to warn about; None otherwise. Returns the C text."""
    fast = fast_batches_json(raw)
    want, warnings = _python_field(raw)
    if fast is not None:
        assert (str(fast), warnings) == (want, [])
    return fast


RECS = [NewRecord(b"k", b"v", [("h", b"1")]), NewRecord(None, b"v2", [(t, None) for t in ODD_TEXT]),
        NewRecord(b"k3", None), NewRecord(b"", b""), NewRecord(bytes(range(256)), b"\xff" * 1000,
                                                                  [("h", bytes([i])) for i in range(5)])]


@pytest.mark.parametrize("kwargs", [
    {}, {"base_offset": 2 ** 40, "partition_leader_epoch": 7},
    {"timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": 1_700_000_000_123},
    {"is_transactional": True, "producer_id": 9, "producer_epoch": 2, "base_sequence": 2 ** 31 - 2},
    {"is_transactional": True, "timestamp_type": TimestampType.LOG_APPEND_TIME, "log_append_time": -5},
])
def test_plain_batches_as_json_in_one_call(kwargs):
    one = build_record_batch([NewRecord(b"x", b"y")], base_offset=99)
    raw = build_record_batch(RECS, **kwargs) + one
    assert _check_field(raw) is not None
    for cut in (1, 16, 17, 40, 61, len(one) - 1):          # a fetch response may end mid-batch
        assert '"partial_batch_bytes":' in str(_check_field(raw + one[:cut]))
    assert str(_check_field(b"")) == "[]"
    for batch in R.iter_batches(raw):
        _check_batch(batch)


def test_header_keys_escaped_as_json_dumps():
    raw = build_record_batch([NewRecord(b"k", b"v", [(t, b"x") for t in ODD_TEXT])])
    rows = json.loads(str(_check_field(raw)))[0]["records"][0]["headers"]
    assert [k for k, _ in rows] == ODD_TEXT
    assert str(_check_field(raw)).isascii()


def test_everything_else_left_to_python():
    plain = build_record_batch(RECS)
    bad_crc = bytearray(plain)
    bad_crc[-1] ^= 1
    bad_utf8 = _with_crc(plain.replace(b"\x02h\x02\x31", b"\x02\xff\x02\x31", 1))
    assert bad_utf8 != plain
    extra = bytearray(plain)                               # records_count one more than there are
    extra[S.V2_OFFSETS["records_count"] + 3] += 1
    others = [build_record_batch(RECS, compression=CompressionType.GZIP),
              build_control_batch(1, producer_id=7, producer_epoch=0, coordinator_epoch=3),
              bytes(bad_crc), bad_utf8, _with_crc(bytes(extra)),
              build_message_set([NewRecord(b"a", b"b")], magic=1), plain[:8] + b"\x00\x00\x00\x05" + plain[12:]]
    for other in others:
        for raw in (other, plain + other, other + plain):
            assert _check_field(raw) is None
    for batch in R.iter_batches(bad_utf8 + _with_crc(bytes(extra)) + others[0]):
        _check_batch(batch)


def test_cli_output_same_without_the_extension(tmp_path):
    """KPROTO_NO_EXTENSIONS=1 (every batch by the Python renderer) prints what the C path prints."""
    c, s = "127.0.0.1", "127.0.0.2"
    data = (build_record_batch(RECS) + build_record_batch(RECS, compression=CompressionType.GZIP, base_offset=5)
            + build_control_batch(0, producer_id=7, producer_epoch=0, coordinator_epoch=3, base_offset=10))
    req = frame(encode_request(0, 9, 1, "c", {"transactional_id": None, "acks": -1, "timeout_ms": 1000,
                "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": data + data[:30]}]}]}))
    resp = frame(encode_response(0, 9, 1, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 0}]}], "throttle_time_ms": 0}))
    path = tmp_path / "p.pcap"
    path.write_bytes(pcap_bytes([(1_000_000, tcp_packet(c, 40000, s, 9092, 0, req, ack=0)),
                                 (2_000_000, tcp_packet(s, 9092, c, 40000, 0, resp, ack=len(req)))]))
    outs = [subprocess.run([str(VENV_BIN / "kproto"), "decode", "--json", str(path)], capture_output=True,
                           timeout=60, check=True, env={**os.environ, "KPROTO_NO_EXTENSIONS": flag}).stdout
            for flag in ("0", "1")]
    assert outs[0] == outs[1]
    (ex,) = exchanges(io.BytesIO(path.read_bytes()), binary="json")
    assert outs[0].decode() == dumps(ex.to_json()) + "\n"
    assert b'"partial_batch_bytes":30' in outs[0] and b'"crc_valid":true' in outs[0]


def test_c_dumps_equals_json_dumps():
    """The envelope encoder writes what json.dumps(default=json_default) writes, or declines."""
    import enum
    import uuid

    from construct import Container

    from kproto.capture.jsonout import RawJSON, _c_dumps, dumps_bytes, json_default

    class Code(enum.IntEnum):
        NONE = 0
        BIG = 2 ** 40

    import collections
    moved = collections.OrderedDict(a=1, b=2, c=3)
    moved.move_to_end("a")                              # items() order is not the dict's any more
    plain = [None, True, False, 0, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 64, -(2 ** 90), Code.NONE, Code.BIG,
             0.1, -0.0, 1e16, 1.5e-7, 123456.789, float("inf"), float("-inf"), float("nan"),
             "", "ascii", *ODD_TEXT, "\ud800 lone", b"", b"\x00\xff", bytearray(b"ab"), memoryview(b"abc"),
             (1, "t"), [], {}, {"k": [{"n": None}], "\u00e9": (b"x",)}, moved,
             Container(request=Container(x=[Container(y=1)]), warnings=[])]
    for value in plain + [plain]:
        want = json.dumps(value, default=json_default, separators=(",", ":"))
        assert _c_dumps(value, RawJSON, Container) == want.encode("ascii"), value
    raw = {"records": RawJSON('[{"offset":1}]'), "n": 1}
    assert _c_dumps(raw, RawJSON, Container) == b'{"records":[{"offset":1}],"n":1}' == dumps_bytes(raw)
    for declined in (uuid.UUID(int=5), {1, 2}, {1: "int key"}, {"k": [object()]}):
        assert _c_dumps(declined, RawJSON, Container) is None
    assert dumps_bytes({"id": uuid.UUID(int=5)}) == b'{"id":"00000000-0000-0000-0000-000000000005"}'
    deep: list = []
    for _ in range(300):
        deep = [deep]
    assert _c_dumps(deep, RawJSON, Container) is None and dumps_bytes(deep) == json.dumps(deep).encode()


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
@pytest.mark.parametrize("link, snaplen", [(1, 65535), (1, 80), (101, 65535)])
def test_pcap_segments_in_c_as_in_python(order, nano, link, snaplen):
    """The decoder's C read of pcap records and their usual TCP segment gives the
    segments PacketReader.pcap_records + tcp_segment give, at every feed size."""
    from kproto.capture.decoder import _SEGMENTS
    from kproto.capture.packet import Segment, tcp_segment
    from kproto.capture.pcap import NEED_DATA, CaptureError, PacketReader

    base = bytearray(tcp_packet("127.0.0.1", 40000, "127.0.0.2", 9092, 5, b"x" * 100, ack=9, flags=0x19, link=link))
    frames = [bytes(base), bytes(base[:54]), bytes(base[:53]), bytes(base) + b"\x00" * 6,
              tcp_packet("fd00::1", 1, "fd00::2", 9092, 2 ** 32 - 1, b"v6", link=link)]
    for at, value in ((16, b"\x00\x00"), (16, b"\x00\x10"), (20, b"\x20\x00"), (20, b"\x00\x05"), (20, b"\x40\x00"),
                      (23, b"\x11"), (14, b"\x46"), (12, b"\x86\xdd"), (46, b"\xf0"), (46, b"\x10")):
        v = bytearray(base)
        v[at:at + len(value)] = value        # TSO length 0, short total, fragments, DF, UDP, options, ...
        frames.append(bytes(v))
    pkts = [(1_795_000_000_123_456_789 + i * 1_000_001, f) for i, f in enumerate(frames)]
    data = pcap_bytes(pkts, link=link, nano=nano, order=order, snaplen=snaplen)
    data += b"\x00" * 8 + (2 ** 30).to_bytes(4, "little" if order == "<" else "big") + b"\x00" * 8
    for step in (len(data), 100, 7):
        fast, slow, got, want = PacketReader(), PacketReader(), [], []
        for r in (fast, slow):
            r.feed(data[:24])                 # the file header, read by next_packet
            assert r.next_packet() is NEED_DATA
        for i in range(24, len(data), step):
            for r in (fast, slow):
                r.feed(data[i:i + step])
            got += [(ts, x if type(x) is Segment else tcp_segment(link, x)) for ts, x in fast.pcap_records(_SEGMENTS)]
            want += [(ts, tcp_segment(link, d)) for ts, d in slow.pcap_records()]
        assert got == want and len(got) == len(frames)
        assert any(type(s) is Segment for _, s in got) and (fast.packets, fast.position) == (slow.packets, slow.position)
        with pytest.raises(CaptureError, match="corrupt length"):
            fast.next_packet()


_HEAP_CYCLES = """
import resource, sys
from kproto.memory import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory() is True
held = [b"x" * (2 << 20) for _ in range(4)]          # 8 MiB touched, then freed
del held
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    held = [b"x" * (2 << 20) for _ in range(4)]
    del held
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not os.confstr("CS_GNU_LIBC_VERSION"), reason="a glibc allocator setting")
def test_keep_freed_memory_reuses_the_heap_instead_of_faulting_it_in_again():
    """What decode asks of glibc: megabytes freed and allocated again cost
    (almost) no page faults, where the default returns them to the OS and
    faults every page in again (2,048 pages a cycle here)."""
    faults = {mode: int(subprocess.run([sys.executable, "-c", _HEAP_CYCLES, mode], capture_output=True, text=True,
                                       check=True).stdout)
              for mode in ("keep", "default")}
    assert faults["keep"] < 100 and faults["default"] > 5 * 1000, faults
