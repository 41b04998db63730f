"""The capture layers on synthetic input: file formats, link types, TCP
reassembly, frame hunting, pairing. Files come from tests/capture/capture_session.py's
small writer; real captures are in test_capture_clients.py."""

from __future__ import annotations

import io
import json
import time

import pytest

from kproto.capture import CaptureError, Decoder, exchanges, json_default
from kproto.capture.body import mask_plain_token
from kproto.capture.packet import tcp_segment
from kproto.capture.pcap import NEED_DATA, PacketReader
from kproto.capture.tcp import Gap, HalfStream
from kproto.framing import frame
from kproto.records import NewRecord, build_record_batch
from kproto.protocol import encode_request, encode_response
from tests.capture.capture_session import pcap_bytes, pcapng_bytes, tcp_packet

T0 = 1_795_000_000_123_456_789
C, S = "10.0.0.1", "10.0.0.2"


def _packets(reader: PacketReader) -> list:
    out = []
    while (p := reader.next_packet()) is not NEED_DATA:
        out.append(p)
    return out


def _read(data: bytes, step: int | None = None) -> list:
    r = PacketReader()
    if step is None:
        r.feed(data)
        return _packets(r)
    out = []
    for i in range(0, len(data), step):
        r.feed(data[i:i + step])
        out += _packets(r)
    assert r.close() is None
    return out


# --- file formats ------------------------------------------------------------------

