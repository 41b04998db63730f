"""Helpers the test modules share, in one place (no test module imports another).

Sections: the group coordinator harness (a fake clock, a fake log), dump-log
segments built from kafka-python's record builders and running the command,
log test helpers, and the protocol strategies derived from the field tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import struct
import time
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import crc32c
import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CKNewTopic
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kproto.client.admin import Admin, OffsetAndMetadata
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.framing import frame
from kproto.records import NewRecord, build_record_batch
from kproto.schemas import consumer_offsets as CO
from kproto import protocol as P
from kproto.schemas.message import ArrayOf, Scalar, Sized, Struct
from kproto.schemas import transaction_log as TL
from kproto.server.txn_coordinator import (
    InitProducerIdRequest, TransactionConfig, TransactionCoordinator, TransactionState, WriteTxnMarkers,
)
from kproto.server.txn_coordinator.persistence import transaction_log_key
from kproto.server.coordinator import (
    CoordinatorConfig, GroupCoordinator, GroupState, HeartbeatRequest, JoinGroupRequest,
    JoinGroupRequestProtocol, OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    OffsetFetchRequest, OffsetFetchRequestTopic, Pending, SyncGroupRequest, SyncGroupRequestAssignment,
)
from kproto.tools.main import cli


# --- waiting on an event a test is not told of ----------------------------------------------

def until(predicate, *, timeout: float = 60.0, what: str = "the condition"):
    """Poll ``predicate`` until it is true (a log line, a counter, a closed
    socket) and return its value; ``timeout`` is only a safety net."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        time.sleep(0.02)
    return value


