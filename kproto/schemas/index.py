"""Kafka's segment index files (OffsetIndex.java, TimeIndex.java).

    <base>.index      entries of  relative_offset int32, position int32    (8 bytes)
    <base>.timeindex  entries of  timestamp int64, relative_offset int32   (12 bytes)

Offsets are relative to the segment's base offset (the file name). Files are
preallocated (segment.index.bytes) and zero-filled past the last entry until
trimmed on roll or close, so readers stop at the first all-zero entry after
entry 0.
"""

from construct import Struct

from kproto.schemas.primitives import Int32, Int64

OffsetIndexEntry = Struct(
    "relative_offset" / Int32,
    "position" / Int32,
)

TimeIndexEntry = Struct(
    "timestamp" / Int64,
    "relative_offset" / Int32,
)

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