@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_byte_orders_and_resolutions(order, nano):
    pkts = [(T0 + i * 1_000_001, bytes([i]) * (10 + i)) for i in range(5)]
    data = pcap_bytes(pkts, link=101, nano=nano, order=order)
    whole, bytewise = _read(data), _read(data, 1)
    assert whole == bytewise
    assert [p.data for p in whole] == [d for _, d in pkts]
    assert [p.ts_ns for p in whole] == [t if nano else t // 1000 * 1000 for t, _ in pkts]
    assert {p.linktype for p in whole} == {101}


@pytest.mark.parametrize("step", [None, 1, 7, 100])
def test_pcap_records_at_once_as_packet_by_packet(step):
    """The decoder's batch read gives each record's (ts_ns, data) as next_packet
    does, stops where next_packet needs data, and leaves a corrupt record to it."""
    pkts = [(T0 + i * 1_000_001, bytes([i]) * (10 + 7 * i)) for i in range(9)]
    data = pcap_bytes(pkts, snaplen=40, nano=True) + b"\x00" * 8 + (2 ** 30).to_bytes(4, "little") + b"\x00" * 8
    r, got = PacketReader(), []
    r.feed(data[:24])                                  # the file header: not pcap until read
    assert r.pcap_records() == [] and r.next_packet() is NEED_DATA and r.format == "pcap"
    for i in range(24, len(data), step or len(data)):
        r.feed(data[i:i + (step or len(data))])
        got += r.pcap_records()
    assert got == [(p.ts_ns, p.data) for p in _read(pcap_bytes(pkts, snaplen=40, nano=True))]
    assert r.packets == len(pkts) and r.linktype == 1
    with pytest.raises(CaptureError, match="corrupt length"):
        r.next_packet()


def test_pcap_snaplen_keeps_orig_len():
    (p,) = _read(pcap_bytes([(T0, b"x" * 100)], snaplen=40))
    assert (len(p.data), p.orig_len) == (40, 100)


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_sections_interfaces_resolutions_simple_blocks(order):
    data = pcapng_bytes([
        {"interfaces": [(1, 6), (276, 9)], "packets": [(0, T0, b"a" * 7), (1, T0 + 1, b"bb"), (0, T0 + 5000, b"c")],
         "simple": [b"simple"]},
        {"interfaces": [(101, 0x80 | 20)], "packets": [(0, T0, b"d" * 9)]},   # new section: interfaces reset
    ], order=order)
    pkts = _read(data)
    assert pkts == _read(data, 3)
    assert [(p.linktype, p.interface, p.data) for p in pkts] == [
        (1, 0, b"a" * 7), (276, 1, b"bb"), (1, 0, b"c"), (1, 0, b"simple"), (101, 0, b"d" * 9)]
    assert [p.ts_ns for p in pkts[:3]] == [T0 // 1000 * 1000, T0 + 1, (T0 + 5000) // 1000 * 1000]
    assert pkts[3].ts_ns is None                              # simple packet blocks carry no time
    assert abs(pkts[4].ts_ns - T0) < 1000                     # 2^-20 s resolution: within a µs


def test_not_a_capture_is_one_located_error():
    r = PacketReader()
    r.feed(b"hello world, not a capture")
    with pytest.raises(CaptureError) as e:
        r.next_packet()
    assert str(e.value) == "@ byte 0: not a pcap or pcapng file (magic 68656c6c)"


def test_truncated_capture_is_a_note_not_an_error():
    data = pcap_bytes([(T0, b"a" * 50), (T0, b"b" * 50)])
    r = PacketReader()
    r.feed(data[:-10])
    assert [p.data for p in _packets(r)] == [b"a" * 50]
    assert r.close() == ("@ byte 90: capture ends inside a pcap record (56 bytes of it captured); "
                         "the packets before it are decoded")


# --- link types and IP -----------------------------------------------------------------

@pytest.mark.parametrize("link", [0, 1, 101, 113, 276])
@pytest.mark.parametrize("addrs", [(C, S), ("fd00::1", "fd00::2")])
def test_link_types_and_ip_versions(link, addrs):
    data = tcp_packet(addrs[0], 40000, addrs[1], 9092, 77, b"payload", link=link)
    seg = tcp_segment(link, data)
    assert (seg.sport, seg.dport, seg.seq, seg.payload, seg.missing) == (40000, 9092, 77, b"payload", 0)


def test_ethernet_ipv4_fast_path_reads_as_the_general_one():
    from kproto.capture.packet import _tcp_segment
    base = bytearray(tcp_packet(C, 40000, S, 9092, 5, b"x" * 100, ack=9, flags=0x19))
    variants = [bytes(base), bytes(base[:80]), bytes(base) + b"\x00" * 6, bytes(base[:54])]
    for at, value in ((16, b"\x00\x00"), (20, b"\x20\x00"), (20, b"\x00\x05"), (20, b"\x40\x00"),
                      (23, b"\x11"), (14, b"\x46"), (12, b"\x86\xdd"), (46, b"\x80")):
        v = bytearray(base)
        v[at:at + len(value)] = value                # TSO length 0, fragments, DF, UDP, options, not IPv4, TCP options
        variants.append(bytes(v))
    for data in variants:
        assert tcp_segment(1, data) == _tcp_segment(1, data)
    assert tcp_segment(1, bytes(base)).payload == b"x" * 100 and tcp_segment(1, variants[4]).payload == b"x" * 100


def test_snaplen_cut_segment_reports_missing_bytes():
    data = tcp_packet(C, 1, S, 9092, 0, b"x" * 100)
    seg = tcp_segment(1, data[:80])
    assert (len(seg.payload), seg.missing) == (80 - 54, 100 - (80 - 54))


# --- TCP reassembly --------------------------------------------------------------------

def _run(half: HalfStream, segs) -> list:
    out = []
    for seq, data in segs:
        out += half.segment(seq, False, data)
    return out


def test_reassembly_out_of_order_retransmission_overlap():
    h = HalfStream()
    h.segment(999, True, b"")                                   # SYN: stream starts at 1000
    out = _run(h, [(1000, b"abc"), (1006, b"ghi"), (1003, b"def"), (1000, b"abc"), (1004, b"EFGHIjk")])
    assert b"".join(out) == b"abcdefghijk"                      # first copy wins on overlap
    assert h.synced and h.retransmitted == 3 and not h.pending


def test_reassembly_wraps_around_the_sequence_space():
    h = HalfStream()
    start = (1 << 32) - 2
    assert b"".join(_run(h, [(start, b"ab"), (1, b"d"), (0, b"c")])) == b"abcd"
    assert not h.synced                                         # no SYN seen: picked up mid-stream


def test_gap_declared_when_the_peer_acks_past_it():
    h = HalfStream()
    _run(h, [(0, b"aa")])
    assert _run(h, [(5, b"ff")]) == []                          # bytes 2..4 missing: wait
    assert h.acked(3) == []                                     # ACK stops inside the hole
    assert h.acked(7) == [Gap(3), b"ff"]                        # the receiver had them; we never will


def test_gap_flushed_at_the_end():
    h = HalfStream()
    _run(h, [(0, b"aa"), (10, b"kk"), (5, b"ff")])
    assert h.flush() == [Gap(3), b"ff", Gap(3), b"kk"]


# --- Kafka on top ------------------------------------------------------------------------

def _produce(corr: int, values: list[bytes]) -> tuple[bytes, bytes]:
    batch = build_record_batch([NewRecord(b"k", v, [("h", b"1")]) for v in values])
    req = encode_request(0, 9, corr, "synthetic", {
        "transactional_id": None, "acks": -1, "timeout_ms": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
    resp = encode_response(0, 9, corr, {"responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": corr}]}], "throttle_time_ms": 0})
    return frame(req), frame(resp)


