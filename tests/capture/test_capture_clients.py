"""``kproto decode`` on real captures: tcpdump recording real clients against
``kproto serve`` (tests/capture/capture_session.py), checked against what the clients
sent and against tshark's own reading of the same files."""

from __future__ import annotations

import collections
import gzip
import io
import json
import subprocess
from pathlib import Path

import pytest

from kproto.capture import exchanges
from kproto.capture.pcap import PacketReader
from tests.capture.capture_session import CODECS, pcap_bytes, run_session
from tests.components import VENV_BIN, require_executable

# Warnings a healthy capture may carry, each for a reason the test checks elsewhere:
# a client closed its connection while a request was pending (the broker's answer
# is then cut: only its size prefix, or nothing, was sent), and librdkafka's
# Metadata v12 trailing bytes (brokers.md).
ALLOWED = ("no response captured", "of a frame the capture does not hold in full",
           "bytes after the request body (ignored, as Kafka does)")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return run_session(tmp_path_factory.mktemp("capture"))


@pytest.fixture(scope="module")
def lo(session):
    return list(exchanges(session.dir / "lo.pcap", ports=session.ports))


def _name(ex, t: dict) -> str:
    """A topic's name; Fetch v13+ names topics by id, resolved from Metadata seen earlier."""
    return t.get("name") or t.get("topic") or ex.topic_names[t["topic_id"]]


def _records(exs, side: str) -> dict[str, list[tuple]]:
    """topic -> [(key, value, headers)] in every RECORDS field of that side."""
    out = collections.defaultdict(list)
    for ex in exs:
        body = getattr(ex, side)
        if not body or ex.api_name not in ("Produce", "Fetch"):
            continue
        for t in body.get("topic_data") or body.get("responses") or ():
            for p in t.get("partition_data") or t.get("partitions") or ():
                for batch in p.get("records") or ():
                    for r in batch.get("records", ()):
                        out[_name(ex, t)].append((r["key"], r["value"], tuple(r["headers"])))
    return out


def test_every_pdu_decodes(lo):
    assert len(lo) > 100
    for ex in lo:
        for w in ex.warnings:
            assert any(a in w for a in ALLOWED), (ex.api_name, w)
        if ex.api_key is not None:
            assert ex.request is not None, ex
            assert ex.response is not None or "no response captured" in ex.warnings, ex
    apis = {ex.api_name for ex in lo}
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "FindCoordinator", "JoinGroup", "SyncGroup",
            "Heartbeat", "OffsetFetch", "OffsetCommit", "CreateTopics", "DeleteTopics", "ListGroups",
            "DescribeCluster", "InitProducerId", "ListOffsets"} <= apis


def test_records_equal_what_the_clients_sent(lo, session):
    produced = _records(lo, "request")
    for topic, sent in session.sent.items():
        assert sorted(set(produced[topic])) == sorted(sent), topic
    fetched = _records(lo, "response")
    for topic in ("cf-zstd", "px", "kc", "kp10z", "kp", "aio"):         # the topics consumed
        assert sorted(set(fetched[topic])) == sorted(session.sent[topic]), topic


def test_every_codec_magic_and_crc(lo):
    batches = collections.defaultdict(set)          # as the clients wrote them
    for ex in lo:
        for side in (ex.request, ex.response):     # CRCs checked both ways, codecs on Produce
            if ex.api_name not in ("Produce", "Fetch") or not side:
                continue
            for t in side.get("topic_data") or side.get("responses") or ():
                for p in t.get("partition_data") or t.get("partitions") or ():
                    for b in p.get("records") or ():
                        if "magic" in b:
                            assert b["crc_valid"], (_name(ex, t), b)
                            if side is ex.request:
                                batches[_name(ex, t)].add((b["magic"], b["compression"]))
    # librdkafka may send a small batch (one split off by linger.ms) uncompressed although a
    # codec is set: seen here for kcat -z gzip in 2 runs of 5; the records still compare equal above
    for topic, codec in [(f"cf-{c}", c) for c in CODECS] + [("kc", "gzip")]:
        assert (2, codec) in batches[topic] and batches[topic] <= {(2, codec), (2, "none")}, topic
    # kafka-python pinned to the 0.9 / 0.10 protocol: MessageSet v0 / v1
    assert batches["kp09"] == {(0, "none")} and batches["kp09z"] == {(0, "gzip")}
    assert batches["kp10"] == {(1, "none")} and batches["kp10z"] == {(1, "snappy")}
    assert batches["aio"] == {(2, "lz4")} and batches["kp"] == {(2, "snappy")}


def test_rechunked_pdus_span_many_segments(lo, session):
    proxied = [ex for ex in lo if ex.connection.server.endswith(f":{session.proxy_port}")]
    assert {"Produce", "Fetch", "JoinGroup"} <= {ex.api_name for ex in proxied}
    reader = PacketReader()
    reader.feed((session.dir / "lo.pcap").read_bytes())
    segments = 0
    while (p := reader.next_packet()) is not PacketReader and hasattr(p, "data"):
        if len(p.data) > 66 and session.proxy_port.to_bytes(2, "big") in p.data[34:38]:
            segments += 1
    frames = sum(1 for ex in proxied for n in (ex.request_size, ex.response_size) if n)
    assert segments > 3 * frames     # 1-7 byte writes: edges fall inside size prefixes