async def until_async(predicate, *, timeout: float = 60.0, what: str = "the condition"):
    """``until`` inside an event loop (the server under test runs in it)."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:g} s")
        await asyncio.sleep(0.01)
    return value


# --- the group coordinator, driven with a fake clock ----------------------------------------

E = ErrorCode
SESSION = 1_000
REBALANCE = 2_000
DELAY = 50


def subscription(*topics: str) -> bytes:
    return CO.ConsumerProtocolSubscription.build({"version": 0, "data": {"topics": list(topics)}})


def assignment(topic: str, *partitions: int) -> bytes:
    return CO.ConsumerProtocolAssignment.build({"version": 0, "data": {
        "assigned_partitions": [{"topic": topic, "partitions": list(partitions)}], "user_data": None}})


def protocols(*names: str, topics: tuple[str, ...] = ("t",)) -> tuple[JoinGroupRequestProtocol, ...]:
    return tuple(JoinGroupRequestProtocol(name=n, metadata=subscription(*topics)) for n in names)


class _HeldAppends:
    """What both coordinator harnesses do with appends held back
    (``auto_append=False``): the test completes them, or fails them."""

    def release(self, error: ErrorCode = ErrorCode.NONE) -> None:
        held, self.held = self.held, []
        for append in held:
            if error is ErrorCode.NONE:
                self.log[append.partition].extend(append.records)
            self.c.append_done(append.id, self.now, error)
        self.pump()


class Harness(_HeldAppends):
    def __init__(self, *, auto_append: bool = True, uuids: bool = False, **config) -> None:
        settings = dict(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=DELAY)
        settings.update(config)
        counter = itertools.count(1)
        self.c = GroupCoordinator(CoordinatorConfig(**settings),
                                  uuid_factory=None if uuids else (lambda: f"u{next(counter)}"))
        self.now = 0
        self.auto_append = auto_append
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.held = []
        self.done: dict[Pending, object] = {}

    def send(self, request):
        r = self.c.handle(request, self.now)
        self.pump()
        if isinstance(r, Pending) and r in self.done:
            return self.done.pop(r)
        return r

    def pump(self) -> None:
        """What the server's loop does after every call: append, report, poll,
        until nothing is left (timers fired by poll may append more)."""
        while True:
            self.done.update(self.c.poll(self.now))
            appends = self.c.take_appends()
            if not appends:
                return
            for append in appends:
                if self.auto_append:
                    self.log[append.partition].extend(append.records)
                    self.c.append_done(append.id, self.now)
                else:
                    self.held.append(append)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.pump()

    def settle(self, handles) -> None:
        """Let the initial delay (and its extensions) run out."""
        for _ in range(1000):
            if all(x in self.done for x in handles):
                return
            self.advance(DELAY)
        raise AssertionError("rebalance never completed")

    def result(self, handle: Pending):
        assert handle in self.done, f"{handle} not answered"
        return self.done.pop(handle)

    def state(self, group_id: str = "g") -> GroupState | None:
        group = self.c.group(group_id)
        return None if group is None else group.state

    # --- client moves ---------------------------------------------------------------

    def join(self, member_id: str = "", *, group: str = "g", client: str = "client", instance: str | None = None,
             protos=None, session: int = SESSION, rebalance: int = REBALANCE, **kw):
        return self.send(JoinGroupRequest(
            group_id=group, member_id=member_id, group_instance_id=instance, client_id=client,
            client_host="/127.0.0.1", session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            protocol_type=kw.pop("protocol_type", "consumer"), protocols=protos or protocols("range"), **kw))

    def new_member(self, client: str = "client", group: str = "g", **kw):
        """KIP-394: the first join hands out an id, the second joins with it."""
        first = self.join(group=group, client=client, **kw)
        assert first.error_code == E.MEMBER_ID_REQUIRED
        return self.join(first.member_id, group=group, client=client, **kw)

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             group: str = "g", **kw):
        return self.send(SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                                          assignments=tuple(SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                            for m, a in (assignments or {}).items()), **kw))

    def heartbeat(self, member_id: str, generation: int, group: str = "g", instance: str | None = None):
        return self.send(HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                                          group_instance_id=instance)).error_code

    def commit(self, offsets: dict[tuple[str, int], int], *, group: str = "g", generation: int = -1,
               member_id: str = "", metadata: str = "", **kw):
        topics: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata))
        return self.send(OffsetCommitRequest(
            group_id=group, generation_id=generation, member_id=member_id,
            topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items()),
            **kw))

    def fetch(self, group: str = "g", topics: dict[str, tuple[int, ...]] | None = None):
        return self.send(OffsetFetchRequest(group_id=group, topics=None if topics is None else tuple(
            OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items())))

    def stable_group(self, n: int = 2, *, group: str = "g", statics: bool = False, **join):
        """n members joined and synced; returns (member ids, generation), leader first."""
        handles = []
        for i in range(n):
            if statics:
                handles.append(self.join(group=group, client=f"c{i}", instance=f"i{i}", **join))
            else:
                handles.append(self.new_member(client=f"c{i}", group=group, **join))
        self.settle(handles)
        joins = [self.result(h) for h in handles]
        generation = joins[0].generation_id
        leader = joins[0].leader
        ids = [j.member_id for j in joins]
        assert ids[0] == leader
        followers = [self.sync(m, generation, group=group) for m in ids[1:]]
        done = self.sync(leader, generation, {m: assignment("t", i) for i, m in enumerate(ids)}, group=group)
        assert done.error_code == E.NONE
        for f in followers:
            assert self.result(f).error_code == E.NONE
        assert self.state(group) is GroupState.STABLE
        return ids, generation


def fetched(response) -> dict[tuple[str, int], tuple[int, int, str]]:
    assert response.error_code == E.NONE
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata)
            for t in response.topics for p in t.partitions if p.error_code == E.NONE}


def commit_errors(response) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


# --- dump-log segments and runs ---------------------------------------------------------

SEGMENT = "00000000000000000000.log"


# --- third-party bytes -------------------------------------------------------------------

def _stamp(batch: bytes, base_offset: int, leader_epoch: int | None = None) -> bytes:
    """What the broker does on append: base offset (and v2 leader epoch), both outside the CRC."""
    data = bytearray(batch)
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    if leader_epoch is not None:
        data[12:16] = leader_epoch.to_bytes(4, "big", signed=True)
    return bytes(data)


def v2_batch(base_offset, records, *, pid=-1, epoch=-1, seq=-1, txn=False, leader_epoch=0,
             codec=0, control=False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, 1 << 20)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    data = bytearray(builder.build())
    if control:      # kafka-python writes no control batches: set the bit, redo the CRC-32C
        data[21:23] = (int.from_bytes(data[21:23], "big") | 0x20).to_bytes(2, "big")
        data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return _stamp(bytes(data), base_offset, leader_epoch)


def legacy_batch(magic, records, *, codec=0, wrapper_offset=None) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for offset, ts, key, value in records:
        builder.append(offset, ts, key, value)
    data = bytes(builder.build())
    return data if wrapper_offset is None else _stamp(data, wrapper_offset)


# The gzip batches, as kafka-python 3.0.12 built them (DefaultRecordBatchBuilder /
# LegacyRecordBatchBuilder, codec gzip: gzip_encode at level 9, header mtime 0),
# then stamped: base offset 4 and leader epoch 3; wrapper offset 14. Kept as
# bytes because gzip output differs between zlib builds. The records inside:
#   V2_GZIP:     (1700000000300, b"g1", b"zip-" + b"a" * 40, [])
#                (1700000000301, b"g2", b"zip-" + b"b" * 40, [("a", b"1"), ("b", None)])
#   LEGACY_GZIP: v1 (0, 1700000000400, b"c", b"p"), (1, 1700000000401, b"d", b"q")
V2_GZIP = bytes.fromhex(
    "00000000000000040000006800000003026e710a2d0001000000010000018bcfe5692c0000018bcf"
    "e5692dffffffffffffffffffffffffffff000000021f8b08000000000002ffcb6060606049378ca8"
    "ca2cd04d24123094313031b1a41b8135251109589812990c9992180129c0bac671000000"
)
LEGACY_GZIP = bytes.fromhex(
    "000000000000000e00000052ddb83ee201010000000000000000ffffffff0000003c1f8b08000000"
    "000002ff6360800389ba2562018c400663f7f9a79913408c64105100950749495cd538b90fae6622"
    "889102220a0158768ce148000000"
)


def v2_segment() -> bytes:
    return b"".join([
        v2_batch(0, [(1700000000100, b"k", b"hello", []),
                     (1700000000123, None, b"world", [("trace", b"x")])]),
        v2_batch(2, [(1700000000150, b"k2", None, [])], pid=4000, epoch=0, seq=5, txn=True,
                 leader_epoch=3),
        v2_batch(3, [(1700000000200, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07", [])],
                 pid=4000, epoch=0, txn=True, leader_epoch=3, control=True),
        V2_GZIP,
    ])


def legacy_segment() -> bytes:
    return b"".join([
        legacy_batch(1, [(10, 1700000000300, b"a", b"x"), (11, 1700000000301, None, b"yy")]),
        legacy_batch(0, [(12, None, b"b", b"z")]),
        LEGACY_GZIP,
    ])


# --- running ---------------------------------------------------------------------------

def run_dump_log(*args: str):
    return run_command("dump-log", None, *args)


def write_segment(tmp_path: Path, data: bytes, name: str = SEGMENT) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- the log ------------------------------------------------------------------------------

class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def one_batch(i: int, ts: int | None = None, **kw) -> bytes:
    return build_record_batch([NewRecord(b"k%d" % i, b"v" * 20, (), 1000 + 10 * i if ts is None else ts)], **kw)


def index_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]


def time_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)]


# --- protocol values from the field tables ---------------------------------------------------

PROTOCOL_SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
PROTOCOL_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def plain(value):
    """Containers -> dicts, keeping ``_unknown`` (Container.__eq__ skips it)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