def _conversation(n: int, *, link: int = 1, split: int = 0) -> list[tuple[int, bytes]]:
    """n produce round trips on one connection; ``split`` > 0 cuts every PDU
    into segments of that many bytes."""
    pkts, cseq, sseq, ts = [], 1000, 5000, T0
    pkts.append((ts, tcp_packet(C, 40000, S, 9092, cseq - 1, flags=0x02, link=link)))
    for i in range(n):
        req, resp = _produce(i, [b"v%d" % i])
        for data, src, sp, dst, dp, seq, ack in ((req, C, 40000, S, 9092, cseq, sseq),
                                                 (resp, S, 9092, C, 40000, sseq, cseq + len(req))):
            step = split or len(data)
            for j in range(0, len(data), step):
                ts += 1000
                pkts.append((ts, tcp_packet(src, sp, dst, dp, seq + j, data[j:j + step], ack=ack, link=link)))
        cseq += len(req)
        sseq += len(resp)
    return pkts


def test_pairs_and_decodes_a_synthetic_conversation_segment_by_segment():
    pkts = _conversation(4, split=3)                        # edges inside every size prefix
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    assert [(e.api_name, e.api_version, e.correlation_id, e.warnings) for e in exs] == \
           [("Produce", 9, i, ()) for i in range(4)]
    assert [e.response["responses"][0]["partition_responses"][0]["base_offset"] for e in exs] == [0, 1, 2, 3]
    rec = exs[2].request["topic_data"][0]["partition_data"][0]["records"][0]
    assert rec["crc_valid"] and rec["records"][0]["value"] == b"v2"
    assert rec["records"][0]["headers"] == (("h", b"1"),)
    assert str(exs[0].connection) == "10.0.0.1:40000 > 10.0.0.2:9092"


def test_lost_segment_gives_a_gap_warning_and_decoding_resumes():
    pkts = _conversation(4)
    del pkts[3]                                             # the second request's only segment
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    corr = [(e.correlation_id, e.api_name) for e in exs if e.api_name]
    assert corr == [(0, "Produce"), (2, "Produce"), (3, "Produce")]
    assert any("bytes not captured before this frame" in w for e in exs for w in e.warnings)
    orphan = [e for e in exs if e.api_key is None]
    assert len(orphan) == 1 and orphan[0].correlation_id == 1   # its response, unpaired


def test_capture_starting_mid_connection_resyncs_at_a_frame_boundary():
    pkts = _conversation(3, split=40)
    later = [p for p in pkts[3:]]                           # no SYN, starts inside the first request
    exs = [e for e in exchanges(io.BytesIO(pcap_bytes(later))) if e.api_name]
    assert [e.correlation_id for e in exs] == [1, 2]
    assert "skipped" in " ".join(exs[0].warnings)


def test_pickup_inside_a_megabyte_request_resyncs():
    pkts, cseq, sseq, ts = [], 0, 0, T0
    for i in range(3):
        req, resp = _produce(i, [bytes([65 + i]) * 400_000] * 3)     # ~1.2 MB requests
        for j in range(0, len(req), 1400):
            ts += 1000
            pkts.append((ts, tcp_packet(C, 40000, S, 9092, cseq + j, req[j:j + 1400], ack=sseq)))
        cseq += len(req)
        ts += 1000
        pkts.append((ts, tcp_packet(S, 9092, C, 40000, sseq, resp, ack=cseq)))
        sseq += len(resp)
    exs = [e for e in exchanges(io.BytesIO(pcap_bytes(pkts[100:]))) if e.api_name]
    assert [e.correlation_id for e in exs] == [1, 2]
    assert exs[0].warnings[0].startswith("skipped ") and exs[1].warnings == ()
    assert exs[1].request["topic_data"][0]["partition_data"][0]["records"][0]["records"][2]["value"] == b"C" * 400_000