def _tshark(path: Path, ports: list[int]) -> tuple[list, list]:
    """(requests, responses) tshark decodes: (client port, key, version, corr) and
    (client port, key, corr), from ``tshark -T json``."""
    tshark = require_executable("tshark", "apt-get install tshark (make test does)")
    cmd = [tshark, "-r", str(path), "-T", "json", "-Y", "kafka"]
    for p in ports:
        cmd += ["-d", f"tcp.port=={p},kafka"]
    for f in ("tcp.srcport", "tcp.dstport", "kafka.request_key", "kafka.request.version",
              "kafka.correlation_id", "kafka.response_key"):
        cmd += ["-e", f]
    frames = json.loads(subprocess.run(cmd, capture_output=True, check=True, timeout=120).stdout)
    requests, responses = [], []
    for f in frames:
        L = f["_source"]["layers"]
        corr = [int(c) for c in L.get("kafka.correlation_id", [])]
        if "kafka.request_key" in L:
            port = int(L["tcp.srcport"][0])
            for k, v, c in zip(L["kafka.request_key"], L["kafka.request.version"], corr):
                requests.append((port, int(k), int(v), c))
        elif "kafka.response_key" in L and len(L["kafka.response_key"]) == len(corr):
            port = int(L["tcp.dstport"][0])
            responses += [(port, int(k), c) for k, c in zip(L["kafka.response_key"], corr)]
    return requests, responses


def _port(ex) -> int:
    return int(ex.connection.client.rsplit(":", 1)[1])


def test_matches_tshark_on_every_frame_tshark_decodes(lo, session):
    requests, responses = _tshark(session.dir / "lo.pcap", session.ports)
    ours_req = [(_port(ex), ex.api_key, ex.api_version, ex.correlation_id) for ex in lo if ex.api_key is not None]
    assert sorted(ours_req) == sorted(requests)               # every request header, same count
    ours_resp = {(_port(ex), ex.api_key, ex.correlation_id) for ex in lo if ex.response is not None}
    assert set(responses) <= ours_resp
    assert len(ours_resp) > len(set(responses))              # and we decode what tshark cannot


def test_pcapng_and_nanosecond_files_decode_the_same(lo, session):
    def key(exs):
        return [(str(e.connection), e.api_key, e.correlation_id, e.request, e.response, e.warnings)
                for e in exs]
    ng = list(exchanges(session.dir / "lo.pcapng", ports=session.ports))
    assert key(ng) == key(lo) and [e.ts_ns for e in ng] == [e.ts_ns for e in lo]
    # a second tcpdump, in ns: same exchanges, timestamps within 2 ms of the first's
    # (each capture socket stamps a loopback packet as it receives it: a few µs
    # apart on an idle machine, more when the other tcpdump waits for a core)
    nano = list(exchanges(session.dir / "nano.pcap", ports=session.ports))
    assert key(nano) == key(lo)
    assert all(abs(a.ts_ns - b.ts_ns) < 2_000_000 for a, b in zip(nano, lo))
    assert any(e.ts_ns % 1000 for e in nano)                  # real ns precision came through


def test_sll2_any_interface_capture(session):
    data = (session.dir / "any.pcap").read_bytes()
    assert int.from_bytes(data[20:24], "little") == 276        # LINUX_SLL2
    exs = list(exchanges(session.dir / "any.pcap", ports=[session.port]))
    produced = _records(exs, "request")
    for topic in ("cf-none", "cf-lz4", "kc", "kp09", "kp10z", "aio"):
        assert sorted(set(produced[topic])) == sorted(session.sent[topic])
    # `-i any` may miss packets; each gap we report is one tshark reports as lost
    tshark = require_executable("tshark", "apt-get install tshark (make test does)")
    lost = subprocess.run([tshark, "-r", str(session.dir / "any.pcap"), "-Y", "tcp.analysis.lost_segment",
                           "-T", "fields", "-e", "frame.number"], capture_output=True, check=True,
                          timeout=60).stdout.split()
    gaps = [w for e in exs for w in e.warnings if "not captured before this frame" in w]
    assert len(gaps) == len(lost)


