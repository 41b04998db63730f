"""JSON text for exchanges, fast: the envelope walked once, records pre-rendered.

A capture is mostly records, and ``json.dumps`` spends ~5 µs on each record
dict (plus a ``default`` call per bytes value). Here records are rendered
where they are decoded (``rows_json``: one format string per record, base64
for bytes, header lists cached because producers repeat them) into
``RawJSON`` text that ``dumps`` copies as is. The output is what
``json.dumps(obj, default=json_default, separators=(",", ":"))`` would give
for the same data (tests check it).
"""

from __future__ import annotations

import binascii
import json
import uuid

__all__ = ["RawJSON", "dumps", "rows_json"]

_string = json.encoder.encode_basestring_ascii      # the C escaper json itself uses


class RawJSON(str):
    """Text that is already JSON: written verbatim."""

    __slots__ = ()


def dumps(value) -> str:
    out: list[str] = []
    _write(value, out.append)
    return "".join(out)


_KEYS: dict[str, str] = {}


def _key(k: str) -> str:
    text = _KEYS.get(k)
    if text is None:
        text = _KEYS[k] = _string(k) + ":"
    return text


def _write(v, w) -> None:
    t = type(v)
    if t is str:
        w(_string(v))
    elif t is RawJSON:
        w(v)
    elif v is None:
        w("null")
    elif t is bool:
        w("true" if v else "false")
    elif t is int:
        w(int.__repr__(v))
    elif t is float:
        w(float.__repr__(v))
    elif isinstance(v, dict):
        # scalars inline: most members of a body are ints and strings
        parts = []
        add = parts.append
        for k, x in v.items():
            tx = type(x)
            if tx is int:
                add(_key(k) + int.__repr__(x))
            elif tx is str:
                add(_key(k) + _string(x))
            elif tx is RawJSON:
                add(_key(k) + x)
            elif x is None:
                add(_key(k) + "null")
            else:
                sub: list[str] = []
                _write(x, sub.append)
                add(_key(k) + "".join(sub))
        w("{" + ",".join(parts) + "}")
    elif t is list or t is tuple:
        w("[")
        for i, x in enumerate(v):
            if i:
                w(",")
            _write(x, w)
        w("]")
    elif t is bytes or t is bytearray or t is memoryview:
        w('"' + binascii.b2a_base64(v, newline=False).decode("ascii") + '"')
    elif t is uuid.UUID:
        w('"' + str(v) + '"')
    elif isinstance(v, (set, frozenset)):
        _write(sorted(v), w)
    elif isinstance(v, str):
        w(_string(v))
    elif isinstance(v, int):
        w(int.__repr__(int(v)))
    else:
        raise TypeError(f"{type(v).__name__} is not JSON serialisable")


_HEADERS: dict = {}          # producers repeat the same headers record after record


def _headers(h) -> bytes:
    text = _HEADERS.get(h)
    if text is None:
        if len(_HEADERS) > 4096:
            _HEADERS.clear()
        text = _HEADERS[h] = dumps(list(h)).encode("ascii")
    return text


_RECORD = b'{"offset":%d,"timestamp":%d,"key":%s,"value":%s,"headers":%s}'
_LEGACY = b'{"offset":%d,"timestamp":%d,"key":%s,"value":%s,"headers":%s,"crc":%d}'


def rows_json(recs, legacy: bool) -> RawJSON:
    """The JSON array of ``recs`` (kproto.records.Record), as ``body`` lays rows out.
    Built as bytes (base64 is bytes already) and decoded once per batch."""
    b64 = binascii.b2a_base64
    headers = _headers
    if legacy:
        rows = [_LEGACY % (r.offset, r.timestamp,
                           b'"' + b64(r.key, newline=False) + b'"' if r.key is not None else b"null",
                           b'"' + b64(r.value, newline=False) + b'"' if r.value is not None else b"null",
                           headers(r.headers), r.crc) for r in recs]
    else:
        rows = [_RECORD % (r.offset, r.timestamp,
                           b'"' + b64(r.key, newline=False) + b'"' if r.key is not None else b"null",
                           b'"' + b64(r.value, newline=False) + b'"' if r.value is not None else b"null",
                           headers(r.headers)) for r in recs]
    return RawJSON((b"[" + b",".join(rows) + b"]").decode("ascii"))