def test_a_reused_four_tuple_is_a_new_connection():
    first, second = _conversation(2), _conversation(2)
    later = [(t + 10**9, d) for t, d in second]             # same ports and ISNs, a second later
    exs = list(exchanges(io.BytesIO(pcap_bytes(first + later))))
    assert [(e.correlation_id, e.warnings) for e in exs] == [(0, ()), (1, ()), (0, ()), (1, ())]


def test_response_after_the_clients_fin_and_its_retransmission_is_paired():
    """A client that sends a request and half-closes, its FIN retransmitted, and
    the server's answer after both (seen with librdkafka against a busy broker):
    only a FIN from each side, or a RST, ends the connection."""
    req, resp = _produce(7, [b"late"])
    fin_ack = 0x11
    pkts = [(T0, tcp_packet(C, 40000, S, 9092, 999, flags=0x02)),
            (T0 + 1000, tcp_packet(C, 40000, S, 9092, 1000, req, ack=5000)),
            (T0 + 2000, tcp_packet(C, 40000, S, 9092, 1000 + len(req), flags=fin_ack, ack=5000)),
            (T0 + 3000, tcp_packet(C, 40000, S, 9092, 1000 + len(req), flags=fin_ack, ack=5000)),
            (T0 + 9000, tcp_packet(S, 9092, C, 40000, 5000, resp, ack=1001 + len(req))),
            (T0 + 9500, tcp_packet(C, 40000, S, 9092, 1001 + len(req), flags=0x04))]
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    assert [(e.correlation_id, e.api_name, e.warnings) for e in exs] == [(7, "Produce", ())]
    assert exs[0].response["responses"][0]["partition_responses"][0]["base_offset"] == 7
    assert exs[0].latency_ms == 0.008                       # request to response, in ms


def test_stdin_style_stream_and_gzip_bounded_chunks():
    import gzip
    data = gzip.compress(pcap_bytes(_conversation(3, link=276), link=276))
    dec = Decoder()
    got = []
    for i in range(0, len(data), 7):
        dec.feed(data[i:i + 7])
        got += dec.events()
    dec.close()
    got += dec.events()
    assert [e.correlation_id for e in got] == [0, 1, 2] and dec.notes == []


def test_tls_is_reported_not_decoded():
    hello = bytes.fromhex("160301") + (200).to_bytes(2, "big") + b"\x01" + b"\x00" * 199
    pkts = [(T0, tcp_packet(C, 40000, S, 9092, 0, hello))]
    (ex,) = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    assert (ex.api_name, ex.warnings) == ("TLS", ("TLS connection: encrypted, not decoded",))


def test_kafka_found_by_header_shape_on_another_port():
    pkts = [(t, d.replace((9092).to_bytes(2, "big"), (19093).to_bytes(2, "big"), 2))
            for t, d in _conversation(2)]
    assert [e.correlation_id for e in exchanges(io.BytesIO(pcap_bytes(pkts)), ports=[])] == [0, 1]


def _round_trips(pairs: list[tuple[bytes, bytes]]) -> list[tuple[int, bytes]]:
    """Request/response frames on one connection, with consistent sequence numbers."""
    pkts, cseq, sseq, ts = [], 0, 0, T0
    for req, resp in pairs:
        ts += 1000
        pkts.append((ts, tcp_packet(C, 40000, S, 9092, cseq, req, ack=sseq)))
        cseq += len(req)
        if resp:
            ts += 1000
            pkts.append((ts, tcp_packet(S, 9092, C, 40000, sseq, resp, ack=cseq)))
            sseq += len(resp)
    return pkts


def _json_lines(pkts) -> str:
    return "\n".join(json.dumps(e.to_json(), default=json_default)
                     for e in exchanges(io.BytesIO(pcap_bytes(pkts))))


TOKEN = b"\x00alice\x00s3cret-pw"


