"""JSON text for exchanges, fast: the envelope walked once, records pre-rendered.

A capture is mostly records, and ``json.dumps`` spends ~5 µs on each record
dict (plus a ``default`` call per bytes value). Here records are rendered
where they are decoded (``rows_json``: one format string per record, base64
for bytes, header lists cached because producers repeat them; ``batch_json``:
a whole v2 batch in one more) into ``RawJSON`` text that ``dumps`` (json's C
encoder, strings passed through one hook) copies as is. With the C extension
a RECORDS field of plain v2 batches goes from bytes to text in one call
(``fast_batches_json``), and any other v2 batch's records in one more
(``v2_rows``), from C generated from the record schema (generators.cjson);
the Python rendering stays for the rest. The output is what
``json.dumps(obj, default=json_default, separators=(",", ":"))`` would give
for the same data (tests check it).
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid

from construct import Container

from kproto import accel
from kproto.compression import CompressionType
from kproto.records import TimestampType

__all__ = ["RawJSON", "dumps", "dumps_bytes", "json_default", "rows_json", "batch_json", "batches_json", "v2_rows",
           "fast_batches_json"]

_string = json.encoder.encode_basestring_ascii      # the C escaper json itself uses


class RawJSON(str):
    """Text that is already JSON: written verbatim."""

    __slots__ = ()


def _encode_string(s: str, raw=RawJSON, escape=_string) -> str:
    return s if s.__class__ is raw else escape(s)


def json_default(value):
    """JSON for what JSON has no type for: bytes as standard base64 text
    (RFC 4648, padded), UUIDs in their canonical text form, sets as sorted lists."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# json.dumps(separators=(",", ":"), default=json_default)'s own encoder (C when
# there is _json), except that strings pass _encode_string: RawJSON goes verbatim
if json.encoder.c_make_encoder is not None:
    _encoder = json.encoder.c_make_encoder(None, json_default, _encode_string, None, ":", ",",
                                           False, False, True)
else:
    _encoder = json.encoder._make_iterencode(None, json_default, _encode_string, None, float.__repr__,
                                             ":", ",", False, False, True)


def dumps(value) -> str:
    """``json.dumps(value, default=json_default, separators=(",", ":"))``, with
    ``RawJSON`` copied as is."""
    return "".join(_encoder(value, 0))


def dumps_bytes(value) -> bytes:
    """``dumps(value)`` as ASCII bytes: written by the C extension when it is
    built and the value is plain data (what it declines, json writes)."""
    if _c_dumps is not None:
        text = _c_dumps(value, RawJSON, Container)      # bodies are Containers: dicts in dict order
        if text is not None:
            return text
    return dumps(value).encode("ascii")


_HEADERS: dict = {}          # producers repeat the same headers record after record


def _headers(h) -> bytes:
    text = _HEADERS.get(h)
    if text is None:
        if len(_HEADERS) > 4096:
            _HEADERS.clear()
        text = _HEADERS[h] = dumps(list(h)).encode("ascii")
    return text


_RECORD = b'{"offset":%d,"timestamp":%d,"key":%s,"value":%s,"headers":%s}'
_KEYED = b'{"offset":%d,"timestamp":%d,"key":"%s","value":"%s","headers":%s}'    # the usual case
_LEGACY = b'{"offset":%d,"timestamp":%d,"key":%s,"value":%s,"headers":%s,"crc":%d}'


def _b64(v: bytes | None) -> bytes:
    return b"null" if v is None else b'"' + binascii.b2a_base64(v, newline=False) + b'"'


def _rows(recs, legacy: bool) -> bytes:
    """The JSON array of ``recs`` (kproto.records.Record), as ``body`` lays rows out."""
    if legacy:
        rows = [_LEGACY % (r.offset, r.timestamp, _b64(r.key), _b64(r.value), _headers(r.headers), r.crc)
                for r in recs]
    else:       # key and value both set: one template, no quote concatenations, headers cache inline
        b64, cached, headers = binascii.b2a_base64, _HEADERS.get, _headers
        rows = [_KEYED % (r.offset, r.timestamp, b64(r.key, newline=False), b64(r.value, newline=False),
                          cached(r.headers) or headers(r.headers))
                if r.key is not None and r.value is not None else
                _RECORD % (r.offset, r.timestamp, _b64(r.key), _b64(r.value), headers(r.headers))
                for r in recs]
    return b"[" + b",".join(rows) + b"]"


