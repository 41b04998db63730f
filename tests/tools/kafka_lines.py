"""The lines kafka-dump-log.sh prints, re-derived from raw bytes with struct.

The expected text of tests/tools/test_dump_log*.py comes from here instead of files
written from kproto's output. Every field is read from the segment bytes by
``struct``/``zlib``/``gzip`` (independent of kproto) and laid out with the format
of Apache Kafka's core/src/main/scala/kafka/tools/DumpLogSegments.scala
(trunk 1eb76443; line numbers cited as DLS.scala:N):

- DLS.scala:73   ``Dumping <file>``
- DLS.scala:271  ``Log starting offset: <base>``
- DLS.scala:356-366 the batch line (``offset: <last>`` first for magic 0/1, DLS.scala:362)
- DLS.scala:300-343 the record line: ``| offset: O <TimestampType>: T keySize: K
  valueSize: V``, then `` sequence: S headerKeys: [..]`` (magic 2, :305) or
  `` isValid: b crc: C}`` (legacy, :308, the stray brace is Kafka's), then the
  control suffix (:317) or `` key: ..`` / `` payload: ..`` (:338-341).
"""

from __future__ import annotations

import gzip
import struct
import zlib
from typing import Iterator

import crc32c

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos


def _v2_records(body: bytes, count: int, base_offset: int, base_ts: int):
    pos = 0
    for _ in range(count):
        _, pos = _varint(body, pos)
        pos += 1                                         # attributes
        ts_delta, pos = _varint(body, pos)
        off_delta, pos = _varint(body, pos)
        klen, pos = _varint(body, pos)
        key = None if klen < 0 else body[pos:pos + klen]
        pos += max(klen, 0)
        vlen, pos = _varint(body, pos)
        value = None if vlen < 0 else body[pos:pos + vlen]
        pos += max(vlen, 0)
        nh, pos = _varint(body, pos)
        headers = []
        for _ in range(nh):
            hk, pos = _varint(body, pos)
            headers.append(body[pos:pos + hk].decode())
            pos += hk
            hv, pos = _varint(body, pos)
            pos += max(hv, 0)
        yield base_offset + off_delta, base_ts + ts_delta, key, value, headers


def _legacy_messages(data: bytes, pos: int = 0, end: int | None = None) -> Iterator[tuple]:
    end = len(data) if end is None else end
    while pos + 12 <= end:
        offset, size = struct.unpack_from(">qi", data, pos)
        crc, magic, attrs = struct.unpack_from(">Ibb", data, pos + 12)
        p = pos + 18
        ts = None
        if magic == 1:
            ts, = struct.unpack_from(">q", data, p)
            p += 8
        klen, = struct.unpack_from(">i", data, p)
        key = None if klen < 0 else data[p + 4:p + 4 + klen]
        p += 4 + max(klen, 0)
        vlen, = struct.unpack_from(">i", data, p)
        value = None if vlen < 0 else data[p + 4:p + 4 + vlen]
        valid = crc == zlib.crc32(data[pos + 16:pos + 12 + size])
        yield pos, size + 12, offset, crc, magic, attrs, ts, key, value, valid
        pos += size + 12


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _data_suffix(key: bytes | None, value: bytes | None, print_data: bool) -> str:
    out = ""
    if print_data and key is not None:
        out += f" key: {_text(key)}"
    if print_data and value is not None:
        out += f" payload: {_text(value)}"
    return out


def dump_lines(data: bytes, path: str, base_offset: int, *, deep: bool, print_data: bool) -> str:
    """The whole stdout of ``--files path`` over ``data`` (whole batches only)."""
    out = [f"Dumping {path}", f"Log starting offset: {base_offset}"]
    pos = 0
    while pos < len(data):
        length, = struct.unpack_from(">i", data, pos + 8)
        magic = data[pos + 16]
        size = length + 12
        if magic == 2:
            (base, _, ple, _, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq,
             count) = struct.unpack_from(">qiibIhiqqqhii", data, pos)
            codec = CODECS[attrs & 7]
            ts_type = TIMESTAMP_TYPES[(attrs >> 3) & 1]
            valid = crc == crc32c.crc32c(data[pos + 21:pos + size]) and size >= 61
            out.append(
                f"baseOffset: {base} lastOffset: {base + lod} count: {count} baseSequence: {bseq} "
                f"lastSequence: {-1 if bseq < 0 else bseq + lod} producerId: {pid} "
                f"producerEpoch: {pepoch} partitionLeaderEpoch: {ple} "
                f"isTransactional: {_bool(attrs & 0x10)} isControl: {_bool(attrs & 0x20)} "
                f"deleteHorizonMs: OptionalLong.empty position: {pos} {ts_type}: {max_ts} "
                f"size: {size} magic: 2 compresscodec: {codec} crc: {crc} isvalid: {_bool(valid)}")
            if deep:
                body = data[pos + 61:pos + size]
                if codec == "gzip":
                    body = gzip.decompress(body)
                for offset, ts, key, value, headers in _v2_records(body, count, base, base_ts):
                    line = (f"| offset: {offset} {ts_type}: {ts} keySize: {-1 if key is None else len(key)} "
                            f"valueSize: {-1 if value is None else len(value)} "
                            f"sequence: {-1 if bseq < 0 else bseq + offset - base} "
                            f"headerKeys: [{','.join(headers)}]")
                    if attrs & 0x20:
                        ctype, = struct.unpack_from(">h", key, 2)
                        cepoch, = struct.unpack_from(">i", value, 2)
                        line += f" endTxnMarker: {['ABORT', 'COMMIT'][ctype]} coordinatorEpoch: {cepoch}"
                    else:
                        line += _data_suffix(key, value, print_data)
                    out.append(line)
        else:
            _, _, offset, crc, magic, attrs, ts, key, value, valid = next(_legacy_messages(data, pos))
            ts_field = "NoTimestampType: -1" if magic == 0 else f"{TIMESTAMP_TYPES[(attrs >> 3) & 1]}: {ts}"
            out.append(f"offset: {offset} position: {pos} {ts_field} size: {size} magic: {magic} "
                       f"compresscodec: {CODECS[attrs & 7]} crc: {crc} isvalid: {_bool(valid)}")
            if deep:
                if attrs & 7:
                    inner = gzip.decompress(value)
                    msgs = list(_legacy_messages(inner))
                    last_rel = msgs[-1][2]
                    msgs = [(m[2] if magic == 0 else offset - last_rel + m[2],) + m[3:] for m in msgs]
                else:
                    msgs = [(offset, crc, magic, attrs, ts, key, value, valid)]
                for o, c, m, _, t, k, v, ok in msgs:
                    t_field = "NoTimestampType: -1" if m == 0 else f"{TIMESTAMP_TYPES[(attrs >> 3) & 1]}: {t}"
                    out.append(f"| offset: {o} {t_field} keySize: {-1 if k is None else len(k)} "
                               f"valueSize: {-1 if v is None else len(v)} isValid: {_bool(ok)} crc: {c}}}"
                               + _data_suffix(k, v, print_data))
        pos += size
    return "\n".join(out) + "\n"