def test_sasl_plain_password_masked_in_sasl_authenticate():
    assert mask_plain_token(TOKEN) == b"\x00alice\x00********"
    pkts = _round_trips([
        (frame(encode_request(17, 1, 1, "c", {"mechanism": "PLAIN"})),
         frame(encode_response(17, 1, 1, {"error_code": 0, "mechanisms": ["PLAIN"]}))),
        (frame(encode_request(36, 2, 2, "c", {"auth_bytes": TOKEN})),
         frame(encode_response(36, 2, 2, {"error_code": 0, "error_message": None, "auth_bytes": b"",
                                          "session_lifetime_ms": 0}))),
    ])
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    assert [(e.api_name, e.warnings) for e in exs] == [("SaslHandshake", ()), ("SaslAuthenticate", ())]
    assert exs[1].request == {"auth_bytes": b"\x00alice\x00********"}
    out = _json_lines(pkts)
    assert "s3cret" not in out and "czNjcmV0" not in out


def test_sasl_handshake_v0_bare_token_masked():
    """SaslHandshake v0: the token then travels framed but without a Kafka header."""
    pkts = _round_trips([
        (frame(encode_request(17, 0, 1, "c", {"mechanism": "PLAIN"})),
         frame(encode_response(17, 0, 1, {"error_code": 0, "mechanisms": ["PLAIN"]}))),
        (frame(TOKEN), frame(b"")),
        (frame(encode_request(3, 1, 2, "c", {"topics": None})), b""),
    ])
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts))))
    assert [e.api_name for e in exs] == ["SaslHandshake", "SaslToken", None, "Metadata"]
    assert exs[1].request == {"mechanism": "PLAIN", "auth_bytes": b"\x00alice\x00********"}
    out = _json_lines(pkts)
    assert "s3cret" not in out and "czNjcmV0" not in out


def test_progress_bar_only_for_big_files_on_a_terminal(tmp_path):
    import os
    import pty
    import subprocess
    from kproto.tools.decode import PROGRESS_MIN_BYTES
    from tests.components import VENV_BIN
    pkts = _conversation(1)                           # one round trip, then non-Kafka filler
    filler = tcp_packet("10.9.9.9", 1, "10.9.9.8", 2, 0, b"\0" * 60000, link=1)
    pkts += [(T0 + 10**9 + i, filler) for i in range(PROGRESS_MIN_BYTES // 60000 + 2)]
    big = tmp_path / "big.pcap"
    big.write_bytes(pcap_bytes(pkts))

    def run(path, tty: bool) -> tuple[bytes, bytes]:
        master, slave = pty.openpty() if tty else (None, None)
        proc = subprocess.Popen([str(VENV_BIN / "kproto"), "decode", str(path)], stdout=subprocess.PIPE,
                                stderr=slave if tty else subprocess.PIPE)
        err = b""
        if tty:
            os.close(slave)
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                err += chunk
            os.close(master)
            out = proc.stdout.read()
        else:
            out, err = proc.communicate()
        proc.wait(timeout=60)
        proc.stdout.close()
        return out, err
    out_tty, err_tty = run(big, True)
    out_plain, err_plain = run(big, False)
    assert b"decoding" in err_tty and b"MB" in err_tty      # the bar, on the terminal only
    assert err_plain == b"" and out_tty == out_plain and b"Produce v9 #0" in out_plain
    small = tmp_path / "small.pcap"
    small.write_bytes(pcap_bytes(_conversation(1)))
    assert b"decoding" not in run(small, True)[1]


def test_corrupt_record_length_mid_file_keeps_what_came_before():
    good = pcap_bytes(_conversation(2))
    bad = good + (0).to_bytes(8, "little") + (0x7FFFFFFF).to_bytes(4, "little") + b"\0" * 8
    got = []
    with pytest.raises(CaptureError) as e:
        for ex in exchanges(io.BytesIO(bad)):
            got.append(ex.correlation_id)
    assert got == [0, 1]
    assert str(e.value) == f"<stream> @ byte {len(good) + 8}: packet record of 2147483647 bytes: corrupt length"


def test_control_batches_named_and_bad_crc_warned_in_a_fetch_response():
    from kproto.capture.jsonout import dumps
    from kproto.records import build_control_batch
    data = build_record_batch([NewRecord(b"k", b"v")])
    marker = build_control_batch(1, producer_id=7, producer_epoch=0, coordinator_epoch=3, base_offset=1)
    corrupt = bytearray(build_record_batch([NewRecord(b"k", b"x")], base_offset=2))
    corrupt[-2] ^= 1                                          # the value byte: CRC no longer matches
    req = encode_request(1, 12, 5, "c", {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000,
                                         "isolation_level": 1, "session_id": 0, "session_epoch": -1,
                                         "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0}]}]})
    resp = encode_response(1, 12, 5, {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "high_watermark": 3, "records": data + marker + bytes(corrupt) + data[:30]}]}]})
    pkts = _round_trips([(frame(req), frame(resp))])
    (ex,) = exchanges(io.BytesIO(pcap_bytes(pkts)))
    batches = ex.response["responses"][0]["partitions"][0]["records"]
    assert [b.get("control") for b in batches] == [False, True, False, None]
    assert batches[2]["records"][0]["value"] == b"y"
    assert batches[1]["records"][0]["control"] == {"type": "COMMIT", "coordinator_epoch": 3}
    assert [b.get("crc_valid") for b in batches] == [True, True, False, None]
    assert batches[3] == {"partial_batch_bytes": 30}           # a fetch may end mid-batch
    assert ex.warnings == ("topic t partition 0: batch at offset 2: crc mismatch "
                           f"(stored {batches[2]['crc']:#010x}, computed "
                           f"{__import__('crc32c').crc32c(bytes(corrupt[21:])):#010x})",)
    (fast,) = exchanges(io.BytesIO(pcap_bytes(pkts)), binary="json")
    assert dumps(fast.to_json()) == json.dumps(ex.to_json(), default=json_default, separators=(",", ":"))
    # records that do not decode: that batch says so, the others still decode
    broken = bytearray(corrupt)
    broken[-1] = 0x7F                                         # a header count past the end
    resp = encode_response(1, 12, 5, {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "high_watermark": 3, "records": bytes(broken) + data}]}]})
    (ex,) = exchanges(io.BytesIO(pcap_bytes(_round_trips([(frame(req), frame(resp))]))))
    batches = ex.response["responses"][0]["partitions"][0]["records"]
    assert [b["records"] is None for b in batches] == [True, False]
    assert "batch at offset 2: records do not decode" in ex.warnings[-1]
    (fast,) = exchanges(io.BytesIO(pcap_bytes(_round_trips([(frame(req), frame(resp))]))), binary="json")
    assert dumps(fast.to_json()) == json.dumps(ex.to_json(), default=json_default, separators=(",", ":"))


