"""Committed offsets of a group and their retention (KIP-211).

An offset expires ``offsets.retention.minutes`` after a base time that depends
on the group (GroupMetadata.removeExpiredOffsets):

* a group with a protocol type that is Empty: since it became Empty
  (``current_state_timestamp``), or since the commit when that is unknown
  (groups loaded from GroupMetadataValue v0/v1);
* a Stable ``consumer`` group whose subscriptions parse: offsets of topics no
  member subscribes to, since their commit;
* a group without a protocol type (standalone consumers): since the commit;
* any other group: never.

An offset committed with an explicit retention (OffsetCommit v1 commit
timestamp / v2-4 ``retention_time_ms``) carries ``expire_timestamp_ms`` and
expires at that time instead. Offsets with a commit still being appended are
never expired.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["TopicPartition", "OffsetAndMetadata", "expired_offsets", "utf16_length"]

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    committed_offset: int
    committed_leader_epoch: int          # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


def utf16_length(text: str) -> int:
    """Java's String.length(): Kafka limits metadata by it."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def expired_offsets(offsets: Mapping[TopicPartition, OffsetAndMetadata], *, now_ms: int,
                    retention_ms: int, protocol_type: str | None, is_empty: bool,
                    is_stable: bool, current_state_timestamp: int | None,
                    subscribed_topics: frozenset[str] | None,
                    pending: Iterable[TopicPartition] = ()) -> list[TopicPartition]:
    """The partitions whose offsets have expired at ``now_ms``, in ``offsets`` order."""
    if protocol_type is not None and is_empty:
        keep: frozenset[str] = frozenset()

        def base(o: OffsetAndMetadata) -> int:
            return o.commit_timestamp_ms if current_state_timestamp is None else current_state_timestamp
    elif protocol_type == "consumer" and subscribed_topics is not None and is_stable:
        keep = subscribed_topics

        def base(o: OffsetAndMetadata) -> int:
            return o.commit_timestamp_ms
    elif protocol_type is None:
        keep = frozenset()

        def base(o: OffsetAndMetadata) -> int:
            return o.commit_timestamp_ms
    else:
        return []
    busy = set(pending)
    out = []
    for tp, o in offsets.items():
        if tp[0] in keep or tp in busy:
            continue
        if o.expire_timestamp_ms is not None:
            expired = now_ms >= o.expire_timestamp_ms
        else:
            expired = now_ms - base(o) >= retention_ms
        if expired:
            out.append(tp)
    return out
