"""KRaft metadata snapshots (kproto/server/cluster/snapshot.py): the image written as
``__cluster_metadata`` records in ``<offset>-<epoch>.checkpoint`` files, read by Kafka's
DumpLogSegments, and loaded at start-up before the log after them."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from kproto.common import now_ms
from kproto.errors import CorruptRecordError, DecodeError
from kproto.records import NewRecord, build_record_batch
from kproto.schemas import protocol as P
from kproto.server.cluster import image as I
from kproto.server.cluster import snapshot as S
from kproto.server.cluster.controller import METADATA_LOG_DIR
from kproto.testing import BrokerStartError, Cluster
from kproto.tools.main import cli
from tests.server.test_cluster_controller import (
    acl, acl_filter, alter_quotas, alter_scram, call, controller, create, expire, incremental, three_brokers,
)


def test_snapshot_file_names_are_kafkas():
    sid = S.SnapshotId(42, 3)
    assert S.snapshot_file_name(sid) == "00000000000000000042-0000000003.checkpoint"
    assert S.parse_snapshot_name("00000000000000000042-0000000003.checkpoint") == sid
    # a snapshot being written (.part) or a deleted one is not a snapshot
    assert S.parse_snapshot_name("00000000000000000042-0000000003.checkpoint.part") is None
    assert S.parse_snapshot_name("00000000000000000042-0000000003.checkpoint.deleted") is None


def test_the_policy_waits_for_bytes_or_the_interval():
    p = S.SnapshotPolicy(max_bytes=100, max_interval_ms=1000, last_at=0)
    assert not p.due(5000)              # nothing applied since the last: no snapshot of the same
    p.applied(99)
    assert (p.due(999), p.due(1000)) == (False, True)
    p.applied(1)
    assert p.due(1)
    p.written(10)
    assert (p.bytes_since, p.last_at, p.due(10_000)) == (0, 10, False)
    assert not S.SnapshotPolicy(max_bytes=100, max_interval_ms=0, bytes_since=1).due(10 ** 12)


def busy_controller(tmp_path, **props):
    """A controller that wrote every kind of record the snapshot has to carry."""
    ctrl = controller(tmp_path, **props)
    three_brokers(ctrl)
    create(ctrl, "t", 2, 3, configs=[("min.insync.replicas", "2")])
    create(ctrl, "gone", 1, 1)
    call(ctrl, P.delete_topics, 6, {"topics": [{"name": "gone", "topic_id": None}], "timeout_ms": 1000})
    assert expire(ctrl, 2) == [2]
    incremental(ctrl, 2, "t", ("retention.ms", 0, "1000"))
    incremental(ctrl, 4, "", ("log.retention.ms", 0, "5000"))
    incremental(ctrl, 4, "3", ("log.cleaner.threads", 0, "2"))
    call(ctrl, P.create_acls, 3, {"creations": [acl(), acl(resource_type=4, name="kafka-cluster", operation=7)]})
    call(ctrl, P.delete_acls, 3, {"filters": [acl_filter(operation=4)]})
    call(ctrl, P.allocate_producer_ids, 0, {"broker_id": 1, "broker_epoch": ctrl.image.brokers[1].epoch})
    alter_quotas(ctrl, [("user", "alice"), ("client-id", None)], ("producer_byte_rate", 1024.0))
    alter_scram(ctrl, upsertions=[("alice", 1, 4096), ("bob", 2, 8192)])
    alter_scram(ctrl, deletions=[("bob", 2)])
    return ctrl


def same_image(a: I.MetadataImage, b: I.MetadataImage) -> None:
    assert a.brokers == b.brokers
    assert {n: (t.topic_id, t.partitions, t.configs) for n, t in a.topics.items()} == \
        {n: (t.topic_id, t.partitions, t.configs) for n, t in b.topics.items()}
    assert (a.names, a.broker_configs, a.acls, a.client_quotas, a.scram, a.next_producer_id, a.end_offset) == \
        (b.names, b.broker_configs, b.acls, b.client_quotas, b.scram, b.next_producer_id, b.end_offset)
    assert [b.security_protocols for b in a.brokers.values()] == [b.security_protocols for b in b.brokers.values()]


def test_a_snapshot_holds_the_image_at_the_committed_offset(tmp_path):
    ctrl = busy_controller(tmp_path)
    sid = ctrl.snapshots.snapshot(now_ms())
    assert sid == S.SnapshotId(ctrl.log.log_end_offset, 1)
    path = tmp_path / METADATA_LOG_DIR / S.snapshot_file_name(sid)
    same_image(S.read_snapshot(path.read_bytes(), sid), ctrl.image)
    assert not list((tmp_path / METADATA_LOG_DIR).glob("*.part"))


def test_the_bytes_between_snapshots_trigger_one_on_every_commit_past_them(tmp_path):
    ctrl = busy_controller(tmp_path, metadata_log_max_record_bytes_between_snapshots=1)
    names = sorted(p.name for p in (tmp_path / METADATA_LOG_DIR).glob("*.checkpoint"))
    # one per committed batch, each named after the offset after it
    assert len(names) > 10 and S.parse_snapshot_name(names[-1]) == S.SnapshotId(ctrl.log.log_end_offset, 1)
    assert S.latest_snapshot(tmp_path / METADATA_LOG_DIR) == S.SnapshotId(ctrl.log.log_end_offset, 1)


def test_no_snapshot_before_the_bytes_pass(tmp_path):
    busy_controller(tmp_path)
    assert S.snapshots(tmp_path / METADATA_LOG_DIR) == []


def test_a_cut_short_snapshot_is_refused(tmp_path):
    ctrl = busy_controller(tmp_path)
    sid = ctrl.snapshots.snapshot(now_ms())
    data = (tmp_path / METADATA_LOG_DIR / S.snapshot_file_name(sid)).read_bytes()
    footer = S.control_batch([(S._FOOTER, {})], 0, 1, 0)
    with pytest.raises(CorruptRecordError) as e:
        S.read_snapshot(data[:-len(footer)], sid)
    # where the footer should have been
    assert str(e.value) == f"{S.snapshot_file_name(sid)} @ byte {len(data) - len(footer)}: " \
        "no SnapshotHeader/SnapshotFooter control records"


def snapshot_of(tmp_path) -> tuple[S.SnapshotId, bytes]:
    ctrl = busy_controller(tmp_path)
    sid = ctrl.snapshots.snapshot(now_ms())
    return sid, (tmp_path / METADATA_LOG_DIR / S.snapshot_file_name(sid)).read_bytes()


def test_a_corrupt_or_truncated_snapshot_names_its_file_and_byte(tmp_path):
    """Bad input: every way a .checkpoint goes bad is one error naming the file and the byte."""
    sid, data = snapshot_of(tmp_path)
    header = len(S.control_batch([(S._HEADER, {"last_contained_log_timestamp": 0})], 0, 1, 0))
    name = S.snapshot_file_name(sid)
    flipped = bytearray(data)
    flipped[header + 40] ^= 0xFF            # inside the first records batch: its CRC no longer holds
    cases = {
        "empty": (b"", "@ byte 0: no SnapshotHeader/SnapshotFooter control records"),
        "cut in the header": (data[:3], "@ byte 0: incomplete batch: 3 bytes left, header needs 17"),
        "cut in a batch": (data[:header + 20], f"@ byte {header}: incomplete batch: 20 of"),
        "a flipped byte": (bytes(flipped), f"@ byte {header + 17}: crc: crc mismatch"),
        "a length past the end": (data[:8] + b"\x7f\xff\xff\xff" + data[12:],
                                  f"@ byte 0: incomplete batch: {len(data)} of 2147483659 bytes"),
        "bytes after the footer": (data + b"\0\1", f"@ byte {len(data)}: incomplete batch: 2 bytes left"),
    }
    for case, (bad, where) in cases.items():
        with pytest.raises(DecodeError) as e:
            S.read_snapshot(bad, sid, tmp_path / name)
        assert str(e.value).startswith(f"{tmp_path / name} {where}"), (case, str(e.value))


def test_a_snapshot_record_that_does_not_parse_names_its_batch(tmp_path):
    """CRC-valid batches whose record is not a metadata record: the byte is its batch's."""
    sid = S.SnapshotId(2, 1)
    header = S.control_batch([(S._HEADER, {"last_contained_log_timestamp": 0})], 0, 1, 0)
    footer = S.control_batch([(S._FOOTER, {})], 2, 1, 0)
    for value, reason in ((b"\x01", "type: Error while reading type"),
                          (b"\x00\x63\x00\x01", "Could not deserialize metadata record with frame version 0")):
        bad = build_record_batch([NewRecord(None, value)], base_offset=1, partition_leader_epoch=1)
        with pytest.raises(CorruptRecordError) as e:
            S.read_snapshot(header + bad + footer, sid)
        assert str(e.value).startswith(f"{S.snapshot_file_name(sid)} @ byte {len(header)}: {reason}")