def test_decode_json_cli_output_is_json_dumps_of_the_exchanges(tmp_path):
    """`kproto decode --json` (batches and records pre-rendered, json's C encoder
    for the rest, one write per chunk) prints exactly json.dumps of each
    exchange decoded with bytes: every batch shape, null keys/values/header
    values, non-ASCII text, legacy message sets, a control batch, a cut batch."""
    import subprocess
    from kproto.compression import CompressionType
    from kproto.records import build_control_batch, build_message_set
    from tests.components import VENV_BIN
    recs = [NewRecord(None, b"v", [("h\u00e9", None), ("h", b"\x00\xff")]), NewRecord(b"k", None),
            NewRecord(b"k2", b'"quoted" \\ \n')]
    data = (build_record_batch(recs)
            + build_record_batch(recs, base_offset=3, compression=CompressionType.GZIP)
            + build_control_batch(0, producer_id=7, producer_epoch=0, coordinator_epoch=3, base_offset=6)
            + build_message_set([NewRecord(b"a", b"b")], magic=0, base_offset=7)
            + build_message_set([NewRecord(None, b"c")], magic=1, base_offset=8))
    fetch = encode_request(1, 4, 5, "c", {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000, "isolation_level": 0,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 9}]}]})
    resp = encode_response(1, 4, 5, {"throttle_time_ms": 0, "responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "error_code": 0, "high_watermark": 9, "last_stable_offset": 9,
         "aborted_transactions": [], "records": data + data[:25]}]}]})
    req, ok = _produce(1, [b"x" * 300, b""])
    path = tmp_path / "mixed.pcap"
    path.write_bytes(pcap_bytes(_round_trips([(frame(fetch), frame(resp)), (req, ok)])))
    want = [json.dumps(e.to_json(), default=json_default, separators=(",", ":")) for e in exchanges(path)]
    assert len(want) == 2 and '"partial_batch_bytes":25' in want[0] and '"compression":"gzip"' in want[0]
    out = subprocess.run([str(VENV_BIN / "kproto"), "decode", "--json", str(path)], capture_output=True,
                         timeout=60, check=True).stdout.decode("ascii")
    assert out == "".join(line + "\n" for line in want)


