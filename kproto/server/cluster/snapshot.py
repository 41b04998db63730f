"""KRaft metadata snapshots: the image at a committed offset as ``__cluster_metadata``
records in a ``<offset>-<epoch>.checkpoint`` file (KIP-630).

* ``image_records`` is Kafka's MetadataImage.write (SnapshotGenerator): the
  records that rebuild an image from nothing, in Kafka's order: feature levels
  (metadata.version first), brokers, topics
  with their partitions, configs, client quotas, producer ids, ACLs, SCRAM.
* ``write_snapshot`` frames them as RecordsSnapshotWriter does: a control batch
  with the SnapshotHeaderRecord, the records (offsets from 0, the partition
  leader epoch the snapshot's), a control batch with the SnapshotFooterRecord;
  written to ``.checkpoint.part`` and moved in place once synced
  (FileRawSnapshotWriter.freeze), so a crash leaves no half snapshot.
* The snapshot id is (end offset, epoch): the offset after the last record it
  contains and that record's epoch (Snapshots.filenameFromSnapshotId names the
  file after it: 20 and 10 digits).
* ``load_image`` is start-up (KafkaRaftClient's latestSnapshot, then the log
  from its end offset); ``SnapshotPolicy`` is when a node writes one
  (SnapshotEmitter / ``metadata.log.max.record.bytes.between.snapshots`` and
  ``metadata.log.max.snapshot.interval.ms``), on every voter as Kafka does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kproto.errors import CorruptRecordError, DecodeError
from kproto.features import METADATA_VERSION
from kproto.jvm import java_hashmap_order, java_string_hash
from kproto.records import NewRecord, RecordBatch, build_record_batch, iter_batches
from kproto.schemas import records as S
from kproto.schemas.metadata_records import CONTROL_RECORDS
from kproto.server.cluster import image as I

__all__ = ["SnapshotId", "snapshot_file_name", "parse_snapshot_name", "snapshots", "latest_snapshot",
           "image_records", "snapshot_bytes", "records_snapshot_bytes", "write_snapshot", "read_snapshot",
           "load_image", "SnapshotPolicy", "snapshot_timestamp"]

SUFFIX = ".checkpoint"
PART_SUFFIX = ".checkpoint.part"
_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_HEADER, _FOOTER = 3, 4             # ControlRecordType.SNAPSHOT_HEADER / SNAPSHOT_FOOTER
KRAFT_VERSION, KRAFT_VOTERS = 5, 6  # ControlRecordType.KRAFT_VERSION / KRAFT_VOTERS
#: records per batch (Kafka's BatchAccumulator closes a batch at 8 KiB; a count keeps it simple)
BATCH_RECORDS = 256
#: how often retention runs without a new snapshot (KafkaRaftClient's RaftMetadataLogCleanerManager: 60 s)
CLEAN_INTERVAL_MS = 60_000


@dataclass(frozen=True, order=True, slots=True)
class SnapshotId:
    end_offset: int
    epoch: int


def snapshot_file_name(sid: SnapshotId) -> str:
    """Snapshots.filenameFromSnapshotId + SUFFIX."""
    return f"{sid.end_offset:020d}-{sid.epoch:010d}{SUFFIX}"


def parse_snapshot_name(name: str) -> SnapshotId | None:
    m = _NAME.match(name)
    return None if m is None else SnapshotId(int(m.group(1)), int(m.group(2)))


def snapshots(log_dir: Path) -> list[SnapshotId]:
    """The frozen snapshots in ``log_dir``, oldest first (a ``.part`` left by a crash is not one)."""
    try:
        names = os.listdir(log_dir)
    except FileNotFoundError:
        return []
    return sorted(sid for sid in map(parse_snapshot_name, names) if sid is not None)


def latest_snapshot(log_dir: Path) -> SnapshotId | None:
    found = snapshots(log_dir)
    return found[-1] if found else None


# -- the image as records (MetadataImage.write) --------------------------------------------------

def image_records(image: I.MetadataImage) -> list[tuple[int, dict]]:
    out: list[tuple[int, dict]] = []
    # FeaturesImage.write: metadata.version first (it decides how the rest is read), then the
    # others as FeaturesImage's map iterates: FeaturesDelta.apply puts them, in the bootstrap
    # records' (sorted) order, into a `new HashMap<>(image's size)`, from 0 the first time
    if METADATA_VERSION in image.features:
        out.append((I.FEATURE_LEVEL, {"name": METADATA_VERSION, "feature_level": image.features[METADATA_VERSION]}))
    others = [n for n in image.features if n != METADATA_VERSION]
    out += [(I.FEATURE_LEVEL, {"name": n, "feature_level": image.features[n]})
            for n in java_hashmap_order(sorted(others), java_string_hash, initial_capacity=0)]
    for b in sorted(image.brokers.values(), key=lambda b: b.broker_id):          # ClusterImage
        out.append((I.REGISTER_BROKER, {
            "broker_id": b.broker_id, "incarnation_id": b.incarnation_id, "broker_epoch": b.epoch,
            "end_points": [{"name": n, "host": h, "port": p, "security_protocol": b.security_protocols.get(n, 0)}
                           for n, (h, p) in b.endpoints.items()],
            "features": [], "rack": b.rack, "fenced": b.fenced, "in_controlled_shutdown": False}))
    for t in sorted(image.topics.values(), key=lambda t: t.name):                 # TopicsImage
        out.append((I.TOPIC, {"name": t.name, "topic_id": t.topic_id}))
        out += [I.partition_record(t.topic_id, p, reg) for p, reg in sorted(t.partitions.items())]
    for t in sorted(image.topics.values(), key=lambda t: t.name):                 # ConfigurationsImage
        out += [(I.CONFIG, {"resource_type": I.TOPIC_RESOURCE, "resource_name": t.name, "name": k, "value": v})
                for k, v in sorted(t.configs.items())]
    for resource, configs in sorted(image.broker_configs.items()):
        out += [(I.CONFIG, {"resource_type": I.BROKER_RESOURCE, "resource_name": resource, "name": k, "value": v})
                for k, v in sorted(configs.items())]
    out += I.quota_records({}, image.client_quotas)                               # ClientQuotasImage
    if image.next_producer_id:                                                     # ProducerIdsImage
        out.append((I.PRODUCER_IDS, {"broker_id": -1, "broker_epoch": -1,
                                     "next_producer_id": image.next_producer_id}))
    out += [I.acl_record(acl_id, b) for acl_id, b in sorted(image.acls.items())]   # AclsImage
    for (name, mechanism), c in sorted(image.scram.items()):                       # ScramImage
        out.append((I.USER_SCRAM_CREDENTIAL, {"name": name, "mechanism": mechanism, "salt": c.salt,
                                              "stored_key": c.stored_key, "server_key": c.server_key,
                                              "iterations": c.iterations}))
    return out


# -- the file -----------------------------------------------------------------------------------

def control_batch(records: list[tuple[int, dict]], offset: int, epoch: int, timestamp: int | None = None) -> bytes:
    """One KRaft control batch of (ControlRecordType, fields) records, each version 0."""
    out = []
    for kind, data in records:
        key = S.ControlRecordKey.build({"version": 0, "type": kind})
        out.append(NewRecord(key, CONTROL_RECORDS[kind].struct(0).build({"version": 0, **data}), timestamp=timestamp))
    return build_record_batch(out, is_control=True, base_offset=offset, partition_leader_epoch=epoch)


def control_records(data: bytes) -> list[tuple[int, int, Any]]:
    """(offset, ControlRecordType, fields) of the KRaftVersion and Voters records in ``data``'s
    control batches (KRaftControlRecordStateMachine reads these two only)."""
    return [r for batch in iter_batches(data, verify_crc=False) for r in batch_control_records(batch)]


def batch_control_records(batch: Any) -> list[tuple[int, int, Any]]:
    """``control_records`` of one batch."""
    out = []
    if isinstance(batch, RecordBatch) and batch.is_control:
        for rec in batch.records():
            kind = S.ControlRecordKey.parse(bytes(rec.key))["type"]
            if kind in (KRAFT_VERSION, KRAFT_VOTERS):
                out.append((rec.offset, kind, CONTROL_RECORDS[kind].struct(0).parse(bytes(rec.value))))
    return out


def snapshot_bytes(image: I.MetadataImage, sid: SnapshotId, last_contained_log_timestamp: int,
                   control: list[tuple[int, dict]] = ()) -> bytes:
    """The whole ``.checkpoint`` file of an image."""
    return records_snapshot_bytes(image_records(image), sid, last_contained_log_timestamp, control)


def records_snapshot_bytes(records: list[tuple[int, dict]], sid: SnapshotId, last_contained_log_timestamp: int,
                           control: list[tuple[int, dict]] = ()) -> bytes:
    """A ``.checkpoint`` file of these records (RecordsSnapshotWriter: header, records, footer);
    ``control``: the KRaftVersion and Voters records (kraft.version 1), in the header's batch.
    Also the bootstrap snapshot ``kproto storage format`` writes (kproto.server.storage)."""
    ts = last_contained_log_timestamp
    header = [(_HEADER, {"last_contained_log_timestamp": last_contained_log_timestamp}), *control]
    out = bytearray(control_batch(header, 0, sid.epoch, ts))
    offset = len(header)
    for i in range(0, len(records), BATCH_RECORDS):
        chunk = records[i:i + BATCH_RECORDS]
        out += I.records_batch(chunk, leader_epoch=sid.epoch, base_offset=offset, timestamp=ts)
        offset += len(chunk)
    out += control_batch([(_FOOTER, {})], offset, sid.epoch, ts)
    return bytes(out)


def write_snapshot(log_dir: Path, image: I.MetadataImage, sid: SnapshotId, last_contained_log_timestamp: int,
                   control: list[tuple[int, dict]] = ()) -> Path:
    """Write, sync and freeze (rename) the snapshot; -> its path."""
    path = log_dir / snapshot_file_name(sid)
    part = path.with_name(path.name[:-len(SUFFIX)] + PART_SUFFIX)
    with open(part, "wb") as f:
        f.write(snapshot_bytes(image, sid, last_contained_log_timestamp, control))
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)
    return path


def read_snapshot(data: bytes, sid: SnapshotId, file: str | Path | None = None) -> I.MetadataImage:
    """The image a snapshot's records build. A batch cut short or corrupt, a record that does
    not parse, or a snapshot without its header and footer control records (cut short at a
    batch boundary) is refused (RecordsSnapshotReader): a CorruptRecordError naming ``file``
    (the snapshot's file name unless told) and the byte."""
    file = snapshot_file_name(sid) if file is None else str(file)
    kinds = []
    try:
        for batch in iter_batches(data, verify_crc=True):
            if isinstance(batch, RecordBatch) and batch.is_control:
                for rec in batch.records():
                    kinds.append(S.ControlRecordKey.parse(bytes(rec.key))["type"])
        if not kinds or kinds[0] != _HEADER or kinds[-1] != _FOOTER:
            raise CorruptRecordError("no SnapshotHeader/SnapshotFooter control records",
                                     position=0 if not kinds or kinds[0] != _HEADER else len(data))
    except DecodeError as e:
        raise e.at(file=file) from None
    image = I.MetadataImage()
    pos = 0
    while pos < len(data):              # batch by batch: a record that does not parse is named by its batch's byte
        end = pos + 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        try:
            for offset, record_type, r in I.iter_records(data[pos:end]):
                image.apply(record_type, r, offset)
        except DecodeError as e:
            raise e.at(position=pos, file=file) from None
        pos = end
    image.end_offset = sid.end_offset
    return image


def load_image(log_dir: Path, log: Any) -> tuple[I.MetadataImage, SnapshotId | None]:
    """Start-up: the newest snapshot's image, then the log's records from its end offset
    (or the whole log without one). ``log`` is the partition's UnifiedLog."""
    sid = latest_snapshot(log_dir)
    path = None if sid is None else log_dir / snapshot_file_name(sid)
    image = I.MetadataImage() if path is None else read_snapshot(path.read_bytes(), sid, path)
    offset = max(log.log_start_offset, image.end_offset)
    while offset < log.log_end_offset:
        found = log.read(offset, 1 << 20)
        if not found.length:
            break
        data, after, _ = I.batches_below(found.read(), log.log_end_offset)
        for o, record_type, r in I.iter_records(data):
            if o >= offset:
                image.apply(record_type, r, o)
        if after is None:
            break
        offset = after
    image.end_offset = max(image.end_offset, log.log_end_offset)
    return image, sid


@dataclass(slots=True)
class SnapshotPolicy:
    """When a node writes a snapshot (SnapshotEmitter's triggers in MetadataLoader):
    ``max_bytes`` of committed records applied since the last one, or ``max_interval_ms``
    since it (0 disables the interval), whichever first."""

    max_bytes: int = 20 * 1024 * 1024
    max_interval_ms: int = 60 * 60 * 1000
    #: metadata.max.retention.bytes / .ms (-1: no limit)
    retention_bytes: int = 100 * 1024 * 1024
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    bytes_since: int = 0
    last_at: int = 0

    @classmethod
    def from_config(cls, config: Any) -> SnapshotPolicy:
        return cls(config["metadata.log.max.record.bytes.between.snapshots"],
                   config["metadata.log.max.snapshot.interval.ms"],
                   config["metadata.max.retention.bytes"], config["metadata.max.retention.ms"])

    def applied(self, size: int) -> None:
        self.bytes_since += size

    def due(self, now: int) -> bool:
        if self.bytes_since <= 0:
            return False
        return self.bytes_since >= self.max_bytes or (self.max_interval_ms > 0
                                                      and now - self.last_at >= self.max_interval_ms)

    def written(self, now: int) -> None:
        self.bytes_since, self.last_at = 0, now


class Snapshotter:
    """A node's committed image, kept up to the high watermark from its metadata log, and
    the snapshots written of it (Kafka's MetadataLoader + SnapshotGenerator on every node)."""

    def __init__(self, log_dir: Path, log: Any, policy: SnapshotPolicy, now: int,
                 control: Callable[[int], list[tuple[int, dict]]] = lambda end: []) -> None:
        self.log_dir = log_dir
        self.log = log
        #: end offset -> the KRaftVersion and Voters records a snapshot ending there holds
        self.control = control
        self.policy = policy
        self.policy.last_at = now
        self.latest = latest_snapshot(log_dir)
        self.image = I.MetadataImage() if self.latest is None else \
            read_snapshot((log_dir / snapshot_file_name(self.latest)).read_bytes(), self.latest,
                          log_dir / snapshot_file_name(self.latest))
        #: the offset after the last applied record, the epoch and append time of its batch
        self.applied = max(self.image.end_offset, log.log_start_offset)
        self.epoch = -1 if self.latest is None else self.latest.epoch
        self.last_timestamp = -1
        self.next_clean = now + CLEAN_INTERVAL_MS

    def advance(self, high_watermark: int, now: int) -> SnapshotId | None:
        """Apply the whole batches below ``high_watermark``; write a snapshot when the policy
        says so (-> its id)."""
        if self.applied < self.log.log_start_offset:
            # the log was replaced by the leader's snapshot (FetchSnapshot): start from it
            self.latest = latest_snapshot(self.log_dir)
            assert self.latest is not None
            path = self.log_dir / snapshot_file_name(self.latest)
            self.image = read_snapshot(path.read_bytes(), self.latest, path)
            self.applied, self.epoch = self.latest.end_offset, self.latest.epoch
        while self.applied < min(high_watermark, self.log.log_end_offset):
            found = self.log.read(self.applied, 1 << 20)
            if not found.length:
                break
            data, after, _ = I.batches_below(found.read(), high_watermark)
            if after is None:
                break
            for batch in iter_batches(data, verify_crc=False):
                if isinstance(batch, RecordBatch):
                    self.epoch, self.last_timestamp = batch.partition_leader_epoch, batch.max_timestamp
            for offset, record_type, r in I.iter_records(data):
                if offset >= self.applied:
                    self.image.apply(record_type, r, offset)
            self.policy.applied(len(data))
            self.applied = after
        self.image.end_offset = self.applied
        if now >= self.next_clean:
            self.clean(now)
        if METADATA_VERSION not in self.image.features:
            return None     # MetadataLoader publishes (so snapshots) nothing before metadata.version is known
        if not self.policy.due(now) or (self.latest is not None and self.latest.end_offset >= self.applied):
            return None
        return self.snapshot(now)

    def snapshot(self, now: int) -> SnapshotId:
        sid = SnapshotId(self.applied, max(self.epoch, 0))
        write_snapshot(self.log_dir, self.image, sid, self.last_timestamp, self.control(sid.end_offset))
        self.latest = sid
        self.policy.written(now)
        self.clean(now)
        return sid

    def clean(self, now: int) -> bool:
        """KafkaMetadataLog.maybeClean: first while the log and the snapshots together pass
        ``metadata.max.retention.bytes``, then while the oldest snapshot's last contained
        record was appended more than ``metadata.max.retention.ms`` ago (its SnapshotHeader's
        timestamp, Snapshots.lastContainedLogTimestamp: not the file's mtime, which a copy or
        a FetchSnapshot resets), the log starts at the next snapshot and what is before it
        goes; the newest snapshot always stays. -> whether anything was deleted."""
        p = self.policy
        cleaned = False
        if p.retention_bytes >= 0:                  # cleanSnapshotsRetentionSize
            sizes = {sid: (self.log_dir / snapshot_file_name(sid)).stat().st_size for sid in snapshots(self.log_dir)}
            total = sum(sizes.values())

            def over_size(sid: SnapshotId) -> bool:
                nonlocal total
                if self.log.size + total <= p.retention_bytes:
                    return False
                total -= sizes[sid]
                return True
            cleaned |= self._clean_snapshots(over_size)
        if p.retention_ms >= 0:                     # cleanSnapshotsRetentionMs
            cleaned |= self._clean_snapshots(
                lambda sid: now - snapshot_timestamp(self.log_dir, sid) > p.retention_ms)
        self.next_clean = now + CLEAN_INTERVAL_MS
        return cleaned

    def _clean_snapshots(self, expired: Callable[[SnapshotId], bool]) -> bool:
        """KafkaMetadataLog.cleanSnapshots: oldest first, while a snapshot is ``expired`` the
        log moves to the next one (stopping at the first that is not, or cannot move)."""
        found = snapshots(self.log_dir)
        cleaned = False
        for sid, following in zip(found, found[1:]):
            if not expired(sid) or not self._delete_before(following, found[-1]):
                break
            cleaned = True
        return cleaned

    def _delete_before(self, sid: SnapshotId, latest: SnapshotId) -> bool:
        """ReplicatedLog.deleteBeforeSnapshot: the log starts at ``sid`` (never past the high
        watermark nor the latest snapshot), its segments wholly below go, then the snapshots
        before it."""
        if not (self.log.log_start_offset < sid.end_offset <= min(latest.end_offset, self.log.high_watermark)):
            return False
        self.log.maybe_increment_log_start_offset(sid.end_offset)
        self.log.delete_log_start_offset_breached_segments()
        for older in snapshots(self.log_dir):
            if older < sid:
                (self.log_dir / snapshot_file_name(older)).unlink(missing_ok=True)
        return True


def snapshot_timestamp(log_dir: Path, sid: SnapshotId) -> int:
    """Snapshots.lastContainedLogTimestamp: the SnapshotHeaderRecord's timestamp, the append
    time of the last record the snapshot contains."""
    with open(log_dir / snapshot_file_name(sid), "rb") as f:
        head = f.read(4096)     # the header's control batch comes first, and is small
    for batch in iter_batches(head, verify_crc=False):
        if isinstance(batch, RecordBatch) and batch.is_control:
            for rec in batch.records():
                if S.ControlRecordKey.parse(bytes(rec.key))["type"] == _HEADER:
                    return CONTROL_RECORDS[_HEADER].struct(0).parse(bytes(rec.value))["last_contained_log_timestamp"]
        break
    raise ValueError(f"snapshot {snapshot_file_name(sid)}: no SnapshotHeader control record first")


__all__ += ["Snapshotter"]