def test_start_up_with_a_corrupt_snapshot_refuses_in_one_line_naming_it(tmp_path):
    """kproto serve on a data dir whose newest .checkpoint is corrupt: a one-line error naming
    the file and the byte, no traceback (Kafka's broker too stops on a corrupt snapshot)."""
    c = Cluster(brokers=1, data_dir=tmp_path / "c", config={"metadata.log.max.record.bytes.between.snapshots": 1})
    with c:
        c.wait_for_controller()
    newest = sorted((tmp_path / "c" / "node-1" / METADATA_LOG_DIR).glob("*.checkpoint"))[-1]
    data = bytearray(newest.read_bytes())
    data[40] ^= 0xFF
    newest.write_bytes(bytes(data))
    with pytest.raises(BrokerStartError):
        c.start(1)
    text = c.nodes[1].log_text()
    last = text[text.rindex("--- kproto broker start"):]
    assert f"kproto: error: {newest} @ byte 17: crc: crc mismatch" in last
    assert "Traceback" not in last


def test_start_up_loads_the_newest_snapshot_then_the_log_after_it(tmp_path):
    ctrl = busy_controller(tmp_path)
    sid = ctrl.snapshots.snapshot(now_ms())
    assert create(ctrl, "after", 1, 2).error_code == 0     # in the log only, past the snapshot
    image = ctrl.image
    ctrl.log.close()
    again = controller(tmp_path)
    loaded, used = S.load_image(tmp_path / METADATA_LOG_DIR, again.log)
    assert used == sid
    assert set(loaded.topics) == {"t", "after"}
    # the restart added its own LeaderChange record: one offset more
    image.end_offset += 1
    same_image(again.image, image)