def test_capture_picked_up_mid_stream(lo, session):
    """The first 40% of the packets cut off: no SYNs for the connections then
    open; every exchange completed after the cut still decodes."""
    reader = PacketReader()
    reader.feed((session.dir / "lo.pcap").read_bytes())
    pkts = []
    while hasattr(p := reader.next_packet(), "data"):
        pkts.append((p.ts_ns, p.data))
    cut = pkts[len(pkts) * 4 // 10][0]
    exs = list(exchanges(io.BytesIO(pcap_bytes(pkts[len(pkts) * 4 // 10:])), ports=session.ports))
    later = {(str(e.connection), e.correlation_id) for e in lo if e.ts_ns > cut + 10**6 and e.api_key is not None}
    got = {(str(e.connection), e.correlation_id) for e in exs if e.request is not None}
    assert later <= got


# --- the command line ------------------------------------------------------------------

def _kproto(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "kproto"), "decode", *args], input=stdin, capture_output=True,
                          timeout=120)


def test_cli_json_lines(lo, session):
    r = _kproto("--json", "-p", str(session.port), "-p", str(session.proxy_port), str(session.dir / "lo.pcap"))
    assert r.returncode == 0 and r.stderr == b""
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == len(lo)
    assert set(rows[0]) == {"ts", "connection", "api_key", "api_name", "api_version", "correlation_id",
                            "client_id", "latency_ms", "request", "response", "warnings"}
    produce = next(r for r in rows if r["api_name"] == "Produce" and "kc" in json.dumps(r["request"]))
    batch = produce["request"]["topic_data"][0]["partition_data"][0]["records"][0]
    import base64
    assert base64.b64decode(batch["records"][0]["key"]) == b"kc-k0"
    assert batch["records"][0]["headers"] == [["src", base64.b64encode(b"kcat").decode()]]


def test_fast_json_writer_equals_json_dumps(lo, session):
    """kproto.capture.jsonout (records pre-rendered) writes what json.dumps would."""
    from kproto.capture import json_default
    from kproto.capture.jsonout import dumps
    fast = [dumps(e.to_json()) for e in exchanges(session.dir / "lo.pcap", ports=session.ports, binary="json")]
    slow = [json.dumps(e.to_json(), default=json_default, separators=(",", ":")) for e in lo]
    assert fast == slow


def test_cli_lines_filters_and_stats(session):
    path = str(session.dir / "lo.pcap")
    ports = ["-p", str(session.port), "-p", str(session.proxy_port)]
    out = _kproto(*ports, "--api", "produce", "--topic", "kp10z", path).stdout.decode().splitlines()
    assert len(out) == 1 and " Produce v2 #2 " in out[0] and out[0].endswith("ok kp10z[0] 10 records")
    errs = _kproto(*ports, "--errors-only", path).stdout.decode().splitlines()
    assert errs and all("MEMBER_ID_REQUIRED" in line for line in errs if not line.startswith("  "))
    cid = _kproto(*ports, "--client-id", "aiokafka-producer-1", path).stdout.decode().splitlines()
    assert cid and all("aiokafka-producer-1" in line for line in cid if not line.startswith("  "))
    stats = _kproto(*ports, "--stats", path).stdout.decode()
    assert "Produce" in stats and "MEMBER_ID_REQUIRED" in stats and "kafka-python-producer-1: " in stats
    verbose = _kproto(*ports, "-v", "--api", "Produce", "--topic", "kc", path).stdout.decode()
    assert "key=b'kc-k3' value=b'kc-v3' headers=[[src, b'kcat']]" in verbose.replace("('src', b'kcat')", "[src, b'kcat']")


def test_cli_gzip_on_stdin_equals_the_file(session):
    raw = (session.dir / "lo.pcap").read_bytes()
    ports = ["-p", str(session.port), "-p", str(session.proxy_port)]
    a = _kproto("--json", *ports, str(session.dir / "lo.pcap")).stdout
    b = _kproto("--json", *ports, "-", stdin=gzip.compress(raw)).stdout
    assert a == b and a


def test_cli_bad_input_is_one_line(tmp_path, session):
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"GET / HTTP/1.1\r\n" * 4)
    r = _kproto(str(junk))
    assert r.returncode == 4 and r.stdout == b""
    assert r.stderr.decode() == f"kproto: error: {junk} @ byte 0: not a pcap or pcapng file (magic 47455420)\n"
    cut = tmp_path / "cut.pcap"
    raw = (session.dir / "lo.pcap").read_bytes()
    cut.write_bytes(raw[:len(raw) // 2])
    r = _kproto("-p", str(session.port), str(cut))
    assert r.returncode == 0 and r.stdout
    assert r.stderr.decode().startswith(f"kproto decode: {cut}: @ byte ") and b"Traceback" not in r.stderr
    r = _kproto("--api", "Prodcue", str(cut))
    assert (r.returncode, r.stdout, r.stderr) == (2, b"", b"kproto decode: --api: no API named 'Prodcue' "
                                                            b"in kproto's registry\n")
    empty = tmp_path / "nokafka.pcap"
    empty.write_bytes(pcap_bytes([(10**18, b"\x00" * 60)]))
    r = _kproto(str(empty))
    assert r.returncode == 0 and r.stdout == b""
    assert r.stderr.decode() == (f"kproto decode: {empty}: no Kafka traffic found (1 packets, 0 TCP connections; "
                                 "Kafka ports looked for: 9092)\n")
