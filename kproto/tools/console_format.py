"""How ``kproto consume`` prints a record: Kafka's DefaultMessageFormatter
(``--property print.*``), a kcat/rpk ``--format`` string, or ``--json``; and
the JSON shape ``kproto produce --json`` reads back.

JSON bytes: text when valid UTF-8, ``{"base64": "..."}`` otherwise, null stays null."""

from __future__ import annotations

import base64
import json
import re
from typing import Callable, Mapping

from kproto.client.data import ConsumedRecord
from kproto.errors import UsageError
from kproto.records import NewRecord, TimestampType

Formatter = Callable[[str, int, ConsumedRecord, "PartitionState"], bytes]

#: --formatter class names kproto knows (Kafka's old and new packages).
DEFAULT_FORMATTERS = ("kafka.tools.DefaultMessageFormatter",
                      "org.apache.kafka.tools.consumer.DefaultMessageFormatter")
NOOP_FORMATTERS = ("kafka.tools.NoOpMessageFormatter", "org.apache.kafka.tools.consumer.NoOpMessageFormatter")


class PartitionState:
    """The partition's offsets from its last fetch (rpk's %[ %| %])."""

    __slots__ = ("log_start_offset", "last_stable_offset", "high_watermark")

    def __init__(self) -> None:
        self.log_start_offset = self.last_stable_offset = self.high_watermark = -1


# --- JSON -----------------------------------------------------------------------------------

def bytes_to_json(b: bytes | None):
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


def json_to_bytes(v, where: str) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    if isinstance(v, dict) and set(v) == {"base64"} and isinstance(v["base64"], str):
        try:
            return base64.b64decode(v["base64"], validate=True)
        except ValueError:
            raise UsageError(f"{where}: invalid base64") from None
    raise UsageError(f"{where}: expected a string, {{\"base64\": ...}} or null")


def record_json(topic: str, partition: int, cr: ConsumedRecord) -> dict:
    r = cr.record
    return {"topic": topic, "partition": partition, "offset": r.offset, "timestamp": r.timestamp,
            "timestamp_type": TimestampType.NAMES.get(cr.timestamp_type, "NoTimestampType"),
            "key": bytes_to_json(r.key), "value": bytes_to_json(r.value),
            "headers": [{"key": k, "value": bytes_to_json(v)} for k, v in r.headers],
            "leader_epoch": cr.leader_epoch, "producer_id": cr.producer_id,
            "producer_epoch": cr.producer_epoch, "is_transactional": cr.is_transactional, "is_control": False}


def json_text(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def json_formatter(topic: str, partition: int, cr: ConsumedRecord, state: PartitionState) -> bytes:
    return json_text(record_json(topic, partition, cr)) + b"\n"


def parse_json_record(line: str, line_number: int, key_encoder: Callable | None = None,
                      value_encoder: Callable | None = None) -> tuple[int | None, NewRecord]:
    """One line of ``consume --json`` output -> (partition or None, record). An encoder
    (a registry format's) turns the key's or value's JSON into its bytes."""
    where = f"line {line_number}"
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise UsageError(f"{where}: not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: expected a JSON object")
    partition = obj.get("partition")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise UsageError(f"{where}: partition must be a non-negative integer")
    ts = obj.get("timestamp")
    if ts is not None and (not isinstance(ts, int) or ts < -1):
        raise UsageError(f"{where}: timestamp must be an integer (ms)")
    headers = []
    for h in obj.get("headers") or []:
        if not isinstance(h, dict) or not isinstance(h.get("key"), str):
            raise UsageError(f"{where}: each header is {{\"key\": string, \"value\": ...}}")
        headers.append((h["key"], json_to_bytes(h.get("value"), f"{where} header {h['key']!r}")))
    key = (key_encoder or json_to_bytes)(obj.get("key"), f"{where} key")
    value = (value_encoder or json_to_bytes)(obj.get("value"), f"{where} value")
    return partition, NewRecord(key, value, tuple(headers),
                                None if ts is None or ts < 0 else ts)


# --- DefaultMessageFormatter -----------------------------------------------------------------

def _true(props: Mapping[str, str], name: str, default: bool) -> bool:
    return props[name].strip().lower() == "true" if name in props else default


def default_formatter(props: Mapping[str, str]) -> Formatter:
    """DefaultMessageFormatter.writeTo: timestamp, partition, offset, epoch,
    headers, key, value, each followed by key.separator (line.separator after
    the last one printed); null prints null.literal."""
    ts, part, off = _true(props, "print.timestamp", False), _true(props, "print.partition", False), \
        _true(props, "print.offset", False)
    epoch, hdrs = _true(props, "print.epoch", False), _true(props, "print.headers", False)
    key, value = _true(props, "print.key", False), _true(props, "print.value", True)
    ksep = props.get("key.separator", "\t").encode()
    lsep = props.get("line.separator", "\n").encode()
    hsep = props.get("headers.separator", ",").encode()
    null = props.get("null.literal", "null").encode()
    columns = [ts, part, off, epoch, hdrs, key, value]

    def sep(i: int) -> bytes:
        return ksep if any(columns[i + 1:]) else lsep

    def fmt(topic: str, partition: int, cr: ConsumedRecord, state: PartitionState) -> bytes:
        r = cr.record
        out = []
        if ts:
            out.append((f"{TimestampType.NAMES[cr.timestamp_type]}:{r.timestamp}"
                        if cr.timestamp_type != TimestampType.NO_TIMESTAMP_TYPE else "NO_TIMESTAMP").encode())
            out.append(sep(0))
        if part:
            out += [b"Partition:%d" % partition, sep(1)]
        if off:
            out += [b"Offset:%d" % r.offset, sep(2)]
        if epoch:
            out += [b"Epoch:%d" % cr.leader_epoch if cr.leader_epoch >= 0 else b"Epoch:NOT_PRESENT", sep(3)]
        if hdrs:
            out.append(hsep.join(k.encode() + b":" + (null if v is None else v) for k, v in r.headers)
                       if r.headers else b"NO_HEADERS")
            out.append(sep(4))
        if key:
            out += [null if r.key is None else r.key, sep(5)]
        if value:
            out += [null if r.value is None else r.value, lsep]
        return b"".join(out)

    if value and not any(columns[:-1]):
        # only values: the caller may print a chunk of records as one join (consume's fast path)
        def values(records) -> bytes:
            return lsep.join([null if r.value is None else r.value for r in records]) + lsep
        fmt.values = values
    return fmt


def noop_formatter(topic: str, partition: int, cr: ConsumedRecord, state: PartitionState) -> bytes:
    return b""


# --- kcat / rpk --format ------------------------------------------------------------------------

_TOKEN = re.compile(r"%(?:(.)(\{(?:hex|base64|text)\})?)|\\(.)", re.S)
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "0": b"\0"}