def test_kafka_reads_the_snapshot(tmp_path, kafka_ref):
    """DumpLogSegments --cluster-metadata-decoder on a .checkpoint prints what kproto dump-log prints."""
    ctrl = busy_controller(tmp_path)
    sid = ctrl.snapshots.snapshot(now_ms())
    path = str(tmp_path / METADATA_LOG_DIR / S.snapshot_file_name(sid))
    kafka = kafka_ref.run_tool("org.apache.kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
                               "--files", path)
    assert kafka.returncode == 0, kafka.stderr
    ours = CliRunner().invoke(cli, ["dump-log", "--cluster-metadata-decoder", "--files", path])
    assert ours.output == kafka.stdout
    for kind in ("SnapshotHeader", "SnapshotFooter", "REGISTER_BROKER_RECORD", "TOPIC_RECORD", "PARTITION_RECORD",
                 "CONFIG_RECORD", "CLIENT_QUOTA_RECORD", "PRODUCER_IDS_RECORD", "ACCESS_CONTROL_ENTRY_RECORD",
                 "USER_SCRAM_CREDENTIAL_RECORD"):
        assert kind in ours.output, kind


def test_retention_keeps_the_newest_snapshot_and_the_log_starts_at_it(tmp_path):
    ctrl = busy_controller(tmp_path, metadata_log_max_record_bytes_between_snapshots=1,
                           metadata_max_retention_bytes=0)
    meta = tmp_path / METADATA_LOG_DIR
    [only] = S.snapshots(meta)
    assert only.end_offset == ctrl.log.log_start_offset == ctrl.log.log_end_offset
    image = ctrl.image
    ctrl.log.close()
    # a restart reads the snapshot, nothing of the log before it (gone from reads)
    again = controller(tmp_path)
    assert again.log.log_start_offset == only.end_offset
    image.end_offset += 1           # the restart's own LeaderChange record
    same_image(again.image, image)


