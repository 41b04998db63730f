"""One capture session shared by the capture tests: real clients, real broker, tcpdump.

Debian's tcpdump records loopback traffic while confluent-kafka, kcat,
kafka-python (also pinned to the 0.9/0.10 protocol: MessageSet v0/v1) and
aiokafka produce (every codec), consume in groups and call admin APIs
against ``kproto serve``. A second broker sits behind a small
proxy (it rewrites the broker's port in Metadata answers) that re-chunks every byte stream into 1-7 byte writes, so PDUs span
many segments and segment edges fall inside length prefixes.

Files written (``Session``): ``lo.pcap`` (Ethernet link type, µs),
``nano.pcap`` (ns timestamps), ``any.pcap`` (``-i any``: LINUX_SLL2) and
``lo.pcapng`` (lo.pcap through editcap). ``sent`` holds every record each
client was given, by topic, as (key, value, headers).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.components import free_port, kproto_broker, require_executable, stop

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
Record = tuple  # (key, value, headers tuple)


@dataclass
class Session:
    dir: Path
    port: int                       # the broker clients reach directly
    proxied_port: int               # the second broker (behind the proxy)
    proxy_port: int
    sent: dict[str, list[Record]] = field(default_factory=dict)

    @property
    def ports(self) -> list[int]:
        return [self.port, self.proxy_port]


# --- tcpdump ----------------------------------------------------------------------

@contextlib.contextmanager
def tcpdump(out: Path, iface: str, expr: str, *extra: str):
    exe = require_executable("tcpdump", "apt-get install tcpdump (make test does)")
    proc = subprocess.Popen([exe, "-i", iface, "-U", "--immediate-mode", "-B", "32768", "-n", "-Z", "root", "-w", str(out), *extra,
                             *expr.split()], stderr=subprocess.PIPE, start_new_session=True)
    try:
        lines = []
        while not lines or b"listening" not in lines[-1]:   # "listening on lo": armed
            lines.append(proc.stderr.readline())
            if not lines[-1] or len(lines) > 5:
                raise RuntimeError(f"tcpdump did not start: {b''.join(lines)!r}")
        yield proc
    finally:
        time.sleep(0.3)                        # the last packets reach the ring buffer
        stop(proc)
        proc.stderr.close()


# --- the re-chunking proxy ---------------------------------------------------------

class Rechunker:
    """Forwards 127.0.0.1:listen to 127.0.0.1:target, writing 1-7 bytes at a
    time (then 200-1500) with Nagle off, so each write is its own TCP segment.
    The broker's own port in Metadata/FindCoordinator answers is rewritten to
    ``listen`` (the role of Kafka's advertised.listeners), so clients stay on
    the proxy after bootstrap."""

    def __init__(self, listen: int, target: int) -> None:
        self.listen, self.target = listen, target
        self.sock = socket.create_server(("127.0.0.1", listen))
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.rng = random.Random(13)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for s in (client, upstream):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            asked: dict[int, tuple[int, int]] = {}
            threading.Thread(target=self._pump, args=(client, upstream, asked, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, asked, False), daemon=True).start()

    def _rewrite(self, frame: bytes, asked: dict, request: bool) -> bytes:
        from kproto.protocol import API_KEYS, decode_request_header, decode_response, encode_response
        if request:
            header, _ = decode_request_header(frame)
            asked[header.correlation_id] = (header.request_api_key, header.request_api_version)
            return frame
        key, version = asked.pop(int.from_bytes(frame[:4], "big"))
        if API_KEYS[key].name not in ("Metadata", "FindCoordinator"):
            return frame
        header, body = decode_response(key, version, frame)
        for node in [body] + list(body.get("brokers") or ()) + list(body.get("coordinators") or ()):
            if node.get("port") == self.target:
                node["port"] = self.listen
        return encode_response(key, version, header.correlation_id, body)

    def _pump(self, src: socket.socket, dst: socket.socket, asked: dict, request: bool) -> None:
        from kproto.framing import FrameReader, frame
        reader = FrameReader()
        src.settimeout(0.2)
        try:
            while not self.stop.is_set():
                try:
                    data = src.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                reader.feed(data)
                out = b"".join(frame(self._rewrite(f, asked, request)) for f in reader.frames())
                pos = 0
                while pos < len(out):
                    n = self.rng.randint(1, 7) if pos < 64 else self.rng.randint(200, 1500)
                    dst.sendall(out[pos:pos + n])
                    pos += n
                    time.sleep(0.0002)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)


# --- the clients ---------------------------------------------------------------------

def _records(topic: str, n: int, *, headers: bool = True, size: int = 0) -> list[Record]:
    out = []
    for i in range(n):
        value = f"{topic}-value-{i}-".encode() * (1 + size // 20)
        hdrs = (("trace", f"t{i}".encode()), ("empty", b"")) if headers else ()
        out.append((f"{topic}-k{i}".encode(), value[:size] if size else value, hdrs))
    return out


def _confluent(bs: str, sent: dict, proxied_bs: str) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic("cf-admin", 2, 1)]).values():
        f.result(15)
    admin.list_topics(timeout=10)
    for f in admin.delete_topics(["cf-admin"]).values():
        f.result(15)
    for codec in CODECS:
        topic = f"cf-{codec}"
        p = ck.Producer({"bootstrap.servers": bs, "compression.type": codec, "linger.ms": 5})
        sent[topic] = _records(topic, 20)
        for k, v, h in sent[topic]:
            p.produce(topic, key=k, value=v, headers=list(h))
        assert p.flush(15) == 0
    # through the re-chunking proxy: big values, so PDUs span many segments
    p = ck.Producer({"bootstrap.servers": proxied_bs, "linger.ms": 5})
    sent["px"] = _records("px", 10, size=3000)
    for k, v, h in sent["px"]:
        p.produce("px", key=k, value=v, headers=list(h))
    assert p.flush(15) == 0
    c = ck.Consumer({"bootstrap.servers": proxied_bs, "group.id": "px-g", "auto.offset.reset": "earliest"})
    _consume_confluent(c, "px", 10)
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "cf-g", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    _consume_confluent(c, "cf-zstd", 20)


def _consume_confluent(c, topic: str, n: int) -> None:
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 20
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    c.close()
    assert got == n, f"{topic}: consumed {got} of {n}"


def _kcat(bs: str, sent: dict) -> None:
    kcat = require_executable("kcat", "apt-get install kcat (make test does)")
    sent["kc"] = [(f"kc-k{i}".encode(), f"kc-v{i}".encode(), (("src", b"kcat"),)) for i in range(10)]
    lines = "".join(f"kc-k{i}:kc-v{i}\n" for i in range(10))
    subprocess.run([kcat, "-b", bs, "-P", "-t", "kc", "-K:", "-H", "src=kcat", "-z", "gzip"],
                   input=lines.encode(), check=True, timeout=30)
    out = subprocess.run([kcat, "-b", bs, "-C", "-t", "kc", "-o", "beginning", "-e", "-q", "-K:"],
                         capture_output=True, check=True, timeout=30).stdout
    assert out.count(b"\n") == 10, out


def _kafka_python(bs: str, sent: dict) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bs)
    admin.create_topics([NewTopic("kp-admin", 1, 1)])
    admin.list_groups()
    admin.describe_cluster()
    admin.close()
    # Client ids named here: kafka-python's defaults count up across the whole test process.
    for n, (version, codec, topic) in enumerate((((0, 9), None, "kp09"), ((0, 9), "gzip", "kp09z"),
                                                 ((0, 10), None, "kp10"), ((0, 10), "snappy", "kp10z")), 1):
        p = KafkaProducer(bootstrap_servers=bs, client_id=f"kafka-python-producer-{n}", api_version=version,
                          compression_type=codec, linger_ms=5)
        sent[topic] = _records(topic, 10, headers=False)
        for k, v, _ in sent[topic]:
            p.send(topic, key=k, value=v)
        p.flush(15)
        p.close()
    c = KafkaConsumer(bootstrap_servers=bs, api_version=(0, 10), consumer_timeout_ms=5000,
                      auto_offset_reset="earliest")
    c.assign([TopicPartition("kp10z", 0)])
    assert len(list(c)) == 10
    c.close()
    p = KafkaProducer(bootstrap_servers=bs, client_id="kafka-python-producer-5", compression_type="snappy",
                      linger_ms=5)
    sent["kp"] = _records("kp", 20)
    for k, v, h in sent["kp"]:
        p.send("kp", key=k, value=v, headers=list(h))
    p.flush(15)
    p.close()
    c = KafkaConsumer("kp", bootstrap_servers=bs, group_id="kp-g", auto_offset_reset="earliest",
                      consumer_timeout_ms=6000)
    got = 0
    for _ in c:
        got += 1
        if got == 20:
            break
    c.commit()
    c.close()
    assert got == 20


def _aiokafka(bs: str, sent: dict) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, client_id="aiokafka-producer-1", compression_type="lz4", linger_ms=5)
        await p.start()
        sent["aio"] = _records("aio", 20)
        try:
            for k, v, h in sent["aio"]:
                await p.send("aio", key=k, value=v, headers=list(h))
            await p.flush()
        finally:
            await p.stop()
        c = AIOKafkaConsumer("aio", bootstrap_servers=bs, group_id="aio-g", auto_offset_reset="earliest")
        await c.start()
        got = 0
        try:
            async with asyncio.timeout(20):
                async for _ in c:
                    got += 1
                    if got == 20:
                        break
            await c.commit()
        finally:
            await c.stop()
        assert got == 20
    asyncio.run(run())


def run_session(tmp: Path) -> Session:
    """Brokers up, tcpdumps armed, every client run, captures written."""
    proxy_port = free_port()
    for d in ("b1", "b2"):
        (tmp / d).mkdir(exist_ok=True)
    # b1 as Kafka 3.9, the last release that still served kafka-python's 0.9 and 0.10
    # protocols (ListOffsets v0, Fetch v0-3: Kafka 4.0 removed them, KIP-896)
    with kproto_broker(tmp / "b1", "group.initial.rebalance.delay.ms=0", kafka_version="3.9") as bs, \
            kproto_broker(tmp / "b2", "group.initial.rebalance.delay.ms=0") as bs2:
        port, port2 = int(bs.rsplit(":", 1)[1]), int(bs2.rsplit(":", 1)[1])
        s = Session(tmp, port, port2, proxy_port)
        expr = f"tcp port {port} or tcp port {proxy_port}"
        with tcpdump(tmp / "lo.pcap", "lo", expr), \
                tcpdump(tmp / "nano.pcap", "lo", expr, "--time-stamp-precision=nano"), \
                tcpdump(tmp / "any.pcap", "any", f"tcp port {port}"), \
                Rechunker(proxy_port, port2):
            proxied = f"127.0.0.1:{proxy_port}"
            _confluent(bs, s.sent, proxied)
            _kcat(bs, s.sent)
            _kafka_python(bs, s.sent)
            _aiokafka(bs, s.sent)
    editcap = require_executable("editcap", "apt-get install tshark (make test does)")
    subprocess.run([editcap, "-F", "pcapng", str(tmp / "lo.pcap"), str(tmp / "lo.pcapng")], check=True)
    return s


# --- a small writer, for synthetic captures -------------------------------------------

def tcp_packet(src: str, sport: int, dst: str, dport: int, seq: int, payload: bytes = b"", *,
               flags: int = 0x18, ack: int = 0, link: int = 1) -> bytes:
    """One TCP segment over IPv4 or IPv6 (by the address), framed for ``link``
    (0 NULL, 1 Ethernet, 101 raw, 113 SLL, 276 SLL2). Checksums are left 0:
    decoders of captures do not check them (offloading makes them wrong anyway)."""
    import ipaddress
    import struct
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq % (1 << 32), ack, 5 << 4, flags, 65535, 0, 0) + payload
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version == 4:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, a.packed, b.packed) + tcp
        ethertype, family = 0x0800, 2
    else:
        ip = struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64, a.packed, b.packed) + tcp
        ethertype, family = 0x86DD, 30
    if link == 1:
        return b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb" + ethertype.to_bytes(2, "big") + ip
    if link == 0:
        return family.to_bytes(4, "little") + ip
    if link == 101:
        return ip
    if link == 113:
        return struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, ethertype) + ip
    if link == 276:
        return struct.pack(">HHIHBB8s", ethertype, 0, 1, 772, 0, 6, b"\x00" * 8) + ip
    raise ValueError(link)


def pcap_bytes(packets: list[tuple[int, bytes]], *, link: int = 1, nano: bool = False,
               order: str = "<", snaplen: int = 65535) -> bytes:
    """A classic pcap file: packets are (ts_ns, data); data longer than
    ``snaplen`` is cut as tcpdump -s would."""
    import struct
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link)]
    for ts, data in packets:
        sec, ns = divmod(ts, 1_000_000_000)
        cap = data[:snaplen]
        out.append(struct.pack(order + "IIII", sec, ns if nano else ns // 1000, len(cap), len(data)) + cap)
    return b"".join(out)


def pcapng_bytes(sections: list[dict], *, order: str = "<") -> bytes:
    """pcapng: each section {"interfaces": [(link, tsresol)], "packets": [(iface, ts_ns, data)],
    "simple": [data]}; tsresol is the if_tsresol byte (6 = µs, 9 = ns, 0x80|n = 2^-n)."""
    import struct

    def block(btype: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        n = len(body) + 12
        return struct.pack(order + "II", btype, n) + body + struct.pack(order + "I", n)

    out = []
    for sec in sections:
        out.append(block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1)))
        for link, resol in sec["interfaces"]:
            opt = struct.pack(order + "HH", 9, 1) + bytes([resol]) + b"\x00" * 3 + struct.pack(order + "HH", 0, 0)
            out.append(block(1, struct.pack(order + "HHI", link, 0, 0) + opt))
        out.append(block(4, b"\x00" * 4))        # a name resolution block, to be skipped
        for iface, ts, data in sec.get("packets", ()):
            resol = sec["interfaces"][iface][1]
            units = ts * (1 << (resol & 0x7F)) // 10**9 if resol & 0x80 else ts // 10 ** (9 - resol)
            out.append(block(6, struct.pack(order + "IIIII", iface, units >> 32, units & 0xFFFFFFFF,
                                            len(data), len(data)) + data))
        for data in sec.get("simple", ()):
            out.append(block(3, struct.pack(order + "I", len(data)) + data))
    return b"".join(out)
