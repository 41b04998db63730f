"""Groups and offsets as ``__consumer_offsets`` records, and back.

Which partition: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
(GroupMetadataManager.partitionFor): Java's String.hashCode over UTF-16 code
units with int32 wrap-around, and Kafka's ``Utils.abs``, which maps
Integer.MIN_VALUE to 0 and is otherwise Math.abs (it is *not* the producer's
``toPositive`` = ``n & 0x7fffffff``).

What is written, as a Kafka 3.x broker at a current IBP (>= 2.3) writes it
(GroupMetadataManager.offsetCommitValue / groupMetadataValue):

    key    OffsetCommitKey   version 1  (group, topic, partition)
    value  OffsetCommitValue version 3  (offset, leader_epoch, metadata, commit_timestamp)
                             version 1  when the commit carried a retention (expire_timestamp)
    key    GroupMetadataKey  version 2  (group)
    value  GroupMetadataValue version 3 (protocol_type, generation, protocol, leader,
                             current_state_timestamp, members with group_instance_id)
    tombstone                null value: offset expired/deleted, group removed

GroupMetadataValue v4 (flexible) is read but, like Kafka 3.x, never written.
Loading reads every value version 0-4 and both offset key versions, skips
record types it does not know (key versions 3+, KIP-848), and restores a group
as Kafka does: Stable with its members and their assignments if the last
GroupMetadataValue has members, else Empty (GroupMetadataManager.readGroupMessageValue).

A record that cannot be read (no key, a value that does not fit its schema, a
batch that does not decode) is skipped and logged once with its file, byte
position and offset: a broker never refuses to start over one bad record.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kproto import schemas
from kproto.errors import CorruptRecordError, DecodeError
from kproto.schemas import consumer_offsets as CO
from kproto.schemas.internal_records import key_version
from kproto.server.coordinator.group import GroupMetadata, MemberMetadata
from kproto.server.coordinator.offsets import OffsetAndMetadata, TopicPartition
from kproto.server.coordinator.state import GroupState
from kproto.server.runtime.state_topic import LoggedRecord, LogRecord, TxnMarker, key_value, where_read

__all__ = [
    "OFFSET_COMMIT_KEY_VERSION", "GROUP_METADATA_KEY_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION", "OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY",
    "GROUP_METADATA_VALUE_VERSION",
    "offset_commit_key", "group_metadata_key", "offset_commit_value", "group_metadata_value",
    "OffsetKey", "GroupKey", "parse_key", "parse_offset_value", "parse_group_value", "Replay", "replay",
]

log = logging.getLogger("kproto.server.groups")

#: KIP-848 consumer-group record types (3-8, 16: resolved regular expressions), replayed by the
#: consumer-groups part
CONSUMER_GROUP_TYPES = frozenset({*range(3, 9), 16})
#: KIP-1071 streams-group record types (17, 19-23), replayed by the streams-groups part
STREAMS_GROUP_TYPES = frozenset({17, *range(19, 24)})


OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


# --- which partition ----------------------------------------------------------------------

# --- encoding -----------------------------------------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return CO.OffsetCommitKey.build({"version": OFFSET_COMMIT_KEY_VERSION, "data": {
        "group": group, "topic": topic, "partition": partition}})


def group_metadata_key(group: str) -> bytes:
    return CO.GroupMetadataKey.build({"version": GROUP_METADATA_KEY_VERSION, "data": {"group": group}})


def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    data = {"offset": o.committed_offset, "metadata": o.metadata, "commit_timestamp": o.commit_timestamp_ms}
    if o.expire_timestamp_ms is not None:
        # KIP-211 dropped the field; Kafka keeps v1 for commits that still carry a retention
        version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        data["expire_timestamp"] = o.expire_timestamp_ms
    else:
        version = OFFSET_COMMIT_VALUE_VERSION
        data["leader_epoch"] = o.committed_leader_epoch
    return CO.OffsetCommitValue.build({"version": version, "data": data})


def group_metadata_value(group: GroupMetadata, assignment: Mapping[str, bytes]) -> bytes:
    """The group as it is now, with ``assignment`` for each member (the new
    one on SyncGroup, the current one otherwise, nothing for an Empty group)."""
    members = []
    for m in group.members.values():
        if group.protocol_name is None:
            raise ValueError(f"group {group.group_id!r} has members but no protocol")
        members.append({
            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
            "subscription": m.metadata(group.protocol_name), "assignment": assignment[m.member_id]})
    return CO.GroupMetadataValue.build({"version": GROUP_METADATA_VALUE_VERSION, "data": {
        "protocol_type": group.protocol_type or "", "generation": group.generation_id,
        "protocol": group.protocol_name, "leader": group.leader_id,
        "current_state_timestamp": -1 if group.current_state_timestamp is None
        else group.current_state_timestamp,
        "members": members}})


# --- decoding -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


def parse_key(key: bytes) -> OffsetKey | GroupKey | None:
    """None for record types the classic coordinator does not own (key version 3+)."""
    version = key_version(key)
    if version is None:
        raise CorruptRecordError(f"__consumer_offsets key of {len(key)} bytes", path="key.version")
    if version not in (0, 1, 2):
        return None
    data = schemas.parse(CO.RecordKey, key).data
    if version == 2:
        return GroupKey(data.group)
    return OffsetKey(data.group, data.topic, data.partition)


def parse_offset_value(value: bytes) -> OffsetAndMetadata:
    parsed = schemas.parse(CO.OffsetCommitValue, value)
    d = parsed.data
    expire = d.get("expire_timestamp", -1)
    return OffsetAndMetadata(committed_offset=d.offset, committed_leader_epoch=d.get("leader_epoch", -1),
                             metadata=d.metadata, commit_timestamp_ms=d.commit_timestamp,
                             expire_timestamp_ms=None if expire == -1 else expire)


def parse_group_value(group_id: str, value: bytes) -> GroupMetadata:
    """A group as Kafka loads it (GroupMetadata.loadGroup)."""
    parsed = schemas.parse(CO.GroupMetadataValue, value)
    version, d = parsed.version, parsed.data
    stamp = d.get("current_state_timestamp", -1)
    group = GroupMetadata(group_id, GroupState.STABLE if d.members else GroupState.EMPTY,
                          current_state_timestamp=None if stamp == -1 else stamp,
                          generation_id=d.generation, protocol_type=d.protocol_type or None,
                          protocol_name=d.protocol, leader_id=d.leader)
    for m in d.members:
        group.add(MemberMetadata(
            member_id=m.member_id, group_instance_id=m.get("group_instance_id"), client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.session_timeout if version == 0 else m.rebalance_timeout,
            session_timeout_ms=m.session_timeout, protocol_type=d.protocol_type,
            supported_protocols=((d.protocol, bytes(m.subscription)),), assignment=bytes(m.assignment)))
    group.leader_id = d.leader      # add() elects the first member; the record says who leads
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


@dataclass
class Replay:
    """One partition's state after replaying its records: last write wins,
    tombstones delete."""

    groups: dict[str, GroupMetadata] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    # TxnOffsetCommits whose marker is not in the log yet: group -> producer id -> offsets
    pending_txn_offsets: dict[str, dict[int, dict[TopicPartition, OffsetAndMetadata]]] = field(
        default_factory=dict)
    removed_groups: set[str] = field(default_factory=set)
    skipped: int = 0                   # records of types the classic coordinator does not own
    # KIP-848 consumer-group records (type, key, value), in log order, for the consumer-groups part
    consumer_records: list[tuple[int, bytes, bytes | None]] = field(default_factory=list)
    unreadable: int = 0                # records that did not parse: logged and skipped
    # while replaying: where (record index) each loaded offset was written, and per producer
    # its transactional offsets with theirs (CommitRecordMetadataAndOffset.appendedBatchOffset)
    _written: dict[tuple[str, TopicPartition], int] = field(default_factory=dict, repr=False)
    _pending: dict[int, dict[tuple[str, TopicPartition], tuple[int, OffsetAndMetadata]]] = field(
        default_factory=dict, repr=False)


def replay(records: Iterable[LogRecord]) -> Replay:
    """``records``: ``(key, value)`` pairs, objects with ``.key``/``.value``
    (kproto.records.Record, LoggedRecord) and TxnMarkers, in log order, as
    GroupMetadataManager.loadGroupsAndOffsets replays them: a transactional
    offset (LoggedRecord with a producer id) is held per producer until that
    producer's COMMIT marker applies it (unless a regular commit written after
    it is loaded) or its ABORT drops it; those with no marker yet end up in
    ``pending_txn_offsets``. One that does not parse is logged (with where it
    was read) and counted in ``unreadable``."""
    out = Replay()
    for index, record in enumerate(records):
        if isinstance(record, TxnMarker):
            _complete(out, record.producer_id, record.committed)
            continue
        producer_id = record.producer_id if isinstance(record, LoggedRecord) else -1
        try:
            _apply(out, *key_value(record), producer_id, index)
        except DecodeError as e:
            out.unreadable += 1
            log.warning("skipping unreadable __consumer_offsets record at %s: %s", where_read(record, index), e)
    for producer_id, held in out._pending.items():
        for (group, tp), (_, offset) in held.items():
            out.pending_txn_offsets.setdefault(group, {}).setdefault(producer_id, {})[tp] = offset
    out._pending.clear()
    out._written.clear()
    return out


def _complete(out: Replay, producer_id: int, committed: bool) -> None:
    held = out._pending.pop(producer_id, {})
    if not committed:
        return
    for (group, tp), (at, offset) in held.items():
        if out._written.get((group, tp), -1) < at:        # olderThan: a later regular commit wins
            _put_offset(out, group, tp, offset, at)


def _put_offset(out: Replay, group: str, tp: TopicPartition, offset: OffsetAndMetadata, at: int) -> None:
    offsets = out.offsets.setdefault(group, {})
    offsets.pop(tp, None)                  # keep dict order = order of last write
    offsets[tp] = offset
    out._written[(group, tp)] = at


def _apply(out: Replay, key: bytes | None, value: bytes | None, producer_id: int, at: int) -> None:
    if key is None:
        raise CorruptRecordError("__consumer_offsets record without a key", path="key")
    parsed = parse_key(bytes(key))
    if parsed is None:
        if key_version(bytes(key)) in CONSUMER_GROUP_TYPES | STREAMS_GROUP_TYPES:
            out.consumer_records.append((key_version(bytes(key)), bytes(key), None if value is None else bytes(value)))
        else:
            out.skipped += 1
    elif isinstance(parsed, OffsetKey):
        tp = (parsed.topic, parsed.partition)
        offset = None if value is None else parse_offset_value(bytes(value))
        if producer_id >= 0:               # a TxnOffsetCommit: held until its marker
            held = out._pending.setdefault(producer_id, {})
            held.pop((parsed.group, tp), None)
            if offset is not None:
                held[(parsed.group, tp)] = (at, offset)
        elif offset is not None:
            _put_offset(out, parsed.group, tp, offset, at)
        else:
            offsets = out.offsets.get(parsed.group, {})
            offsets.pop(tp, None)
            out._written.pop((parsed.group, tp), None)
            if not offsets:
                out.offsets.pop(parsed.group, None)
    elif value is None:
        out.groups.pop(parsed.group, None)
        out.removed_groups.add(parsed.group)
    else:
        out.groups[parsed.group] = parse_group_value(parsed.group, bytes(value))
        out.removed_groups.discard(parsed.group)