def _encode(b: bytes | None, modifier: str | None) -> bytes:
    if b is None:
        return b""
    if modifier == "{hex}":
        return b.hex().encode()
    if modifier == "{base64}":
        return base64.b64encode(b)
    return b


def _length(b: bytes | None) -> bytes:
    return b"-1" if b is None else str(len(b)).encode()


def format_string_formatter(spec: str) -> Formatter:
    """kcat's tokens (%t %p %o %k %K %s %S %R %T %h) and rpk's (%v %V %H %e
    %d %x %y %a %[ %| %]; {hex}/{base64} after %k %v %s %h); %% and \\n \\t \\r \\\\ ."""
    parts: list[Callable[[str, int, ConsumedRecord, PartitionState], bytes] | bytes] = []
    pos = 0
    for m in _TOKEN.finditer(spec):
        if m.start() > pos:
            parts.append(spec[pos:m.start()].encode())
        pos = m.end()
        if m.group(3) is not None:
            esc = _ESCAPES.get(m.group(3))
            if esc is None:
                raise UsageError(f"--format: unknown escape \\{m.group(3)}")
            parts.append(esc)
            continue
        tok, mod = m.group(1), m.group(2)
        if mod and tok not in "kvsh":
            raise UsageError(f"--format: %{tok} takes no {mod} modifier")
        parts.append(_token(tok, mod))
    if pos < len(spec):
        parts.append(spec[pos:].encode())
    fixed = [p if callable(p) else (lambda b: lambda *a: b)(p) for p in parts]

    def fmt(topic: str, partition: int, cr: ConsumedRecord, state: PartitionState) -> bytes:
        return b"".join(f(topic, partition, cr, state) for f in fixed)

    return fmt


def _token(tok: str, mod: str | None):
    r = lambda cr: cr.record  # noqa: E731
    table = {
        "t": lambda t, p, cr, s: t.encode(),
        "p": lambda t, p, cr, s: b"%d" % p,
        "o": lambda t, p, cr, s: b"%d" % r(cr).offset,
        "k": lambda t, p, cr, s: _encode(r(cr).key, mod),
        "K": lambda t, p, cr, s: _length(r(cr).key),
        "s": lambda t, p, cr, s: _encode(r(cr).value, mod),
        "v": lambda t, p, cr, s: _encode(r(cr).value, mod),
        "S": lambda t, p, cr, s: _length(r(cr).value),
        "V": lambda t, p, cr, s: _length(r(cr).value),
        "R": lambda t, p, cr, s: (-1 if r(cr).value is None else len(r(cr).value)).to_bytes(4, "big", signed=True),
        "T": lambda t, p, cr, s: b"%d" % r(cr).timestamp,
        "d": lambda t, p, cr, s: b"%d" % r(cr).timestamp,
        "h": lambda t, p, cr, s: b",".join(k.encode() + b"=" + _encode(v, mod) for k, v in r(cr).headers),
        "H": lambda t, p, cr, s: b"%d" % len(r(cr).headers),
        "e": lambda t, p, cr, s: b"%d" % cr.leader_epoch,
        "x": lambda t, p, cr, s: b"%d" % cr.producer_id,
        "y": lambda t, p, cr, s: b"%d" % cr.producer_epoch,
        "a": lambda t, p, cr, s: b"%d" % cr.attributes,
        "[": lambda t, p, cr, s: b"%d" % s.log_start_offset,
        "|": lambda t, p, cr, s: b"%d" % s.last_stable_offset,
        "]": lambda t, p, cr, s: b"%d" % s.high_watermark,
        "%": lambda t, p, cr, s: b"%",
    }
    if tok not in table:
        raise UsageError(f"--format: unknown token %{tok}")
    return table[tok]