def test_decode_cli_leaves_the_collector_as_it_found_it(tmp_path):
    """The decode loop freezes start-up's objects and collects the young
    generation less often; afterwards (also in-process) the collector is back:
    same thresholds, nothing frozen, still enabled, and the output unchanged."""
    import gc
    from click.testing import CliRunner
    from kproto.tools.main import cli
    req, ok = _produce(1, [b"x" * 30])
    path = tmp_path / "one.pcap"
    path.write_bytes(pcap_bytes(_round_trips([(req, ok)])))
    before = gc.get_threshold()
    result = CliRunner().invoke(cli, ["decode", "--json", str(path)])
    assert result.exit_code == 0, result.output
    (ex,) = exchanges(path)
    assert result.output == json.dumps(ex.to_json(), default=json_default, separators=(",", ":")) + "\n"
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == (before, 0, True)


def test_iso_time_across_seconds():
    """The last second's text is reused: right when the second changes, and back."""
    from kproto.capture.kafka import iso_time
    stamps = [T0, T0 + 1, T0 + 999_999_999, T0 + 1_000_000_000, T0, 0, -1_000]
    assert [iso_time(t) for t in stamps] == [
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t // 10**9)) + f".{t % 10**9 // 1000:06d}Z"
        for t in stamps]


def test_request_header_v0_has_no_client_id():
    """ControlledShutdown v0, the one body with request header v0 (no client_id):
    the exchange pairs and decodes, client_id None."""
    import struct
    req = struct.pack(">hhi", 7, 0, 5) + struct.pack(">i", 1)           # key, version, corr; broker_id
    resp = struct.pack(">i", 5) + struct.pack(">hi", 0, 0)              # corr; error_code, no partitions
    (ex,) = exchanges(io.BytesIO(pcap_bytes(_round_trips([(frame(req), frame(resp))]))))
    assert (ex.api_name, ex.api_version, ex.correlation_id, ex.client_id) == ("ControlledShutdown", 0, 5, None)
    assert ex.request == {"broker_id": 1} and ex.warnings == ()
    assert ex.response == {"error_code": 0, "remaining_partitions": []}


def _null_where_required_pcap() -> bytes:
    """What tansu answers (CreateAcls v2, DescribeUserScramCredentials v0: results
    null, which Kafka's schemas do not allow), a non-flexible CreateAcls v1 answer
    likewise, a null user and credential_infos inside a result, and a Metadata v0
    request with null topics (nullable from v1 only)."""
    i32 = lambda n: n.to_bytes(4, "big", signed=True)
    acl = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:a",
           "host": "*", "operation": 3, "permission_type": 3}
    scram = frame(encode_request(50, 0, 3, "c", {"users": None}))
    metadata_v0 = encode_request(3, 0, 5, "c", {"topics": []})
    return pcap_bytes(_round_trips([
        # correlation id, header tags; throttle_time_ms; results: compact count 0 (null); tags
        (frame(encode_request(30, 2, 1, "c", {"creations": [acl]})), frame(i32(1) + b"\0" + i32(0) + b"\0\0")),
        (frame(encode_request(30, 1, 2, "c", {"creations": [acl]})), frame(i32(2) + i32(0) + i32(-1))),
        # throttle_time_ms, error_code, error_message null, results null, tags
        (scram, frame(i32(3) + b"\0" + i32(0) + b"\0\0" + b"\0" + b"\0" + b"\0")),
        # results: one (user null, error_code 0, error_message null, credential_infos null, tags)
        (scram[:11] + b"\x04" + scram[12:],
         frame(i32(4) + b"\0" + i32(0) + b"\0\0" + b"\0" + b"\x02" + b"\0" + b"\0\0" + b"\0" + b"\0" + b"\0" + b"\0")),
        (frame(metadata_v0[:-4] + i32(-1)), b""),
    ]))


_NULL_RULE = "null where the schema says non-nullable (versions 0+)"


