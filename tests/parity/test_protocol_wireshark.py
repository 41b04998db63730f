"""The ZooKeeper-era APIs (keys 4-7), read back by Wireshark's Kafka dissector.

No codec available to the tests writes LeaderAndIsr, StopReplica,
UpdateMetadata or ControlledShutdown (Kafka 4.0 removed them with ZooKeeper),
so test_protocol_thirdparty.py cannot check them on third-party bytes. The
other direction is checked here: kproto encodes a request and a response of
every version, with every field set (tests/protocol_samples.sample), they
go into a pcap as one loopback TCP conversation with port 9092, and tshark
4.0 (Debian's, installed by ``make test``) dissects them. Every frame must
dissect without a malformed-packet error, and the values Wireshark shows for
the fields below must be the ones kproto wrote, in order.

Wireshark 4.0 dissects LeaderAndIsr v0-4, StopReplica v0-2, UpdateMetadata
v0-6 and ControlledShutdown v0-3 (it says "Unsupported ... version" above
those). It misreads UpdateMetadata v0-3: it reads ``offline_replicas`` in
every version, where Kafka's UpdateMetadataRequest.json has them from v4
(``"versions": "4+"``); those four versions are listed in WIRESHARK_BUGS and
checked to fail exactly there.
"""

from __future__ import annotations

import itertools
import struct
import subprocess

import pytest

from kproto import protocol as P
from kproto.schemas.message import ArrayOf, Struct
from tests.components import require_executable
from tests.protocol_samples import sample

READS = {4: range(5), 5: range(3), 6: range(4, 7), 7: range(4)}
WIRESHARK_BUGS = {(6, v): "Wireshark 4.0 reads offline_replicas before v4" for v in range(4)}

# Wireshark field -> the kproto (Kafka) field names it shows; Kafka renamed
# LeaderAndIsr's zk_version to partition_epoch, and StopReplica v1-2 lists
# partition_indexes where Wireshark shows one partition_id each.
FIELDS = {"kafka.controller_epoch": ("controller_epoch",),
          "kafka.zk_version": ("zk_version", "partition_epoch"),
          "kafka.leader_epoch": ("leader_epoch",), "kafka.broker_epoch": ("broker_epoch",),
          "kafka.partition_id": ("partition_index", "partition_indexes"),
          "kafka.error": ("error_code",)}


def _pcap(frames: list[tuple[bool, bytes]]) -> bytes:
    """A classic pcap: Ethernet/IPv4/TCP, client 127.0.0.1:50000 <-> 127.0.0.2:9092."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    seq = {True: 1000, False: 5000}
    for i, (to_broker, frame) in enumerate(frames):
        payload = struct.pack(">i", len(frame)) + frame
        ports = (50000, 9092) if to_broker else (9092, 50000)
        hosts = (b"\x7f\0\0\x01", b"\x7f\0\0\x02") if to_broker else (b"\x7f\0\0\x02", b"\x7f\0\0\x01")
        tcp = struct.pack(">HHIIBBHHH", *ports, seq[to_broker], seq[not to_broker], 0x50, 0x18, 65535, 0, 0)
        seq[to_broker] += len(payload)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), i, 0, 64, 6, 0, *hosts)
        packet = b"\0" * 12 + b"\x08\x00" + ip + tcp + payload
        out += struct.pack("<IIII", 1_700_000_000 + i, 0, len(packet), len(packet)) + packet
    return bytes(out)


def _values(struct_: Struct, version: int, value, names: tuple) -> list:
    """Every value of the fields called one of ``names`` in ``value``, in wire order."""
    out = []
    for f in struct_.fields:
        if not f.present(version) or f.tagged_in(version):
            continue
        v = value[f.name]
        inner = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        if f.name in names:
            out.extend(v if isinstance(v, list) else [v])
        elif isinstance(inner, Struct) and v is not None:
            for e in (v if isinstance(f.type, ArrayOf) else [v]):
                out.extend(_values(inner, version, e, names))
    return out


CASES = [(key, v) for key, versions in READS.items() for v in versions] + sorted(WIRESHARK_BUGS)


@pytest.fixture(scope="module")
def dissected(tmp_path_factory):
    tshark = require_executable("tshark", "make test installs the Debian package tshark")
    frames, expected = [], []
    for n, (key, version) in enumerate(CASES, start=1):
        spec = P.API_KEYS[key]
        for kind in ("request", "response"):
            schema = getattr(spec, f"{kind}_schema")
            value = sample(schema, version, itertools.count(n * 100), nulls=False)
            frame = (P.encode_request(key, version, n, "kproto", value) if kind == "request"
                     else P.encode_response(key, version, n, value))
            frames.append((kind == "request", frame))
            expected.append((key, version, kind, schema, value))
    path = tmp_path_factory.mktemp("ws") / "zk-era.pcap"
    path.write_bytes(_pcap(frames))
    columns = ["frame.number", "kafka.api_key", "kafka.api_version", "kafka.correlation_id",
               "_ws.malformed", *FIELDS]
    out = subprocess.run([tshark, "-r", str(path), "-T", "fields", "-E", "separator=|",
                          "-E", "occurrence=a", *(a for c in columns for a in ("-e", c))],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [dict(zip(columns, line.split("|"))) for line in out.splitlines()]
    assert len(rows) == len(expected)
    return {(key, version, kind): (row, schema, value)
            for row, (key, version, kind, schema, value) in zip(rows, expected)}


@pytest.mark.parametrize("key, version", CASES, ids=lambda x: str(x))
@pytest.mark.parametrize("kind", ["request", "response"])
def test_wireshark_reads_kprotos_bytes(dissected, key, version, kind):
    row, schema, value = dissected[(key, version, kind)]
    if (key, version) in WIRESHARK_BUGS:
        assert kind == "response" or row["_ws.malformed"], "Wireshark was fixed: drop WIRESHARK_BUGS"
        return
    assert not row["_ws.malformed"], row
    if kind == "request":       # the dissector names a response by its request
        assert (row["kafka.api_key"], row["kafka.api_version"]) == (str(key), str(version))
    for theirs, ours in FIELDS.items():
        shown = [x for x in row[theirs].split(",") if x]
        assert shown == [str(x) for x in _values(schema, version, value, ours)], (theirs, ours)