@lru_cache(maxsize=None)
def _type_strategy(t, version: int, flexible: bool):
    if isinstance(t, Scalar):
        if t.kafka in _INTS:
            bits = _INTS[t.kafka]
            return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if t.kafka == "uint16":
            return st.integers(0, 0xFFFF)
        if t.kafka == "float64":
            return st.floats(allow_nan=False)   # NaN != NaN; its bytes round-trip all the same
        return st.booleans() if t.kafka == "bool" else st.uuids()
    if isinstance(t, Sized):
        return PROTOCOL_TEXT if t.text else st.binary(max_size=8)
    if isinstance(t, ArrayOf):
        return st.lists(_type_strategy(t.elem, version, flexible), max_size=2)
    return values(t, version, flexible)


@lru_cache(maxsize=None)
def values(spec: Struct, version: int, flexible: bool):
    """Values of ``spec`` at ``version``, shaped as decoding returns them."""
    fields = {}
    for f in spec.fields:
        if not f.present(version):
            fields[f.name] = st.builds(f.default_value)
            continue
        s = _type_strategy(f.type, version, flexible)
        if f.nullable_in(version):
            s = st.none() | s
        if f.tagged_in(version):
            s = st.builds(f.default_value) | s
        fields[f.name] = s
    base = st.fixed_dictionaries(fields)
    if not flexible:
        return base
    known = {f.tag for f in spec.fields if f.tag is not None}
    unknown = st.dictionaries(st.integers(0, 300).filter(lambda t: t not in known),
                              st.binary(max_size=5), max_size=2)
    return st.tuples(base, unknown).map(lambda p: {**p[0], "_unknown": p[1]} if p[1] else p[0])


PROTOCOL_CASES = [pytest.param(spec, v, kind, id=f"{spec.name}-v{v}-{kind}")
         for spec in P.API_KEYS.values() for v in spec.versions for kind in ("request", "response")]


# Frames whose writer encoded tagged fields at their default value.
DEFAULT_TAGS_WRITTEN = {
    "api_versions_response_v3_tansu-0.6.0_000", "api_versions_response_v4_tansu-0.6.0_000",
    "create_topics_response_v7_tansu-0.6.0_000", "fetch_response_v16_tansu-0.6.0_000",
}

