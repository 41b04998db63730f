"""Record batches from third-party builders (kafka-python's DefaultRecordBatchBuilder
and LegacyRecordBatchBuilder), stamped as a broker's append would: the segments
the dump-log and append tests read."""

from __future__ import annotations

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder


def _stamp(batch: bytes, base_offset: int, leader_epoch: int | None = None) -> bytes:
    """What the broker does on append: base offset (and v2 leader epoch), both outside the CRC."""
    data = bytearray(batch)
    data[0:8] = base_offset.to_bytes(8, "big", signed=True)
    if leader_epoch is not None:
        data[12:16] = leader_epoch.to_bytes(4, "big", signed=True)
    return bytes(data)


def v2_batch(base_offset, records, *, pid=-1, epoch=-1, seq=-1, txn=False, leader_epoch=0,
             codec=0, control=False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, txn, pid, epoch, seq, 1 << 20)
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    data = bytearray(builder.build())
    if control:      # kafka-python writes no control batches: set the bit, redo the CRC-32C
        data[21:23] = (int.from_bytes(data[21:23], "big") | 0x20).to_bytes(2, "big")
        data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return _stamp(bytes(data), base_offset, leader_epoch)


def legacy_batch(magic, records, *, codec=0, wrapper_offset=None) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for offset, ts, key, value in records:
        builder.append(offset, ts, key, value)
    data = bytes(builder.build())
    return data if wrapper_offset is None else _stamp(data, wrapper_offset)


# The gzip batches, as kafka-python 3.0.12 built them (DefaultRecordBatchBuilder /
# LegacyRecordBatchBuilder, codec gzip: gzip_encode at level 9, header mtime 0),
# then stamped: base offset 4 and leader epoch 3; wrapper offset 14. Kept as
# bytes because gzip output differs between zlib builds. The records inside:
#   V2_GZIP:     (1700000000300, b"g1", b"zip-" + b"a" * 40, [])
#                (1700000000301, b"g2", b"zip-" + b"b" * 40, [("a", b"1"), ("b", None)])
#   LEGACY_GZIP: v1 (0, 1700000000400, b"c", b"p"), (1, 1700000000401, b"d", b"q")
V2_GZIP = bytes.fromhex(
    "00000000000000040000006800000003026e710a2d0001000000010000018bcfe5692c0000018bcf"
    "e5692dffffffffffffffffffffffffffff000000021f8b08000000000002ffcb6060606049378ca8"
    "ca2cd04d24123094313031b1a41b8135251109589812990c9992180129c0bac671000000"
)


LEGACY_GZIP = bytes.fromhex(
    "000000000000000e00000052ddb83ee201010000000000000000ffffffff0000003c1f8b08000000"
    "000002ff6360800389ba2562018c400663f7f9a79913408c64105100950749495cd538b90fae6622"
    "889102220a0158768ce148000000"
)


def v2_segment() -> bytes:
    return b"".join([
        v2_batch(0, [(1700000000100, b"k", b"hello", []),
                     (1700000000123, None, b"world", [("trace", b"x")])]),
        v2_batch(2, [(1700000000150, b"k2", None, [])], pid=4000, epoch=0, seq=5, txn=True,
                 leader_epoch=3),
        v2_batch(3, [(1700000000200, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07", [])],
                 pid=4000, epoch=0, txn=True, leader_epoch=3, control=True),
        V2_GZIP,
    ])


def legacy_segment() -> bytes:
    return b"".join([
        legacy_batch(1, [(10, 1700000000300, b"a", b"x"), (11, 1700000000301, None, b"yy")]),
        legacy_batch(0, [(12, None, b"b", b"z")]),
        LEGACY_GZIP,
    ])
