"""Decoded bodies as plain data: the fields the version has, records decoded.

A body comes out of ``kproto.schemas.protocol`` as a construct Container
holding every field of the message (absent ones at their default);
``plain_body`` keeps only the fields on the wire in that version
(``kproto.schemas.message.present_only``) and replaces every RECORDS field
(Produce requests, Fetch responses, and any API the registry adds later) by
its batches, decoded with ``kproto.records.iter_batches``:

    {"base_offset", "batch_length", "partition_leader_epoch", "magic": 2, "crc",
     "crc_valid", "attributes", "compression", "timestamp_type", "transactional",
     "control", "last_offset_delta", "base_timestamp", "max_timestamp",
     "producer_id", "producer_epoch", "base_sequence", "records_count",
     "records": [{"offset", "timestamp", "key", "value", "headers": [[key, value]...]}
                 (+ "control": {"type": "COMMIT", "coordinator_epoch"} in control batches)]}
    magic 0/1: {"offset", "message_size", "magic", "crc", "crc_valid", "attributes",
     "compression", "timestamp_type", "timestamp", "records": [... + "crc"]}
    a batch cut off at the end (fetch responses may end mid-batch):
     {"partial_batch_bytes": n}

Values are Python values (``bytes`` for keys, values, assignments...);
``json_default`` says how JSON writes what JSON has no type for.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Callable

from kproto.capture.jsonout import (
    RawJSON, batch_json, batches_json, fast_batches_json, json_default, rows_json, v2_rows,
)
from kproto.errors import DecodeError, ErrorCode
from kproto.records import LegacyBatch, TimestampType, control_record, iter_batches
from kproto.schemas.message import RECORDS, ArrayOf, Struct, present_only

__all__ = ["plain_body", "decode_records", "json_default", "topics_of", "error_codes_of",
           "mask_plain_token", "record_count"]


@lru_cache(maxsize=None)
def _has_records(spec: Struct) -> bool:
    for f in spec.fields:
        t = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        if t is RECORDS or (isinstance(t, Struct) and _has_records(t)):
            return True
    return False


def plain_body(spec: Struct, version: int, value, warnings: list[str], binary: str = "bytes",
               projected: bool = False) -> dict:
    """``value`` with only ``version``'s fields and its records decoded; record
    problems (CRC, codec, truncation) become ``warnings``, never exceptions.
    ``binary``: how records come out (``ROWS``); ``projected``: ``value``
    holds only the version's fields already (decoded with ``present=True``)."""
    body = value if projected else present_only(spec, version, value)
    if _has_records(spec):
        _records_in(spec, version, body, warnings, "", ROWS[binary])
    return body


def _rows_bytes(recs, legacy: bool) -> list[dict]:
    if legacy:
        return [{"offset": r.offset, "timestamp": r.timestamp, "key": r.key, "value": r.value,
                 "headers": r.headers, "crc": r.crc} for r in recs]
    return [{"offset": r.offset, "timestamp": r.timestamp, "key": r.key, "value": r.value,
             "headers": r.headers} for r in recs]


#: how records come out: dicts with ``bytes`` (the Python API), or the same
#: rows pre-rendered as JSON text (``kproto decode --json``, kproto.capture.jsonout)
ROWS = {"bytes": _rows_bytes, "json": rows_json}


@lru_cache(maxsize=None)
def _records_plan(spec: Struct) -> tuple[tuple[str, "Struct | None", bool], ...]:
    """(name, nested struct or None for RECORDS itself, is array) of the
    fields that hold records or lead to them."""
    plan = []
    for f in spec.fields:
        t = f.type.elem if isinstance(f.type, ArrayOf) else f.type
        if t is RECORDS:
            plan.append((f.name, None, False))
        elif isinstance(t, Struct) and _has_records(t):
            plan.append((f.name, t, isinstance(f.type, ArrayOf)))
    return tuple(plan)


def _records_in(spec: Struct, version: int, value, warnings: list[str], where, rows) -> None:
    for name, sub, is_array in _records_plan(spec):
        v = value.get(name)
        if v is None:
            continue
        if sub is None:
            value[name] = decode_records(v, warnings, where, rows)
        else:       # labels are for warnings: made only if one is written
            for item in (v if is_array else [v]):
                _records_in(sub, version, item, warnings, partial(_label, item, where), rows)