def test_null_where_the_schema_forbids_it_is_shown_with_a_warning(tmp_path):
    """A capture decoder shows what was sent: a null (-1) string or array the
    schema calls non-nullable decodes as null, the rest of the body with it, and
    the exchange says which field broke which rule; JSON by the C writer as by
    json.dumps, and the text output says the same. Strict decoding still refuses."""
    from click.testing import CliRunner
    from kproto.capture.jsonout import dumps, dumps_bytes
    from kproto.errors import MalformedMessageError
    from kproto.protocol import decode_response
    from kproto.tools.main import cli
    path = tmp_path / "nulls.pcap"
    path.write_bytes(_null_where_required_pcap())
    exs = list(exchanges(path))
    acl = ('{"creations":[{"resource_type":2,"resource_name":"t","resource_pattern_type":3,'
           '"principal":"User:a","host":"*","operation":3,"permission_type":3}]}')
    head = '"connection":"10.0.0.1:40000 > 10.0.0.2:9092","api_key":%d,"api_name":"%s","api_version":%d,' \
           '"correlation_id":%d,"client_id":"c"'
    scram = 'DescribeUserScramCredentials v0 response: '
    want = [
        '{"ts":"2026-11-18T11:06:40.123457Z",' + head % (30, "CreateAcls", 2, 1) + ',"latency_ms":0.001,'
        '"request":' + acl + ',"response":{"throttle_time_ms":0,"results":null},'
        '"warnings":["CreateAcls v2 response: results: ' + _NULL_RULE + '"]}',
        '{"ts":"2026-11-18T11:06:40.123459Z",' + head % (30, "CreateAcls", 1, 2) + ',"latency_ms":0.001,'
        '"request":' + acl + ',"response":{"throttle_time_ms":0,"results":null},'
        '"warnings":["CreateAcls v1 response: results: ' + _NULL_RULE + '"]}',
        '{"ts":"2026-11-18T11:06:40.123461Z",' + head % (50, "DescribeUserScramCredentials", 0, 3)
        + ',"latency_ms":0.001,"request":{"users":null},'
        '"response":{"throttle_time_ms":0,"error_code":0,"error_message":null,"results":null},'
        '"warnings":["' + scram + 'results: ' + _NULL_RULE + '"]}',
        '{"ts":"2026-11-18T11:06:40.123463Z",' + head % (50, "DescribeUserScramCredentials", 0, 4)
        + ',"latency_ms":0.001,"request":{"users":null},'
        '"response":{"throttle_time_ms":0,"error_code":0,"error_message":null,"results":[{"user":null,'
        '"error_code":0,"error_message":null,"credential_infos":null}]},'
        '"warnings":["' + scram + 'results[0].user: ' + _NULL_RULE + '","' + scram
        + 'results[0].credential_infos: ' + _NULL_RULE + '"]}',
        '{"ts":"2026-11-18T11:06:40.123465Z",' + head % (3, "Metadata", 0, 5) + ',"latency_ms":null,'
        '"request":{"topics":null},"response":null,"warnings":["Metadata v0 request: topics: '
        'null where the schema says non-nullable (versions 0)","no response captured"]}',
    ]
    assert [dumps(e.to_json()) for e in exs] == want
    assert [dumps_bytes(e.to_json()).decode() for e in exs] == want      # the C writer, when built
    result = CliRunner().invoke(cli, ["decode", "--json", str(path)])
    assert (result.exit_code, result.output) == (0, "".join(w + "\n" for w in want))
    result = CliRunner().invoke(cli, ["decode", "-v", "--api", "DescribeUserScramCredentials", str(path)])
    assert result.output.splitlines()[-11:] == [
        "11:06:40.123463 10.0.0.1:40000 > 10.0.0.2:9092 DescribeUserScramCredentials v0 #4 0.001ms c ok",
        "  ! " + scram + "results[0].user: " + _NULL_RULE,
        "  ! " + scram + "results[0].credential_infos: " + _NULL_RULE,
        "  request:", "    users: null", "  response:", "    throttle_time_ms: 0", "    error_code: 0",
        "    error_message: null", "    results:",
        "      [0] user=null error_code=0 error_message=null credential_infos=null"]
    with pytest.raises(MalformedMessageError, match=r"results: invalid array count -1"):
        decode_response(30, 2, (1).to_bytes(4, "big") + b"\0" + bytes(4) + b"\0\0")
