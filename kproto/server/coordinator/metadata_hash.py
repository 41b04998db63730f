"""KIP-1101's metadata hash of a consumer group's subscribed topics (Kafka 4.1+), written in
ConsumerGroupMetadataValue.MetadataHash: the group epoch is bumped when it changes.

Kafka's Utils.computeTopicHash / computeGroupHash (group-coordinator, Kafka 4.4) feed hash4j's
XXH3-64 (seed 0) hash stream, whose ``putLong``/``putInt`` write little-endian bytes and whose
``putString`` writes the string's UTF-16LE code units then its length as an int; the stream's
hash is that of the bytes written, so the same bytes through ``xxhash.xxh3_64`` give the same
value (as a signed Java long).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping, Sequence

import xxhash

__all__ = ["topic_hash", "group_hash"]

_LONG, _INT = struct.Struct("<q"), struct.Struct("<i")
_MAGIC = b"\x00"          # computeTopicHash's leading putByte(0)


def _string(text: str) -> bytes:
    """HashStream64.putString: the UTF-16 code units, then their count."""
    units = text.encode("utf-16-le", "surrogatepass")
    return units + _INT.pack(len(units) // 2)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def topic_hash(topic_id: uuid.UUID, name: str, partitions: int,
               racks: Mapping[int, Sequence[str]] | None = None) -> int:
    """computeTopicHash: magic byte, the topic id (most, least significant longs), the name, the
    partition count, then each partition's index and its replicas' racks (sorted, each as its
    length then the string)."""
    msb, lsb = (_signed(topic_id.int >> 64), _signed(topic_id.int & (1 << 64) - 1))
    out = [_MAGIC, _LONG.pack(msb), _LONG.pack(lsb), _string(name), _INT.pack(partitions)]
    for p in range(partitions):
        out.append(_INT.pack(p))
        for rack in sorted((racks or {}).get(p, ())):
            out += [_INT.pack(len(rack)), _string(rack)]
    return _signed(xxhash.xxh3_64_intdigest(b"".join(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """computeGroupHash: 0 for no topics, else the topics' hashes in name order, as longs."""
    if not topic_hashes:
        return 0
    return _signed(xxhash.xxh3_64_intdigest(b"".join(_LONG.pack(topic_hashes[t]) for t in sorted(topic_hashes))))
