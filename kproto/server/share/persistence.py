"""Share-partition state as ``__share_group_state`` records, and back (Kafka's
share-coordinator: ShareCoordinatorShard, ShareCoordinatorRecordHelpers).

Which partition: ``Utils.abs(key.hashCode()) % share.coordinator.state.topic.num.partitions``
of the key ``"group:topicId:partition"`` (SharePartitionKey.asCoordinatorKey).

What is written:

    key   ShareSnapshotKey v0 (group, topic id, partition)
    value ShareSnapshotValue v0: snapshot epoch, state epoch, leader epoch,
          start offset, create and write timestamps, all state batches -- the whole state
    key   ShareUpdateKey (type 1; the same)
    value ShareUpdateValue v0: snapshot epoch, leader epoch, start offset
          (-1: unchanged), the state batches that changed -- a delta
    tombstone (ShareSnapshotKey, null): DeleteShareGroupState

A write is a ShareUpdate until ``share.coordinator.snapshot.update.records.per.snapshot``
updates followed the last snapshot, then a ShareSnapshot of the merged state
(ShareCoordinatorShard.generateShareStateRecord). Replay merges the same way.
Unreadable records are skipped with a warning, never fatal.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kproto import schemas
from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME
from kproto.errors import KprotoError
from kproto.log.manager import format_topic_id
from kproto.schemas import group_records as G
from kproto.schemas.internal_records import key_version
from kproto.schemas.message import versioned
from kproto.server.runtime.state_topic import LogRecord, TxnMarker, key_value, partition_for, where_read
from kproto.server.share.partition import StateBatch

__all__ = ["ShareKey", "ShareState", "coordinator_key", "partition_for_key", "snapshot_record", "update_record",
           "tombstone", "merge", "Replay", "replay"]

log = logging.getLogger("kproto.server.share")

SNAPSHOT, UPDATE = 0, 1          # key versions: the record type
RecordKey = versioned((G.SHARE_SNAPSHOT_KEY, (SNAPSHOT,)), (G.SHARE_UPDATE_KEY, (UPDATE,)))
SnapshotValue = versioned((G.SHARE_SNAPSHOT_VALUE, None))
UpdateValue = versioned((G.SHARE_UPDATE_VALUE, None))

ShareKey = tuple[str, uuid.UUID, int]      # (group id, topic id, partition)


@dataclass(frozen=True)
class ShareState:
    """A share partition's persisted state (ShareGroupOffset)."""

    snapshot_epoch: int = 0
    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = -1
    state_batches: tuple[StateBatch, ...] = ()
    updates_since_snapshot: int = 0
    create_timestamp: int = -1       # when the state was first written (ShareSnapshotValue.CreateTimestamp)


def coordinator_key(key: ShareKey) -> str:
    group_id, topic_id, partition = key
    return f"{group_id}:{format_topic_id(topic_id)}:{partition}"


def partition_for_key(key: ShareKey, partitions: int) -> int:
    return partition_for(coordinator_key(key), partitions)


def merge(state: ShareState, start_offset: int, batches: Iterable[StateBatch]) -> tuple[int, tuple[StateBatch, ...]]:
    """The start offset and batches after a write (ShareCoordinatorShard.merge): new
    batches replace the old over the offsets they cover; batches below the start
    offset go. ``start_offset`` -1 keeps the old one."""
    start = state.start_offset if start_offset == -1 else start_offset
    per_offset: dict[int, tuple[int, int]] = {}
    for b in (*state.state_batches, *batches):
        for offset in range(max(b.first_offset, start), b.last_offset + 1):
            per_offset[offset] = (b.delivery_state, b.delivery_count)
    out: list[StateBatch] = []
    for offset in sorted(per_offset):
        s, c = per_offset[offset]
        last = out[-1] if out else None
        if last is not None and last.last_offset == offset - 1 and (last.delivery_state, last.delivery_count) == (s, c):
            out[-1] = replace(last, last_offset=offset)
        else:
            out.append(StateBatch(offset, offset, s, c))
    return start, tuple(out)


