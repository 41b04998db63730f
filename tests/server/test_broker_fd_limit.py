"""A client must not be able to use up the broker's file descriptors (issue 10):
a broker started under ``ulimit -n 256`` serves 600 partitions (1,800 segment
files) with every record produced coming back, holding exactly its pool's 128
segment files open; and when accept() does hit EMFILE the open connections
carry on and accepting resumes once descriptors are free."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.errors import ErrorCode
from kproto.framing import frame
from kproto.records import NewRecord, build_record_batch
from kproto import protocol as P
from kproto.testing import Broker
from tests.components import kproto_broker
from tests.helpers import create_topic, fetch_raw, produce_raw

TOPICS, PARTITIONS = 6, 100
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def serve(tmp_path: Path, nofile: int) -> Broker:
    """The broker under ``prlimit --nofile``, which sets the limit on itself and
    execs the broker: the same pid, the limit inherited."""
    return Broker(tmp_path / "data", log_path=tmp_path / "broker.log", log_level="warning",
                  prefix=["prlimit", f"--nofile={nofile}:{nofile}"])


def open_files(pid: int) -> list[str]:
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return out


def segment_files(pid: int, data: Path) -> list[str]:
    return [f for f in open_files(pid) if f.startswith(str(data)) and f.endswith(SEGMENT_SUFFIXES)]


def test_600_partitions_produce_and_fetch_under_256_descriptors(tmp_path):
    with serve(tmp_path, 256) as proc:
        bootstrap = proc.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [f"fd{t}" for t in range(TOPICS)]
        for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics],
                                     operation_timeout=60).values():
            f.result()
        errors = []
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        for t in topics:
            for p in range(PARTITIONS):
                producer.produce(t, value=f"{t}/{p}".encode(), partition=p,
                                 on_delivery=lambda err, msg: err and errors.append(err))
        assert producer.flush(120) == 0 and errors == []
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fd", "enable.auto.commit": False})
        consumer.assign([TopicPartition(t, p, 0) for t in topics for p in range(PARTITIONS)])
        got: dict[tuple[str, int], list[bytes]] = {}
        deadline = time.monotonic() + 120
        while sum(map(len, got.values())) < TOPICS * PARTITIONS and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                assert m.error() is None, m.error()
                got.setdefault((m.topic(), m.partition()), []).append(m.value())
        assert got == {(t, p): [f"{t}/{p}".encode()] for t in topics for p in range(PARTITIONS)}
        # With no fetch in flight (an in-flight region keeps its file open past the
        # cap, by design), the pool holds exactly its cap: 1,800 segment files
        # exist, and half of 256 are open.
        consumer.close()
        data = tmp_path / "data"
        assert sum(1 for d in data.iterdir() if d.name.startswith("fd")) == TOPICS * PARTITIONS
        assert len(segment_files(proc.pid, data)) == 128
        # New connections are accepted and answered.
        for _ in range(5):
            fresh = AdminClient({"bootstrap.servers": bootstrap})
            assert set(topics) <= set(fresh.list_topics(timeout=10).topics)
        assert len(open_files(proc.pid)) < 128 + 40      # the pool, a few connections, the runtime's own


def ask(s: socket.socket, correlation_id: int) -> None:
    s.sendall(frame(P.encode_request(P.api_versions.API.key, 0, correlation_id, "fd", {})))


def answer(s: socket.socket) -> int:
    """The correlation id of the next response."""
    size = int.from_bytes(_exactly(s, 4), "big")
    return int.from_bytes(_exactly(s, size)[:4], "big")


def _exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def test_accept_at_emfile_keeps_serving_and_resumes(tmp_path):
    with serve(tmp_path, 64) as proc:
        port = proc.port
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]   # the kernel's backlog takes them
        for i, s in enumerate(socks):
            ask(s, i)
        answered, waiting = [], []
        for i, s in enumerate(socks):
            s.settimeout(1.5)
            try:
                assert answer(s) == i
                answered.append(s)
            except TimeoutError:
                waiting.append((i, s))
        assert len(open_files(proc.pid)) == 64 and waiting and len(answered) + len(waiting) == 80
        assert "out of system resource" in (tmp_path / "broker.log").read_text()
        for i, s in enumerate(answered):        # the accepted connections are still served
            ask(s, 1000 + i)
            assert answer(s) == 1000 + i
        for s in answered:
            s.close()
        for i, s in waiting:                   # accepted once descriptors are free (asyncio retries every 1 s)
            s.settimeout(10)
            assert answer(s) == i
            ask(s, 2000 + i)
            assert answer(s) == 2000 + i
            s.close()


def test_a_segment_file_that_cannot_reopen_is_a_storage_error_for_its_partition(tmp_path):
    with kproto_broker(tmp_path, "log.max.open.files=3") as bootstrap:
        create_topic(bootstrap, "gone")
        batch = build_record_batch([NewRecord(b"k", b"v", (), 1)])
        assert produce_raw(bootstrap, "gone", 0, batch).error_code == 0
        create_topic(bootstrap, "kept")                 # its 3 new files close gone-0's
        assert produce_raw(bootstrap, "kept", 0, batch).error_code == 0
        (tmp_path / "kproto-data" / "gone-0" / "00000000000000000000.log").unlink()
        assert fetch_raw(bootstrap, "gone", 0).error_code == ErrorCode.KAFKA_STORAGE_ERROR
        kept = fetch_raw(bootstrap, "kept", 0)                        # the broker serves on
        on_disk = (tmp_path / "kproto-data" / "kept-0" / "00000000000000000000.log").read_bytes()
        assert (kept.error_code, kept.high_watermark, bytes(kept.records)) == (0, 1, on_disk)
        assert len(on_disk) == len(batch)