# Frames with bytes after the body, which Kafka's readers ignore (so the
# broker does: decode_request(allow_trailing=True)): stem -> how many.
TRAILING_BYTES = {
    # librdkafka 2.16 ends AlterUserScramCredentials v0 with one more 0 byte
    # after the request's tag buffer.
    "alter_user_scram_credentials_request_v0_librdkafka-2.16.0_000": 1,
}

# Frames that break Kafka's schema: stem -> (byte position, why). kproto must
# refuse them with a located error, as Kafka's readers would.
WRITER_BUGS = {
    "describe_user_scram_credentials_response_v0_tansu-0.6.0_000":
        (13, "tansu 0.6.0 writes a null results array; Kafka's schema has no nullable versions"),
}


# --- the topics and groups commands, in process -----------------------------------------------

def run_command(command: str, bootstrap: str | None, *args: str):
    """`kproto <command> [--bootstrap-server B] ...` in process: (exit status, stdout, stderr)."""
    full = [command] + (["--bootstrap-server", bootstrap] if bootstrap else []) + list(args)
    result = CliRunner().invoke(cli, full, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def kt(bootstrap: str | None, *args: str):
    return run_command("topics", bootstrap, *args)


def kg(bootstrap: str | None, *args: str):
    return run_command("groups", bootstrap, *args)


def topics_ok(bootstrap: str, *args: str) -> str:
    status, out, err = kt(bootstrap, *args)
    assert (status, err) == (0, ""), (status, err)
    return out


def groups_ok(bootstrap: str, *args: str) -> str:
    status, out, err = kg(bootstrap, *args)
    assert (status, err) == (0, ""), (status, out, err)
    return out


@contextlib.contextmanager
def admin(bootstrap: str):
    with BrokerClient(bootstrap) as client:
        a = Admin(client)
        try:
            yield a
        finally:
            a.close()


def commit(bootstrap: str, group: str, offsets: dict) -> None:
    with admin(bootstrap) as a:
        result = a.offset_commit(group, {tp: OffsetAndMetadata(o) for tp, o in offsets.items()})
    assert set(result.values()) == {0}, result


def committed(bootstrap: str, group: str) -> dict:
    with admin(bootstrap) as a:
        return {tp: o.offset for tp, o in a.offset_fetch(group).items()}


def topic_configs(kind: str, bs: str, topic: str) -> dict:
    """The topic's set configs. kafka-topics prints the non-default ones;
    tansu reports every stored config with source DEFAULT_CONFIG (so Kafka's
    tool, and kproto's, print none), so there read them through the admin client."""
    if kind == "kproto":
        return json.loads(topics_ok(bs, "--describe", "--topic", topic, "--output", "json"))[0]["configs"]
    from kproto.client.admin import Admin, ConfigResource
    from kproto.client.transport import BrokerClient
    with BrokerClient(bs) as client:
        answer = Admin(client).describe_configs([ConfigResource(2, topic)])[ConfigResource(2, topic)]
    return {e.name: e.value for e in answer.entries}


# --- raw requests and confluent-kafka admin ----------------------------------------------------

def create_topic(bootstrap: str, name: str, **configs: str) -> None:
    """A one-partition topic through confluent-kafka's AdminClient."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([CKNewTopic(name, 1, 1, config=configs)])[name].result(timeout=10)


def until_served(bootstrap: str, topic: str, *, present: bool = True) -> None:
    """Wait until the broker's Metadata shows ``topic`` with a leader for every partition
    (or, ``present=False``, no longer lists it). Kafka's controller answers CreateTopics and
    DeleteTopics once committed; its broker serves the change once its metadata log got
    there. kproto's answers after the change, so this returns at once."""
    a = AdminClient({"bootstrap.servers": bootstrap})

    def served() -> bool:
        if not present:      # every topic: asking for this one would auto-create it again
            return topic not in a.list_topics(timeout=10).topics
        t = a.list_topics(topic, timeout=10).topics.get(topic)
        return t is not None and t.error is None and bool(t.partitions) and all(
            p.leader >= 0 for p in t.partitions.values())
    until(served, what=f"{topic} {'served' if present else 'gone'} in Metadata")


def exchange_raw(bootstrap: str, request: bytes) -> bytes:
    """Send one request frame (its size prefix included) on a new connection; the
    response's bytes after its size prefix."""
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        size = int.from_bytes(_recv(s, 4), "big")
        return _recv(s, size)


def request_raw(bootstrap: str, api_key: int, version: int, body: dict):
    """One request encoded by kproto's codec, at exactly ``version``; the decoded response."""
    reply = exchange_raw(bootstrap, frame(P.encode_request(api_key, version, 1, "raw", body)))
    return P.decode_response(api_key, version, reply)[1]


def produce_raw(bootstrap: str, topic: str, partition: int, records: bytes, version: int = 9):
    """One Produce request with ``records`` as given; the partition's response."""
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    return request_raw(bootstrap, P.produce.API.key, version, body).responses[0].partition_responses[0]


def fetch_raw(bootstrap: str, topic: str, partition: int, fetch_offset: int = 0):
    """One Fetch v12 from ``fetch_offset``; the partition's response."""
    body = {"max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "fetch_offset": fetch_offset, "partition_max_bytes": 1 << 20}]}]}
    return request_raw(bootstrap, P.fetch.API.key, 12, body).responses[0].partitions[0]


def _recv(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int | None = None,
             timeout: float = 10.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, end, quiet_since = [], time.monotonic() + timeout, time.monotonic()
    try:
        while time.monotonic() < end:
            m = c.poll(0.1)
            if m is None:
                if (expect is None or len(got) >= expect) and time.monotonic() - quiet_since > 1.0:
                    break
                continue
            quiet_since = time.monotonic()
            if not m.error():
                got.append(m.value())
    finally:
        c.close()
    return got


# --- the transaction coordinator, driven with a fake clock -----------------------------------

class TxnHarness(_HeldAppends):
    def __init__(self, *, auto_append: bool = True, auto_markers: bool = True, **config) -> None:
        settings = dict(transaction_abort_timed_out_transaction_cleanup_interval_ms=100,
                        transaction_remove_expired_transaction_cleanup_interval_ms=100,
                        transaction_max_timeout_ms=10**9)
        settings.update(config)
        ids = itertools.count(1000)
        self.c = TransactionCoordinator(TransactionConfig(**settings), allocate_producer_id=lambda: next(ids))
        self.now = 0
        self.auto_append = auto_append
        self.auto_markers = auto_markers
        self.log: dict[int, list] = defaultdict(list)
        self.held: list = []
        self.held_markers: list[WriteTxnMarkers] = []
        self.markers: list[WriteTxnMarkers] = []          # every order taken, in order
        self.written: list[tuple[WriteTxnMarkers, tuple]] = []
        self.done: dict[Pending, object] = {}

    def send(self, request):
        r = self.c.handle(request, self.now)
        self.pump()
        if isinstance(r, Pending) and r in self.done:
            return self.done.pop(r)
        return r

    def pump(self) -> None:
        while True:
            self.done.update(self.c.poll(self.now))
            appends, markers = self.c.take_appends(), self.c.take_markers()
            if not appends and not markers:
                return
            for a in appends:
                if self.auto_append:
                    self.log[a.partition].extend(a.records)
                    self.c.append_done(a.id, self.now)
                else:
                    self.held.append(a)
            for m in markers:
                self.markers.append(m)
                if self.auto_markers:
                    self.written.append((m, m.partitions))
                    self.c.markers_done(m.id, self.now)
                else:
                    self.held_markers.append(m)

    def write_markers(self, fail=lambda tp: False) -> None:
        held, self.held_markers = self.held_markers, []
        for m in held:
            failed = [tp for tp in m.partitions if fail(tp)]
            self.written.append((m, tuple(tp for tp in m.partitions if tp not in failed)))
            self.c.markers_done(m.id, self.now, failed)
        self.pump()

    def advance(self, ms: int) -> None:
        self.now += ms
        self.pump()

    def init(self, txn_id: str = "t", timeout: int = 60_000, pid: int = -1, epoch: int = -1):
        return self.send(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout,
                                               producer_id=pid, producer_epoch=epoch))

    def state(self, txn_id: str = "t") -> TransactionState | None:
        meta = self.c.transaction(txn_id)
        return None if meta is None else meta.state


def loaded_txn_record(txn_id: str, state: TransactionState, pid: int = 1000, epoch: int = 0, timeout: int = 60_000,
                  partitions=(("a", 0),), start: int = 0):
    value = TL.TransactionLogValue.build({"version": 0, "data": {
        "producer_id": pid, "producer_epoch": epoch, "transaction_timeout_ms": timeout,
        "transaction_status": state.id,
        "transaction_partitions": [{"topic": t, "partition_ids": [p]} for t, p in partitions],
        "transaction_last_update_timestamp_ms": start, "transaction_start_timestamp_ms": start}})
    return transaction_log_key(txn_id), value


# --- the sweep ----------------------------------------------------------------------------