def test_without_retention_limits_every_snapshot_stays_and_the_log_starts_at_the_oldest(tmp_path):
    ctrl = busy_controller(tmp_path, metadata_log_max_record_bytes_between_snapshots=1,
                           metadata_max_retention_bytes=-1, metadata_max_retention_ms=-1)
    # nothing passed a limit, so nothing moved the log's start (KafkaMetadataLog moves it
    # only when retention deletes a snapshot)
    found = S.snapshots(tmp_path / METADATA_LOG_DIR)
    assert len(found) > 10 and ctrl.log.log_start_offset == 0


def test_retention_ms_ages_a_snapshot_by_its_last_records_append_time_not_its_file(tmp_path):
    """metadata.max.retention.ms reads the SnapshotHeader's timestamp (the last contained
    record's append time, Snapshots.lastContainedLogTimestamp) as KafkaMetadataLog does: a
    snapshot of day-old records goes though its file is new; a fresh one whose file is
    old (copied, touched) stays; the newest always stays, and retention also runs with no
    new snapshot (every 60 s, RaftMetadataLogCleanerManager)."""
    hour = 3_600_000
    ctrl = busy_controller(tmp_path, metadata_max_retention_ms=hour, metadata_max_retention_bytes=-1)
    meta = tmp_path / METADATA_LOG_DIR
    snap = ctrl.snapshots
    now = now_ms()
    snap.last_timestamp = now - 24 * hour           # as if its records were appended a day ago
    old = snap.snapshot(now)
    assert S.snapshot_timestamp(meta, old) == now - 24 * hour
    assert create(ctrl, "a", 1, 1).error_code == 0
    fresh = snap.snapshot(now)
    assert S.snapshot_timestamp(meta, fresh) == snap.last_timestamp > now - hour
    # the old snapshot went when the next was written; the log starts at the next one
    assert (S.snapshots(meta), ctrl.log.log_start_offset) == ([fresh], fresh.end_offset)
    day_ago = (now - 24 * hour) / 1000
    os.utime(meta / S.snapshot_file_name(fresh), (day_ago, day_ago))
    assert create(ctrl, "b", 1, 1).error_code == 0
    newest = snap.snapshot(now)
    assert fresh < newest
    assert (S.snapshots(meta), ctrl.log.log_start_offset) == ([fresh, newest], fresh.end_offset)
    # two hours on, with no new snapshot: the periodic clean ages ``fresh`` out
    assert snap.advance(ctrl.quorum.node.high_watermark, now + 2 * hour) is None
    assert (S.snapshots(meta), ctrl.log.log_start_offset) == ([newest], newest.end_offset)


def test_the_metadata_log_segments_wholly_below_the_oldest_snapshot_are_deleted(tmp_path):
    """Retention 0 keeps the newest snapshot only: of the 1 KiB segments, only the one
    holding the log start (the active one) is left."""
    ctrl = busy_controller(tmp_path, metadata_log_max_record_bytes_between_snapshots=1,
                           metadata_max_retention_bytes=0, metadata_log_segment_bytes=1024)
    bases = sorted(int(p.name[:20]) for p in (tmp_path / METADATA_LOG_DIR).glob("*.log"))
    assert bases == [ctrl.log.segments[0].base_offset] and bases[0] > 0
    assert ctrl.log.log_start_offset == S.latest_snapshot(tmp_path / METADATA_LOG_DIR).end_offset


def test_a_snapshot_a_crash_cut_short_is_deleted_at_start_up(tmp_path):
    ctrl = busy_controller(tmp_path)
    ctrl.log.close()
    part = tmp_path / METADATA_LOG_DIR / "00000000000000000009-0000000001.checkpoint.part"
    part.write_bytes(b"\0" * 10)
    again = controller(tmp_path)
    assert not part.exists() and S.snapshots(tmp_path / METADATA_LOG_DIR) == []
    assert set(again.image.topics) == {"t"}
