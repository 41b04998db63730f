"""Faults from the environment, made real: a data dir on a 2 MB tmpfs that fills
up. Appends answer KAFKA_STORAGE_ERROR for the partition, nothing half-written
stays in the log, everything else keeps serving, and appends resume in the
space the failed one left once there is room again. (A read-only remount is
refused by the kernel while the broker holds segments open for writing, so a
read-only data dir cannot be made real here; it takes the same path, an
OSError on write.)"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch
from tests.components import kproto_broker
from tests.helpers import produce_raw
from tests.helpers import create_topic as create


@pytest.fixture
def tmpfs(tmp_path):
    """A 2 MB tmpfs (the test runs as root, as `make test` does: it installs Debian packages)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (needs root, as make test runs): {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def remount(mnt, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(mnt)], check=True)


def consume(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "fetch.message.max.bytes": 1 << 20})
    c.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 20
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.offset(), m.value()))
    c.close()
    return got


def batch_of(i: int) -> bytes:
    return build_record_batch([NewRecord(b"k", os.urandom(100_000) + b"%d" % i)])


def test_disk_full(tmpfs, tmp_path):
    with kproto_broker(tmp_path, data_dir=tmpfs / "data") as bs:
        create(bs, "filling")
        create(bs, "other")
        acked, reply = [], None
        for i in range(40):
            data = batch_of(i)
            reply = produce_raw(bs, "filling", 0, data)
            if reply.error_code:
                break
            acked.append((reply.base_offset, data))
        assert reply.error_code == ErrorCode.KAFKA_STORAGE_ERROR, reply
        assert "No space left on device" in reply.error_message
        assert 5 < len(acked) < 25
        assert [o for o, _ in acked] == list(range(len(acked)))
        segment = tmpfs / "data" / "filling-0" / "00000000000000000000.log"
        assert segment.stat().st_size == sum(len(d) for _, d in acked)     # no half batch left behind
        # the broker serves on: every acknowledged record reads back, the rest of the log is whole
        got = consume(bs, "filling", len(acked))
        assert [o for o, _ in got] == list(range(len(acked)))
        # space back: the next append takes the next offset, in the space the failed one left
        remount(tmpfs, "size=8m")
        reply = produce_raw(bs, "filling", 0, batch_of(99))
        assert (reply.error_code, reply.base_offset) == (0, len(acked))
        assert [o for o, _ in consume(bs, "filling", len(acked) + 1)] == list(range(len(acked) + 1))
        assert produce_raw(bs, "other", 0, batch_of(1)).error_code == 0


@pytest.mark.parametrize("damage", ["zero-filled", "truncated"])
def test_a_segment_damaged_while_stopped_is_recovered(tmp_path, damage):
    """kill -9, then the segment's tail zero-filled (a power cut on some file
    systems) or cut mid-batch: the next start truncates at the first invalid
    batch, rebuilds the indexes, logs the bytes dropped and serves the rest."""
    import signal
    from tests.components import VENV_BIN, free_port, wait_for_port
    data = tmp_path / "data"
    port = free_port()
    cmd = [str(VENV_BIN / "kproto"), "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(data)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, timeout=30, proc=proc)
        bs = f"127.0.0.1:{port}"
        create(bs, "t")
        sizes = [len(batch_of(0))] * 10
        for i in range(10):
            assert produce_raw(bs, "t", 0, batch_of(i)).error_code == 0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    segment = data / "t-0" / "00000000000000000000.log"
    assert segment.stat().st_size == sum(sizes)
    keep = sum(sizes[:7])
    with open(segment, "r+b") as f:
        if damage == "zero-filled":
            f.seek(keep)
            f.write(b"\0" * (sum(sizes) - keep))
        else:
            f.truncate(keep + 500)
    with kproto_broker(tmp_path, data_dir=data) as bs:
        assert [o for o, _ in consume(bs, "t", 7)] == list(range(7))
        assert produce_raw(bs, "t", 0, batch_of(99)).base_offset == 7
    log_text = "".join(f.read_text() for f in tmp_path.glob("kproto-*.log"))
    dropped = (sum(sizes) if damage == "zero-filled" else keep + 500) - keep
    assert f"Truncated {dropped} invalid bytes at the end of segment {segment} during recovery" in log_text