def _key(version: int, key: ShareKey) -> bytes:
    group_id, topic_id, partition = key
    return RecordKey.build({"version": version, "data": {"group_id": group_id, "topic_id": topic_id,
                                                         "partition": partition}})


def _batches(batches: Iterable[StateBatch]) -> list[dict]:
    return [{"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
             "delivery_count": b.delivery_count} for b in batches]


def snapshot_record(key: ShareKey, s: ShareState, write_timestamp: int) -> tuple[bytes, bytes]:
    """ShareCoordinatorRecordHelpers.newShareSnapshotRecord (Kafka 4.4): the state's create
    timestamp, this write's time. DeliveryCompleteCount (tagged, KIP-1226) stays at its
    default, -1: not counted."""
    return _key(SNAPSHOT, key), SnapshotValue.build({"version": 0, "data": {
        "snapshot_epoch": s.snapshot_epoch, "state_epoch": s.state_epoch, "leader_epoch": s.leader_epoch,
        "start_offset": s.start_offset, "create_timestamp": s.create_timestamp,
        "write_timestamp": write_timestamp, "state_batches": _batches(s.state_batches)}})


def update_record(key: ShareKey, snapshot_epoch: int, leader_epoch: int, start_offset: int,
                  batches: Iterable[StateBatch]) -> tuple[bytes, bytes]:
    return _key(UPDATE, key), UpdateValue.build({"version": 0, "data": {
        "snapshot_epoch": snapshot_epoch, "leader_epoch": leader_epoch, "start_offset": start_offset,
        "state_batches": _batches(batches)}})


def tombstone(key: ShareKey) -> tuple[bytes, None]:
    return _key(SNAPSHOT, key), None


def _state_batches(values) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in values)


@dataclass
class Replay:
    """One partition after replay; ``skipped`` says why each unreadable record was dropped."""

    states: dict[ShareKey, ShareState] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def apply(states: dict[ShareKey, ShareState], key: bytes, value: bytes | None) -> ShareKey:
    """One record onto ``states`` (ShareCoordinatorShard.replay); raises on an unreadable one."""
    version = key_version(key)
    if version not in (SNAPSHOT, UPDATE):
        raise ValueError(f"unknown key version {version}")
    k = schemas.parse(RecordKey, key).data
    share_key: ShareKey = (k.group_id, k.topic_id, k.partition)
    if value is None:
        states.pop(share_key, None)
    elif version == SNAPSHOT:
        d = schemas.parse(SnapshotValue, value).data
        states[share_key] = ShareState(d.snapshot_epoch, d.state_epoch, d.leader_epoch, d.start_offset,
                                       _state_batches(d.state_batches), create_timestamp=d.create_timestamp)
    else:
        d = schemas.parse(UpdateValue, value).data
        old = states.get(share_key, ShareState())
        start, batches = merge(old, d.start_offset, _state_batches(d.state_batches))
        states[share_key] = replace(old, leader_epoch=d.leader_epoch, start_offset=start, state_batches=batches,
                                    updates_since_snapshot=old.updates_since_snapshot + 1)
    return share_key


def replay(records: Iterable[LogRecord], *, partition: int | None = None) -> Replay:
    out = Replay()
    where = SHARE_GROUP_STATE_TOPIC_NAME if partition is None else f"{SHARE_GROUP_STATE_TOPIC_NAME}-{partition}"
    for i, record in enumerate(records):
        if isinstance(record, TxnMarker):
            continue
        (key, value), position = key_value(record), where_read(record, i)
        try:
            if key is None:
                raise ValueError("the record has no key")
            apply(out.states, bytes(key), None if value is None else bytes(value))
        except (KprotoError, ValueError) as e:
            reason = f"{where} {position}: skipped an unreadable record: {e}"
            out.skipped.append(reason)
            log.warning("%s", reason)
    return out