def rows_json(recs, legacy: bool) -> RawJSON:
    """The JSON array of ``recs``, built as bytes (base64 is bytes already)
    and decoded once per batch."""
    return RawJSON(_rows(recs, legacy).decode("ascii"))


# a v2 batch as ``body._v2`` lays it out (keys in that order), non-control
_BATCH = (b'{"base_offset":%d,"batch_length":%d,"partition_leader_epoch":%d,"magic":2,"crc":%d,'
          b'"crc_valid":%s,"attributes":%d,"compression":%s,"timestamp_type":%s,"transactional":%s,'
          b'"control":false,"last_offset_delta":%d,"base_timestamp":%d,"max_timestamp":%d,'
          b'"producer_id":%d,"producer_epoch":%d,"base_sequence":%d,"records_count":%d,"records":%s}')
_FLAG_TEXT: dict[tuple, tuple[bytes, bytes, bytes]] = {}


def batch_json(batch, crc_valid: bool, flags: tuple, rows: bytes | None) -> bytes:
    """A non-control v2 batch (``flags`` from ``body._flags``, ``rows`` its
    records' JSON from ``v2_rows`` or None) as the JSON object ``body._v2``
    would be dumped to, in one format step: no dict per batch."""
    text = _FLAG_TEXT.get(flags)
    if text is None:
        text = _FLAG_TEXT[flags] = (_string(flags[0]).encode(), _string(flags[1]).encode(),
                                    b"true" if flags[2] else b"false")
    return _BATCH % (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.crc,
                     b"true" if crc_valid else b"false", batch.attributes, text[0], text[1], text[2],
                     batch.last_offset_delta, batch.base_timestamp, batch.max_timestamp, batch.producer_id,
                     batch.producer_epoch, batch.base_sequence, batch.records_count,
                     b"null" if rows is None else rows)


def v2_rows(batch) -> bytes:
    """A v2 batch's records as a JSON array: by the C accelerator when built,
    else through Record objects. Raises DecodeError as ``batch.records()``."""
    text = batch.records_json()
    return _rows(batch.records(), False) if text is None else text


def _flag_texts() -> tuple[bytes, ...]:
    # what follows "attributes" in an uncompressed batch, for (timestamp type bit, transactional bit)
    return tuple(b',"compression":%s,"timestamp_type":%s,"transactional":%s' % (
        _string(CompressionType.NONE.name_lower).encode(),
        _string(TimestampType.NAMES[TimestampType.LOG_APPEND_TIME if i & 1 else TimestampType.CREATE_TIME]).encode(),
        b"true" if i & 2 else b"false") for i in range(4))


_fast_batches = getattr(accel.crecords, "batches_json", None)
_c_dumps = getattr(accel.crecords, "dumps", None)
_FLAGS_4 = _flag_texts()


def fast_batches_json(raw) -> RawJSON | None:
    """A whole RECORDS field as JSON in one C call, when it holds only plain
    batches (v2, uncompressed, not control, CRC valid, records sound; a cut-off
    tail allowed): what ``batches_json`` gives for it. None for anything else."""
    if _fast_batches is None:
        return None
    text = _fast_batches(raw, _FLAGS_4)
    return None if text is None else RawJSON(text)


def batches_json(parts: list) -> RawJSON:
    """A RECORDS field's list of batches as JSON: ``parts`` are ``batch_json``
    bytes or, for the rare rest (legacy, control, partial), plain dicts."""
    return RawJSON((b"[" + b",".join(p if type(p) is bytes else dumps(p).encode("ascii") for p in parts)
                    + b"]").decode("ascii"))