def _label(item: dict, where: "str | Callable[[], str]") -> str:
    """Where a RECORDS field sits, for warnings: ``topic t partition 0``."""
    where = where if isinstance(where, str) else where()
    name = item.get("name") or item.get("topic") or item.get("topic_id")
    if name:
        return f"topic {name}"
    for key in _PARTITION_KEYS:
        if key in item:
            return f"{where} partition {item[key]}".strip()
    return where


_FLAGS: dict[int, tuple] = {}


def _flags(batch) -> tuple[str, str, bool, bool]:
    """(compression, timestamp type, transactional, control) of a batch's
    attributes, worked out by the batch itself once per attributes value."""
    flags = _FLAGS.get(batch.attributes)
    if flags is None:
        flags = _FLAGS[batch.attributes] = (batch.compression.name_lower,
                                            TimestampType.NAMES[batch.timestamp_type],
                                            batch.is_transactional, batch.is_control)
    return flags


def _v2(batch, warnings: list[str], where: str, rows) -> dict | bytes:
    crc_valid = batch.compute_crc() == batch.crc
    flags = _flags(batch)
    compression, timestamp_type, transactional, control = flags
    if rows is rows_json and not control:      # --json: the batch as JSON text at once
        if not crc_valid:
            _crc_warning(batch, warnings, where)
        return batch_json(batch, crc_valid, flags, _records_of(batch, warnings, where, batch.base_offset, v2_rows))
    out = {"base_offset": batch.base_offset, "batch_length": batch.batch_length,
           "partition_leader_epoch": batch.partition_leader_epoch, "magic": 2, "crc": batch.crc,
           "crc_valid": crc_valid, "attributes": batch.attributes, "compression": compression,
           "timestamp_type": timestamp_type, "transactional": transactional, "control": control,
           "last_offset_delta": batch.last_offset_delta, "base_timestamp": batch.base_timestamp,
           "max_timestamp": batch.max_timestamp, "producer_id": batch.producer_id,
           "producer_epoch": batch.producer_epoch, "base_sequence": batch.base_sequence,
           "records_count": batch.records_count}
    if not crc_valid:
        _crc_warning(batch, warnings, where)
    recs = _records_of(batch, warnings, where, batch.base_offset)
    if recs is None:
        out["records"] = None
        return out
    if control and rows is rows_json:
        rows = _rows_bytes                   # rare; its rows get a "control" member below
    out["records"] = made = rows(recs, False)
    if control:
        for row, r in zip(made, recs):
            try:
                c = control_record(r)
                row["control"] = {"type": c.type_name, "coordinator_epoch": c.coordinator_epoch}
            except DecodeError as e:
                warnings.append(f"{where}: control record at offset {r.offset}: {e}")
    return out


def _crc_warning(batch, warnings: list[str], where: str) -> None:
    warnings.append(f"{where}: batch at offset {batch.base_offset}: crc mismatch "
                    f"(stored {batch.crc:#010x}, computed {batch.compute_crc():#010x})")


def _legacy(batch: LegacyBatch, warnings: list[str], where: str, rows) -> dict:
    crc_valid = batch.compute_crc() == batch.crc
    if not crc_valid:
        warnings.append(f"{where}: message at offset {batch.offset}: crc mismatch "
                        f"(stored {batch.crc:#010x}, computed {batch.compute_crc():#010x})")
    out = {"offset": batch.offset, "message_size": batch.message_size, "magic": batch.magic,
           "crc": batch.crc, "crc_valid": crc_valid, "attributes": batch.attributes,
           "compression": batch.compression.name_lower,
           "timestamp_type": TimestampType.NAMES[batch.timestamp_type], "timestamp": batch.timestamp}
    recs = _records_of(batch, warnings, where, batch.offset)
    out["records"] = None if recs is None else rows(recs, True)
    return out


def _records_of(batch, warnings: list[str], where: str, offset: int, read=lambda batch: batch.records()):
    """The batch's records (as ``read`` gives them); None and a warning if
    they do not decode (the batch's frame is sound, so the walk goes on to
    the next batch)."""
    try:
        return read(batch)
    except DecodeError as e:
        warnings.append(f"{where}: batch at offset {offset}: records do not decode: {e}")
        return None


