"""The JVM's hashing and hash-table iteration orders, emulated.

Kafka prints and places things in orders that come from Java: a group's
``__consumer_offsets`` partition is ``Utils.abs(groupId.hashCode()) % n``,
and its tools print Scala ``mutable.HashSet``/``HashMap`` and Java
``HashMap`` contents in those tables' iteration order. Matching Kafka byte
for byte means computing the same hashes and the same orders, here once for
the coordinator and the tools alike. Pure functions, no I/O.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

__all__ = ["int32", "java_string_hash", "kafka_abs", "topic_partition_hash", "scala_hash_order",
           "java_hashmap_order"]

T = TypeVar("T")

_INT32_MIN = -(1 << 31)


def int32(value: int) -> int:
    """``value`` wrapped to a signed 32-bit int, as Java arithmetic leaves it."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``31*h + c`` over UTF-16 code units, as a signed int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: Integer.MIN_VALUE maps to 0."""
    return 0 if n == _INT32_MIN else abs(n)


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return 31 * (31 + tp[1]) + java_string_hash(tp[0])


def scala_hash_order(inserts: Iterable[T], hash_of: Callable[[T], int], *,
                     hints: Iterable[int] = ()) -> list[T]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet``/``HashMap``
    after ``inserts`` (repeats allowed: each is an add/put).

    The table starts at 16 buckets and doubles when ``size + 1 >= 0.75 *
    buckets`` *before* each add or put (an update of a present key counts too);
    ``hints`` are ``sizeHint`` calls made before the adds (``++=``). A bucket is
    ``improve(hash) & (buckets - 1)`` with ``improve(h) = h ^ (h >>> 16)``,
    and nodes in a bucket are kept sorted by improved hash (signed).
    """
    length, seen, order = 16, set(), []
    for n in hints:
        target = max(4, int((n + 1) / 0.75) - 1).bit_length()
        length = max(length, min(1 << target, 1 << 30))
    for item in inserts:
        if len(seen) + 1 >= int(length * 0.75):
            length *= 2
        if item not in seen:
            seen.add(item)
            order.append(item)

    def key(item: T) -> tuple[int, int]:
        h = hash_of(item) & 0xFFFFFFFF
        improved = int32(h ^ (h >> 16))
        return improved & (length - 1), improved

    return sorted(order, key=key)


def java_hashmap_order(keys: Iterable[T], hash_of: Callable[[T], int], *,
                       initial_capacity: int | None = None, copy: bool = False) -> list[T]:
    """The iteration order of a ``java.util.HashMap`` after putting ``keys``
    in order (repeats are updates): by bucket of the final table, then by
    insertion (resizes split bins keeping their order). ``initial_capacity``
    is the ``new HashMap<>(n)`` argument; None means ``new HashMap<>()``;
    ``copy`` is ``new HashMap<>(map)`` of a map holding ``keys`` (JDK 11-17 sizing)."""
    keys = list(dict.fromkeys(keys)) if copy else keys
    if copy:
        initial_capacity = int(len(keys) / 0.75 + 1.0) if keys else None
    if initial_capacity is None:
        cap, threshold = 0, 0
    else:
        c = max(initial_capacity, 1)
        cap, threshold = 0, 1 << (c - 1).bit_length()        # tableSizeFor
    seen: dict = {}
    for key in keys:
        if key in seen:
            continue
        if cap == 0:                                          # first put: resize()
            cap = threshold or 16
            threshold = int(cap * 0.75)
        seen[key] = len(seen)
        if len(seen) > threshold:
            old, cap = cap, cap * 2
            threshold = threshold * 2 if old >= 16 else int(cap * 0.75)

    def bucket(key: T) -> tuple[int, int]:
        h = hash_of(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1), seen[key]

    return sorted(seen, key=bucket)
