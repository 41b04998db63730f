"""Faults from the environment, made real: a data dir on a 2 MB tmpfs that fills
up, and a partition dir on an ext4 file system that turns read-only under the
running broker. Appends answer KAFKA_STORAGE_ERROR for the partition, nothing
half-written stays in the log, everything else keeps serving, and appends
resume in the space the failed one left once there is room again.

`mount -o remount,ro` is refused (EBUSY) while the broker holds segments open
for writing; ext4 mounted errors=remount-ro is not: a file system error
(/sys/fs/ext4/<dev>/trigger_fs_error, what a failing disk or a corrupt block
causes) aborts the journal and makes it read-only at once, open files or not,
and every write then fails with EROFS."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.errors import ErrorCode
from kproto.log.log import KafkaStorageError
from kproto.records import NewRecord, build_record_batch
from kproto.testing import Broker
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


def consume(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                  "fetch.message.max.bytes": 1 << 20})
    c.assign([TopicPartition(topic, partition, 0)])
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
    # the broker said why, once (the refused append, the consume, the append after: no more)
    errors = [line[24:] for f in tmp_path.glob("kproto-*.log") for line in f.read_text().splitlines()
              if line[24:].startswith("ERROR")]
    assert errors == [
        f"ERROR kproto.log: Error while appending records for filling-0 to {segment}: [Errno 28] No space "
        "left on device (KAFKA_STORAGE_ERROR to every append until one succeeds; those failures are not logged)"]


def run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(cmd)}: {done.stderr.strip()} (needs root and e2fsprogs, as make test has)")
    return done.stdout.strip()


class Ext4:
    """A 32 MB ext4 image on a loop device, mounted errors=remount-ro."""

    def __init__(self, image: Path) -> None:
        image.write_bytes(b"")
        os.truncate(image, 32 << 20)
        run("mkfs.ext4", "-q", "-F", str(image))
        self.device = run("losetup", "--find", "--show", str(image))
        self.mountpoint: Path | None = None

    def mount(self, at: Path) -> None:
        at.mkdir()
        run("mount", "-t", "ext4", "-o", "errors=remount-ro", self.device, str(at))
        self.mountpoint = at
        (at / "lost+found").rmdir()     # the broker would take it for a stray dir

    def fail(self) -> None:
        """A file system error: ext4 aborts its journal and goes read-only."""
        trigger = Path("/sys/fs/ext4") / Path(self.device).name / "trigger_fs_error"
        if not trigger.exists():
            pytest.fail(f"{trigger} is missing: this kernel's ext4 cannot be told to fail")
        trigger.write_text("kproto test: the disk under a partition failed\n")
        with pytest.raises(OSError) as e:
            (self.mountpoint / "probe").write_bytes(b"x")
        assert e.value.errno == errno.EROFS

    def repair(self) -> None:
        """What an operator does once the broker is down: fsck, mount again."""
        run("umount", str(self.mountpoint))
        if subprocess.run(["e2fsck", "-fy", self.device], capture_output=True).returncode not in (0, 1):
            pytest.fail(f"e2fsck could not repair {self.device}")      # 1: errors corrected
        run("mount", "-t", "ext4", "-o", "errors=remount-ro", self.device, str(self.mountpoint))

    def remove(self) -> None:
        if self.mountpoint is not None:     # lazily if a failed test left files open
            subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
        subprocess.run(["losetup", "-d", self.device], capture_output=True)


@pytest.fixture
def ext4(tmp_path):
    image = Ext4(tmp_path / "ext4.img")
    try:
        yield image
    finally:
        image.remove()


def produce_with_client(bootstrap: str, topic: str, partition: int, value: bytes) -> KafkaError | None:
    """One record through librdkafka, no retries: the error its delivery report carries."""
    p = Producer({"bootstrap.servers": bootstrap, "retries": 0, "enable.idempotence": False,
                  "message.max.bytes": 1 << 20})
    reports = []
    p.produce(topic, value, partition=partition, on_delivery=lambda err, msg: reports.append(err))
    p.flush(20)
    assert len(reports) == 1
    return reports[0]


def test_partition_dir_turns_read_only(ext4, tmp_path):
    """doomed-0 lives on its own ext4 file system, doomed-1 and other-0 on the
    data dir's. The disk under doomed-0 fails while the broker runs: appends
    to doomed-0 answer KAFKA_STORAGE_ERROR (plain ones and one that must roll
    a segment), keep nothing, and its acknowledged records still read back;
    the rest serves produce and fetch; the broker lives on and shuts down
    cleanly, leaving no clean-shutdown marker. Once the file system is
    repaired the next start recovers every log: with flush.messages=1 the
    records acknowledged before the failure were on disk, and are there."""
    data = tmp_path / "data"
    with Broker(data, log_path=tmp_path / "kproto.log", log_level="warning") as broker:
        bs = broker.bootstrap_servers
        ext4.mount(data / "doomed-0")
        admin = AdminClient({"bootstrap.servers": bs})
        doomed = NewTopic("doomed", 2, 1, config={"segment.bytes": "350000", "flush.messages": "1"})
        for done in admin.create_topics([doomed, NewTopic("other", 1, 1)]).values():
            done.result(timeout=10)
        acked = [batch_of(i) for i in range(2)]
        assert [produce_raw(bs, "doomed", 0, d).base_offset for d in acked] == [0, 1]
        assert produce_raw(bs, "other", 0, batch_of(0)).base_offset == 0
        segment = data / "doomed-0" / "00000000000000000000.log"
        assert os.stat(segment).st_size == sum(map(len, acked))

        ext4.fail()
        fits = produce_raw(bs, "doomed", 0, batch_of(2))
        assert fits.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert fits.error_message.startswith(
            f"Error while appending records for doomed-0 in dir {data}: [Errno 30] Read-only file system")
        rolls = produce_raw(bs, "doomed", 0, build_record_batch([NewRecord(b"k", os.urandom(300_000))]))
        assert rolls.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert rolls.error_message == (
            f"Error while rolling the log for doomed-0 in dir {data}: [Errno 30] Read-only file system")
        err = produce_with_client(bs, "doomed", 0, b"through librdkafka")
        assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR, err
        # nothing kept: the segment as it was, no new one, the log end where it was
        assert os.stat(segment).st_size == sum(map(len, acked))
        assert sorted(p.name for p in (data / "doomed-0").glob("*.log")) == [segment.name]
        c = Consumer({"bootstrap.servers": bs, "group.id": "unused"})
        assert c.get_watermark_offsets(TopicPartition("doomed", 0), timeout=10) == (0, 2)
        c.close()
        # the acknowledged records read back from the failed file system
        got = consume(bs, "doomed", 2)
        assert [v[-1:] for _, v in got] == [b"0", b"1"] and len(got[0][1]) == 100_001

        # everything else serves on, through new connections
        assert produce_with_client(bs, "doomed", 1, b"elsewhere") is None
        assert produce_with_client(bs, "other", 0, b"elsewhere") is None
        assert produce_raw(bs, "other", 0, batch_of(2)).base_offset == 2
        assert [v for _, v in consume(bs, "doomed", 1, partition=1)] == [b"elsewhere"]
        assert [o for o, _ in consume(bs, "other", 3)] == [0, 1, 2]
        assert broker.running
    # shut down: the rest closed and checkpointed, doomed-0 with the recovery
    # point of its last flush, and no marker says the close was clean
    assert broker.returncode == 0
    # one line for the three refused appends (the episode lasts while none succeeds)
    after_ready = (tmp_path / "kproto.log").read_text().splitlines()[1:]
    assert [line[24:] for line in after_ready] == [       # past the timestamp
        f"ERROR kproto.log: Error while appending records for doomed-0 to {segment}: [Errno 30] Read-only "
        "file system (KAFKA_STORAGE_ERROR to every append until one succeeds; those failures are not logged)",
        f"ERROR kproto.log: Closing doomed-0 failed: Error while writing the producer snapshot for doomed-0 "
        f"in dir {data}: [Errno 30] Read-only file system: '{data}/doomed-0/00000000000000000002.snapshot.tmp'"]
    checkpoint = (data / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert {"doomed 0 2", "doomed 1 1", "other 0 3"} <= set(checkpoint)
    assert not (data / ".kafka_cleanshutdown").exists()

    ext4.repair()
    with kproto_broker(tmp_path, data_dir=data) as bs:
        assert [v for _, v in consume(bs, "doomed", 2)] == [v for _, v in got]
        assert produce_raw(bs, "doomed", 0, batch_of(3)).base_offset == 2
        assert [v for _, v in consume(bs, "doomed", 1, partition=1)] == [b"elsewhere"]
        assert [o for o, _ in consume(bs, "other", 3)] == [0, 1, 2]


@pytest.mark.parametrize("damage", ["zero-filled", "truncated"])
def test_a_segment_damaged_while_stopped_is_recovered(tmp_path, damage):
    """kill -9, then the segment's tail zero-filled (a power cut on some file
    systems) or cut mid-batch: the next start truncates at the first invalid
    batch, rebuilds the indexes, logs the bytes dropped and serves the rest."""
    data = tmp_path / "data"
    broker = Broker(data, log_path=tmp_path / "first-start.log", log_level="warning").start()
    try:
        bs = broker.bootstrap_servers
        create(bs, "t")
        sizes = [len(batch_of(0))] * 10
        for i in range(10):
            assert produce_raw(bs, "t", 0, batch_of(i)).error_code == 0
    finally:
        broker.kill()
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


def test_a_failed_disk_stops_no_other_logs_flush(ext4, tmp_path):
    """LogManager's background flush goes on past a log whose disk failed (as
    Kafka's flushDirtyLogs does): the other logs flush and advance their
    recovery points, the failed one keeps its own."""
    from kproto.log.manager import LogManager
    data = tmp_path / "data"
    logs = LogManager(data)
    ext4.mount(data / "doomed-0")
    doomed, = logs.create_topic("doomed", 1, {"flush.ms": 60_000})
    other, = logs.create_topic("other", 1, {"flush.ms": 60_000})
    for plog in (doomed, other):
        plog.append(batch_of(0))
    ext4.fail()
    with pytest.raises(KafkaStorageError, match="Read-only file system"):
        doomed.append(batch_of(1))
    other.append(batch_of(1))
    a_minute_on = int(time.time() * 1000) + 60_000
    assert logs.flush_dirty_logs(a_minute_on) == 1      # doomed-0 comes first and fails
    assert (doomed.recovery_point, other.recovery_point) == (0, 2)
    logs.close()
    assert not (data / ".kafka_cleanshutdown").exists()