def decode_records(raw: bytes | None, warnings: list[str], where: "str | Callable[[], str]" = "",
                   rows=_rows_bytes) -> "list[dict] | RawJSON | None":
    """Every batch in ``raw`` (any magic), records decoded and CRCs checked;
    with ``rows_json`` the whole list comes out as JSON text. ``where``
    (or what it returns) starts each warning."""
    if rows is rows_json and raw is not None:
        text = fast_batches_json(raw)        # the usual field, with nothing to warn about, at once
        if text is not None:
            return text
    out = _batches(raw, warnings, where if isinstance(where, str) else where(), rows)
    return batches_json(out) if rows is rows_json and out is not None else out


def _batches(raw: bytes | None, warnings: list[str], where: str, rows) -> list | None:
    if raw is None:
        return None
    where = where or "records"
    out: list[dict] = []
    end = 0
    try:
        for batch in iter_batches(raw, verify_crc=False, allow_incomplete=True):
            end = batch.position + batch.size
            out.append(_legacy(batch, warnings, where, rows) if isinstance(batch, LegacyBatch)
                       else _v2(batch, warnings, where, rows))
    except DecodeError as e:
        warnings.append(f"{where}: {e}")
        return out
    if end < len(raw):
        out.append({"partial_batch_bytes": len(raw) - end})
    return out


def record_count(body) -> int:
    """Records in every decoded RECORDS field of a plain body."""
    n = 0
    stack = [body]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "records" and isinstance(x, list):
                    n += sum(len(b.get("records", ())) for b in x)
                elif isinstance(x, (list, dict)):
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, (list, dict)))
    return n


# --- summaries ----------------------------------------------------------------

_TOPIC_ARRAYS = ("topics", "topic_data", "responses", "results", "forgotten_topics_data")
_PARTITION_ARRAYS = ("partitions", "partition_data", "partition_responses", "partition_indexes")
_PARTITION_KEYS = ("index", "partition_index", "partition")


def topics_of(body, topic_names: dict | None = None) -> dict[str, set[int]]:
    """topic -> partitions named in a plain body (topic ids resolved through
    ``topic_names`` when the capture showed them, else written ``id:<uuid>``)."""
    out: dict[str, set[int]] = {}
    if not isinstance(body, dict):
        return out
    for key in _TOPIC_ARRAYS:
        for t in body.get(key) or ():
            if not isinstance(t, dict):
                continue
            name = t.get("name") or t.get("topic")
            if not name and t.get("topic_id") is not None:
                name = (topic_names or {}).get(t["topic_id"]) or f"id:{t['topic_id']}"
            if not isinstance(name, str):
                continue
            parts = out.setdefault(name, set())
            for pkey in _PARTITION_ARRAYS:
                for p in t.get(pkey) or ():
                    if isinstance(p, int):
                        parts.add(p)
                    elif isinstance(p, dict):
                        parts.update(p[k] for k in _PARTITION_KEYS if k in p)
    for g in body.get("groups") or ():        # OffsetFetch v8+: topics under groups
        if isinstance(g, dict):
            for name, parts in topics_of(g, topic_names).items():
                out.setdefault(name, set()).update(parts)
    return out


def error_codes_of(body) -> list[int]:
    """Every non-zero error_code in a plain body, in order of appearance, once each."""
    seen: dict[int, None] = {}
    stack = [body]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            code = v.get("error_code")
            if isinstance(code, int) and code:
                seen[code] = None
            stack.extend(x for k, x in v.items() if k != "records" and isinstance(x, (list, dict)))
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, (list, dict)))
    return list(seen)


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


# --- SASL ---------------------------------------------------------------------

MASK = b"********"


def mask_plain_token(token: bytes | None) -> bytes | None:
    """SASL PLAIN (RFC 4616) ``authzid NUL authcid NUL passwd``: the password
    replaced, whatever its length. Other tokens pass unchanged."""
    if not token or token.count(b"\x00") != 2:
        return token
    authzid, authcid, _ = token.split(b"\x00")
    return authzid + b"\x00" + authcid + b"\x00" + MASK
