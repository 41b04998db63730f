"""Output for the tools: Java-style value rendering, Jackson-style JSON, and
a buffered line writer.

Kafka's tools print Java values, and their exact text is part of the format:
``true``/``false``, ``OptionalLong.empty``/``OptionalLong[n]``, unsigned CRCs,
``[a,b]`` lists (Scala ``mkString("[", ",", "]")``), Jackson's compact JSON
(``ObjectNode.toString``) and, where Kafka iterates a Scala ``mutable.HashSet``
or ``mutable.HashMap``, that collection's iteration order. The helpers here
are the one place those rules live. Stdout carries data only: the writer is
for stdout; diagnostics go through ``err``.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from functools import partial
from typing import Callable, Iterable, TypeVar

from kproto import schemas
from kproto.errors import DecodeError
from kproto.schemas import consumer_offsets as CO
from kproto.schemas import transaction_log as TL

T = TypeVar("T")

__all__ = [
    "plain_decoder", "consumer_offsets_record", "transaction_log_record", "text_parser", "json_parser",
    "java_bool", "optional_long", "java_list", "java_file", "java_string_hash", "scala_hash_order",
    "jackson_json", "kafka_json", "camel", "LineWriter", "err",
]


# --- Java values ---------------------------------------------------------------------

def java_bool(value: bool) -> str:
    return "true" if value else "false"


def optional_long(value: int | None) -> str:
    """``java.util.OptionalLong.toString()``."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def java_list(items: Iterable[object]) -> str:
    """Scala ``mkString("[", ",", "]")``: no spaces."""
    return "[" + ",".join(map(str, items)) + "]"


def java_file(path: str) -> str:
    """``new java.io.File(path).toString()``: repeated separators collapsed and
    a trailing one dropped (nothing else is normalised; ``./`` stays)."""
    if not path:
        return path
    out = re.sub(r"/{2,}", "/", path)
    return out[:-1] if len(out) > 1 and out.endswith("/") else out


def java_absolute_path(path: str) -> str:
    """``File.getAbsolutePath()``: the current directory prefixed, ``..`` kept."""
    import os
    p = java_file(path)
    return p if p.startswith("/") else java_file(os.getcwd() + "/" + p)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``31*h + c`` over UTF-16 code units, as a signed int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


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
        improved = _int32(h ^ (h >> 16))
        return improved & (length - 1), improved

    return sorted(order, key=key)


# --- JSON --------------------------------------------------------------------------------

_LOWER_HEX_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def _jsonable(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def jackson_json(value) -> str:
    """Jackson's ``JsonNode.toString()``: compact, non-ASCII unescaped, control
    characters as ``\\uXXXX`` with upper-case hex, binary as base64."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)
    if "\\u00" in text:
        text = _LOWER_HEX_ESCAPE.sub(lambda m: m.group(1) + "\\u00" + m.group(2).upper(), text)
    return text


def camel(name: str) -> str:
    """Kafka's JSON field name for a kproto (snake_case) field name."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def kafka_json(value):
    """A parsed construct value as Kafka's generated JsonConverter writes it:
    camelCase keys in schema order, bytes as base64 (on dumping), private and
    tagged-field entries left out (the messages shown define no tagged fields)."""
    if isinstance(value, dict):
        return {camel(k): kafka_json(v) for k, v in value.items()
                if not k.startswith("_") and k != "tagged_fields"}
    if isinstance(value, list):
        return [kafka_json(v) for v in value]
    return value


# --- record decoders (DumpLogSegments' MessageParser implementations) ---------------------

class JsonValue:
    """A decoder result that is JSON: text mode prints it Jackson-style, --json nests it."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


_utf8 = partial(bytes.decode, encoding="utf-8", errors="replace")   # Kafka's StringDecoder


def plain_decoder(name: str, as_json: bool):
    if name == "utf8":
        return _utf8
    if name == "hex":
        return bytes.hex
    if name == "base64":
        return lambda b: base64.b64encode(b).decode("ascii")

    def json_decoder(b: bytes):
        try:
            value = json.loads(b)
        except ValueError:
            return _utf8(b)
        return value if as_json else jackson_json(value)
    return json_decoder


def _int16(b: bytes) -> int:
    return int.from_bytes(b[:2], "big", signed=True)


def consumer_offsets_record(record):
    """Kafka 3.8+ OffsetsMessageParser: (key, payload) as JsonValue or text."""
    o, key, value = record.offset, record.key, record.value
    if key is None:
        return (f"Failed to decode message at offset {o} using offset topic decoder "
                "(message had a missing key)", None)
    if len(key) < 2:
        return f"Error at offset {o}, skipping. Could not read version from key's buffer.", None
    kind = _int16(key)
    if kind not in CO.KEY_TYPES:
        return f"Unknown record type {kind} at offset {o}, skipping.", None
    schema = CO.value_schema(kind)
    if schema is None:
        return (f"Error at offset {o}, skipping. kproto has no schema for "
                f"{CO.KEY_TYPES[kind]} records (type {kind}).", None)
    try:
        k = schemas.parse(CO.RecordKey, key)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version {kind} "
                f"from key's buffer due to: {e.reason}.", None)
    shown_key = JsonValue({"type": str(kind), "data": kafka_json(k.data)})
    if value is None:
        return shown_key, "<DELETE>"
    if len(value) < 2:
        return f"Error at offset {o}, skipping. Could not read version from value's buffer.", None
    try:
        v = schemas.parse(schema, value)
    except DecodeError as e:
        return (f"Error at offset {o}, skipping. Could not read record with version "
                f"{_int16(value)} from value's buffer due to: {e.reason}.", None)
    data = kafka_json(v.data)
    if kind == 2 and data.get("protocolType") == "consumer":
        # Kafka decodes each member's embedded protocol bytes, keeping the
        # bytes (base64) when they do not parse.
        for member in data.get("members") or ():
            for name, sub in (("subscription", CO.ConsumerProtocolSubscription),
                              ("assignment", CO.ConsumerProtocolAssignment)):
                try:
                    member[name] = kafka_json(schemas.parse(sub, member[name]).data)
                except DecodeError:
                    pass
    return shown_key, JsonValue({"version": str(v.version), "data": data})


def transaction_log_record(record):
    """TransactionLog.formatRecordKeyAndValue (2.5-3.9)."""
    o, key, value = record.offset, record.key, record.value
    if key is None or len(key) < 2:
        return f"Error at offset {o}, skipping. The record has no transaction log key.", None
    if _int16(key) != 0:
        return f"unknown::version={_int16(key)}", None
    try:
        txn_id = schemas.parse(TL.TransactionLogKey, key).data.transactional_id
    except DecodeError as e:
        return f"Error at offset {o}, skipping. {e.reason}", None
    shown_key = f"transaction_metadata::transactionalId={txn_id}"
    if value is None:
        return shown_key, "<DELETE>"
    try:
        v = schemas.parse(TL.TransactionLogValue, value).data
    except DecodeError as e:
        if len(value) >= 2 and _int16(value) not in (0, 1):
            reason = f"Unknown version {_int16(value)} from the transaction log message value"
        else:
            reason = e.reason
        return f"Error at offset {o}, skipping. {reason}", None
    state = TL.TRANSACTION_STATES.get(v.transaction_status)
    if state is None:
        return (f"Error at offset {o}, skipping. Unknown transaction state id "
                f"{v.transaction_status} from the transaction status message", None)
    partitions: list[tuple[str, int]] = []
    hints = []
    if state != "Empty":
        for group in v.transaction_partitions or ():
            tps = [(group.topic, p) for p in group.partition_ids]
            hints.append(len(set(tps)))
            partitions += tps
    # TransactionMetadata.topicPartitions is a Scala mutable.HashSet of TopicPartition.
    ordered = scala_hash_order(partitions, _topic_partition_hash, hints=hints)
    shown = ",".join(f"{t}-{p}" for t, p in ordered)
    return shown_key, (f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},state={state},"
                       f"partitions=[{shown}],txnLastUpdateTimestamp="
                       f"{v.transaction_last_update_timestamp_ms},txnTimeoutMs={v.transaction_timeout_ms}")


def _topic_partition_hash(tp: tuple[str, int]) -> int:
    # TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode(), as an int.
    return 31 * (31 + tp[1]) + java_string_hash(tp[0])


def text_parser(parser):
    def parse(record):
        k, v = parser(record)
        return (jackson_json(k.value) if isinstance(k, JsonValue) else k,
                jackson_json(v.value) if isinstance(v, JsonValue) else v)
    return parse


def json_parser(parser):
    def parse(record):
        k, v = parser(record)
        return (k.value if isinstance(k, JsonValue) else k,
                v.value if isinstance(v, JsonValue) else v)
    return parse


# --- output -----------------------------------------------------------------------------

class LineWriter:
    """Lines to a binary stream, encoded UTF-8 and written in large chunks.

    Hot loops append to ``lines`` (a plain list, pre-bound as ``append``) and
    call ``maybe_flush`` once per batch; nothing is formatted twice.
    """

    CHUNK = 4096

    def __init__(self, stream=None) -> None:
        stream = stream or sys.stdout
        stream.flush()
        self._text = None if hasattr(stream, "buffer") else stream
        self._raw = getattr(stream, "buffer", None)
        self.lines: list[str] = []
        self.append = self.lines.append

    def maybe_flush(self) -> None:
        if len(self.lines) >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        lines = self.lines
        if lines:
            text = "\n".join(lines) + "\n"
            lines.clear()
            if self._raw is not None:
                self._raw.write(text.encode("utf-8", "surrogateescape"))
            else:
                self._text.write(text)
        (self._raw or self._text).flush()


def err(line: str) -> None:
    """One diagnostic line on stderr."""
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


# --- dump-log lines (DumpLogSegments.scala @3.9.0-rc3: printBatchLevel, dumpLog) --------
#
# The one place the kafka-dump-log text lives. Record loops are written out
# per shape (v2 / legacy, metadata or not) because they run once per record:
# every value a line needs is a local, and each line is one f-string.

INT32_MAX = 2**31 - 1
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")   # CompressionType.name, 3.0+
TIMESTAMP_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
CONTROL_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                 4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


def v2_batch_line(b, position: int, codec: str, valid: bool) -> str:
    ts = "LogAppendTime" if b.attributes & 0x08 else "CreateTime"
    return (f"baseOffset: {b.base_offset} lastOffset: {b.base_offset + b.last_offset_delta} "
            f"count: {b.records_count} baseSequence: {b.base_sequence} lastSequence: {last_sequence(b)} "
            f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
            f"partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {'true' if b.attributes & 0x10 else 'false'} "
            f"isControl: {'true' if b.attributes & 0x20 else 'false'} "
            f"deleteHorizonMs: {optional_long(b.delete_horizon_ms)} position: {position} "
            f"{ts}: {b.max_timestamp} size: {b.size} magic: 2 compresscodec: {codec} "
            f"crc: {b.crc} isvalid: {'true' if valid else 'false'}")


def last_sequence(b) -> int:
    """DefaultRecordBatch.lastSequence: only -1 (NO_SEQUENCE) means none; any
    other base sequence is incremented (wrapping past Int.MAX to 0)."""
    return -1 if b.base_sequence == -1 else _sequence(b.base_sequence, b.last_offset_delta)


def legacy_batch_line(b, position: int, codec: str, valid: bool) -> str:
    return (f"offset: {b.offset} position: {position} {TIMESTAMP_NAMES[b.timestamp_type]}: "
            f"{b.max_timestamp} size: {b.size} magic: {b.magic} compresscodec: {codec} "
            f"crc: {b.crc} isvalid: {'true' if valid else 'false'}")


def v2_batch_json(b, position: int, codec: str, valid: bool) -> dict:
    ts = "LogAppendTime" if b.attributes & 0x08 else "CreateTime"
    return {"baseOffset": b.base_offset, "lastOffset": b.base_offset + b.last_offset_delta,
            "count": b.records_count, "baseSequence": b.base_sequence,
            "lastSequence": last_sequence(b), "producerId": b.producer_id,
            "producerEpoch": b.producer_epoch, "partitionLeaderEpoch": b.partition_leader_epoch,
            "isTransactional": bool(b.attributes & 0x10), "isControl": bool(b.attributes & 0x20),
            "deleteHorizonMs": b.delete_horizon_ms, "position": position, ts: b.max_timestamp,
            "size": b.size, "magic": 2, "compresscodec": codec, "crc": b.crc, "isvalid": valid}


def legacy_batch_json(b, position: int, codec: str, valid: bool) -> dict:
    return {"offset": b.offset, "position": position,
            TIMESTAMP_NAMES[b.timestamp_type]: b.max_timestamp, "size": b.size, "magic": b.magic,
            "compresscodec": codec, "crc": b.crc, "isvalid": valid}


def control_suffix(control) -> str:
    """What Kafka appends for a control record (``control`` is records.ControlRecord)."""
    if control.type in (0, 1):
        return f" endTxnMarker: {CONTROL_NAMES[control.type]} coordinatorEpoch: {control.coordinator_epoch}"
    return f" controlType: {CONTROL_NAMES.get(control.type, 'UNKNOWN')}({control.type})"


def control_fields(control) -> dict:
    if control.type in (0, 1):
        return {"endTxnMarker": CONTROL_NAMES[control.type], "coordinatorEpoch": control.coordinator_epoch}
    return {"controlType": f"{CONTROL_NAMES.get(control.type, 'UNKNOWN')}({control.type})"}


class RecordPrinter:
    """Record lines for one file: text (``| offset: …``) or JSON dicts.

    ``kdec``/``vdec`` turn key/value bytes into text; ``parser`` (record ->
    (key, payload)) replaces both for the topic decoders. ``last``/``gaps``
    track Kafka's non-consecutive offsets over the whole file.
    """

    def __init__(self, *, data: bool, skip_metadata: bool, kdec, vdec, parser, control_record,
                 utf8: bool = False) -> None:
        self.data = data
        self.utf8 = utf8 and parser is None     # both decoders are Kafka's StringDecoder
        self.skip = skip_metadata
        self.kdec = kdec
        self.vdec = vdec
        self.parser = parser
        self.control_record = control_record
        self.last = -1
        self.gaps: list[tuple[int, int]] = []

    # -- text ------------------------------------------------------------------------

    def v2_lines(self, append, batch, recs) -> None:
        bo = batch.base_offset
        bs = batch.base_sequence
        ts = "LogAppendTime" if batch.attributes & 0x08 else "CreateTime"
        control = batch.attributes & 0x20
        show = self.data and not control
        if self.skip:
            for r in recs:
                self._track(r.offset)
                append(self._data_only(r) if show else "")
            return
        if show and self.utf8:
            return self._v2_utf8(append, recs, ts, bs, bo)
        kdec, vdec, parser = self.kdec, self.vdec, self.parser
        gaps = self.gaps
        nxt = self.last + 1
        for r in recs:
            o = r.offset
            if o != nxt and nxt:
                gaps.append((nxt - 1, o))
            nxt = o + 1
            k = r.key
            v = r.value
            h = r.headers
            if bs < 0:
                seq = -1
            else:
                seq = bs + o - bo
                if seq > INT32_MAX:
                    seq -= 2147483648
            line = (f"| offset: {o} {ts}: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                    f"valueSize: {-1 if v is None else len(v)} sequence: {seq} "
                    f"headerKeys: [{','.join([x[0] for x in h]) if h else ''}]")
            if show:
                if parser is None:
                    if k is not None:
                        line = f"{line} key: {kdec(k)}"
                    if v is not None:
                        line = f"{line} payload: {vdec(v)}"
                else:
                    ks, vs = parser(r)
                    if ks is not None:
                        line = f"{line} key: {ks}"
                    if vs is not None:
                        line = f"{line} payload: {vs}"
            elif control:
                line += control_suffix(self.control_record(r))
            append(line)
        self.last = nxt - 1

    def _v2_utf8(self, append, recs, ts, bs, bo) -> None:
        # The benchmark path (--print-data-log, default decoders): one
        # f-string per record, the UTF-8 decode inlined (Kafka's StringDecoder
        # is new String(bytes, UTF_8): malformed input becomes U+FFFD).
        gaps = self.gaps
        nxt = self.last + 1
        for r in recs:
            o = r.offset
            if o != nxt and nxt:
                gaps.append((nxt - 1, o))
            nxt = o + 1
            k = r.key
            v = r.value
            h = r.headers
            if bs < 0:
                seq = -1
            else:
                seq = bs + o - bo
                if seq > INT32_MAX:
                    seq -= 2147483648
            if k is not None:
                if v is not None:
                    append(f"| offset: {o} {ts}: {r.timestamp} keySize: {len(k)} valueSize: {len(v)} "
                           f"sequence: {seq} headerKeys: [{','.join([x[0] for x in h]) if h else ''}] "
                           f"key: {k.decode('utf-8', 'replace')} payload: {v.decode('utf-8', 'replace')}")
                else:
                    append(f"| offset: {o} {ts}: {r.timestamp} keySize: {len(k)} valueSize: -1 "
                           f"sequence: {seq} headerKeys: [{','.join([x[0] for x in h]) if h else ''}] "
                           f"key: {k.decode('utf-8', 'replace')}")
            elif v is not None:
                append(f"| offset: {o} {ts}: {r.timestamp} keySize: -1 valueSize: {len(v)} "
                       f"sequence: {seq} headerKeys: [{','.join([x[0] for x in h]) if h else ''}] "
                       f"payload: {v.decode('utf-8', 'replace')}")
            else:
                append(f"| offset: {o} {ts}: {r.timestamp} keySize: -1 valueSize: -1 "
                       f"sequence: {seq} headerKeys: [{','.join([x[0] for x in h]) if h else ''}]")
        self.last = nxt - 1

    def legacy_lines(self, append, batch, recs, valid: bool) -> None:
        ts = TIMESTAMP_NAMES[batch.timestamp_type]
        kdec, vdec, parser = self.kdec, self.vdec, self.parser
        compressed = batch.attributes & 0x07
        for r in recs:
            o = r.offset
            self._track(o)
            if self.skip:
                append(self._data_only(r) if self.data else "")
                continue
            k = r.key
            v = r.value
            # An inner message of a wrapper that decoded passed its own CRC check.
            ok = "true" if valid or compressed else "false"
            line = (f"| offset: {o} {ts}: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                    f"valueSize: {-1 if v is None else len(v)} isValid: {ok} crc: {r.crc}}}")
            if self.data:
                if parser is None:
                    if k is not None:
                        line = f"{line} key: {kdec(k)}"
                    if v is not None:
                        line = f"{line} payload: {vdec(v)}"
                else:
                    ks, vs = parser(r)
                    if ks is not None:
                        line = f"{line} key: {ks}"
                    if vs is not None:
                        line = f"{line} payload: {vs}"
            append(line)

    def _data_only(self, r) -> str:
        # Scala 3.x with --skip-record-metadata: "| key: k" then " payload: v"
        # (the payload keeps its leading space even with no key before it).
        if self.parser is None:
            ks = None if r.key is None else self.kdec(r.key)
            vs = None if r.value is None else self.vdec(r.value)
        else:
            ks, vs = self.parser(r)
        line = "" if ks is None else f"| key: {ks}"
        return line if vs is None else f"{line} payload: {vs}"

    # -- JSON ------------------------------------------------------------------------

    def v2_json(self, batch, recs) -> list[dict]:
        bo, bs = batch.base_offset, batch.base_sequence
        ts = "LogAppendTime" if batch.attributes & 0x08 else "CreateTime"
        control = batch.attributes & 0x20
        out = []
        for r in recs:
            self._track(r.offset)
            d = {} if self.skip else {
                "offset": r.offset, ts: r.timestamp,
                "keySize": -1 if r.key is None else len(r.key),
                "valueSize": -1 if r.value is None else len(r.value),
                "sequence": -1 if bs < 0 else _sequence(bs, r.offset - bo),
                "headerKeys": [k for k, _ in r.headers]}
            if control:
                if not self.skip:
                    d.update(control_fields(self.control_record(r)))
            elif self.data:
                self._data_json(d, r)
            out.append(d)
        return out

    def legacy_json(self, batch, recs, valid: bool) -> list[dict]:
        ts = TIMESTAMP_NAMES[batch.timestamp_type]
        out = []
        for r in recs:
            self._track(r.offset)
            d = {} if self.skip else {
                "offset": r.offset, ts: r.timestamp,
                "keySize": -1 if r.key is None else len(r.key),
                "valueSize": -1 if r.value is None else len(r.value),
                "isValid": bool(valid or batch.attributes & 0x07), "crc": r.crc}
            if self.data:
                self._data_json(d, r)
            out.append(d)
        return out

    def _data_json(self, d: dict, r) -> None:
        if self.parser is None:
            ks = None if r.key is None else self.kdec(r.key)
            vs = None if r.value is None else self.vdec(r.value)
        else:
            ks, vs = self.parser(r)
        if ks is not None:
            d["key"] = ks
        if vs is not None:
            d["payload"] = vs

    def _track(self, o: int) -> None:
        # DumpLogSegments: lastOffset starts at -1 ("unset"); a record whose
        # offset is not lastOffset + 1 makes a (lastOffset, offset) pair.
        if o != self.last + 1 and self.last != -1:
            self.gaps.append((self.last, o))
        self.last = o


def _sequence(base: int, delta: int) -> int:
    seq = base + delta
    return seq - 2147483648 if seq > INT32_MAX else seq


def index_line(offset: int, position: int) -> str:
    return f"offset: {offset} position: {position}"


def time_index_line(timestamp: int, offset: int) -> str:
    return f"timestamp: {timestamp} offset: {offset}"


def summary_lines(index_mismatches, time_mismatches, out_of_order, not_found, gaps) -> list[str]:
    """The stderr summaries printed after all files, in Kafka's order. Each
    argument maps an absolute path to its pairs, already in print order."""
    lines = []
    for path, pairs in index_mismatches:
        lines.append(f"Mismatches in :{path}")
        lines += [f"  Index offset: {a}, log offset: {b}" for a, b in pairs]
    for path, pairs in time_mismatches:
        lines.append(f"Found timestamp mismatch in :{path}")
        lines += [f"  Index timestamp: {a}, log timestamp: {b}" for a, b in pairs]
    for path, pairs in out_of_order:
        lines.append(f"Found out of order timestamp in :{path}")
        lines += [f"  Index timestamp: {a}, Previously indexed timestamp: {b}" for a, b in pairs]
    for path, pairs in not_found:
        lines.append("The following indexed offsets are not found in the log.")
        lines += [f"Indexed offset: {a}, found log offset: {b}" for a, b in pairs]
    for path, pairs in gaps:
        lines.append(f"Non-consecutive offsets in {path}")
        lines += [f"  {a} is followed by {b}" for a, b in pairs]
    return lines


# --- kafka-topics lines (TopicCommand.java, Kafka 3.8+: TopicDescription/PartitionDescription) ---
#
# A described topic is a dict with the keys TOPIC_FIELDS plus "partitions", a
# list of dicts with the keys PARTITION_FIELDS; text, table, JSON and YAML all
# read these same fields. "configs" is already in Kafka's print order (the
# HashMap order of Admin's Config) and "leader" is None when there is none;
# "elr"/"last_known_elr" are None when the broker was asked with Metadata
# (Kafka prints N/A then).

TOPIC_FIELDS = ("topic", "topic_id", "partition_count", "replication_factor", "configs")
PARTITION_FIELDS = ("topic", "partition", "leader", "replicas", "isr", "elr", "last_known_elr")


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


def kafka_uuid(value) -> str | None:
    """``org.apache.kafka.common.Uuid.toString``: URL-safe base64 without
    padding; None for a missing or zero id (Kafka then omits TopicId)."""
    if value is None or not getattr(value, "int", 1):
        return None
    raw = value.bytes if hasattr(value, "bytes") else bytes(value)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _ids(ids) -> str:
    return ",".join(map(str, ids))


def topic_line(t: dict) -> str:
    head = f"Topic: {t['topic']}"
    if t["topic_id"]:
        head += f"\tTopicId: {t['topic_id']}"
    configs = ",".join(f"{k}={v}" for k, v in t["configs"].items())
    return (f"{head}\tPartitionCount: {t['partition_count']}\tReplicationFactor: "
            f"{t['replication_factor']}\tConfigs: {configs}")


def partition_line(p: dict) -> str:
    leader = "none" if p["leader"] is None else p["leader"]
    elr = "N/A" if p["elr"] is None else _ids(p["elr"])
    last = "N/A" if p["last_known_elr"] is None else _ids(p["last_known_elr"])
    return (f"\tTopic: {p['topic']}\tPartition: {p['partition']}\tLeader: {leader}"
            f"\tReplicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}\tElr: {elr}\tLastKnownElr: {last}")


def topics_describe_lines(described: Iterable[dict]) -> list[str]:
    """kafka-topics.sh --describe text; a topic with ``show_topic`` False
    (a partition filter is on) prints its matching partitions only."""
    lines: list[str] = []
    for t in described:
        if t.get("show_topic", True):
            lines.append(topic_line(t))
        lines += [partition_line(p) for p in t["partitions"]]
    return lines


def topics_structured(described: Iterable[dict]) -> list[dict]:
    """The JSON/YAML shape of a describe: the printed topics and partitions."""
    out = []
    for t in described:
        row = {k: t[k] for k in TOPIC_FIELDS}
        row["partitions"] = [{k: p[k] for k in PARTITION_FIELDS if k != "topic"} for p in t["partitions"]]
        out.append(row)
    return out


def yaml_text(value, indent: int = 0) -> str:
    """Block-style YAML for JSON-shaped data (scalars as JSON, which YAML reads)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}"
        lines = []
        for k, v in value.items():
            key = json.dumps(str(k)) if not re.fullmatch(r"[A-Za-z_][\w.-]*", str(k)) else k
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{key}:\n{yaml_text(v, indent + 2)}")
            else:
                lines.append(f"{pad}{key}: {yaml_text(v).lstrip()}")
        return "\n".join(lines)
    if isinstance(value, list):
        if not value:
            return pad + "[]"
        lines = []
        for v in value:
            if isinstance(v, (dict, list)) and v:
                body = yaml_text(v, indent + 2)
                lines.append(f"{pad}- {body[indent + 2:]}")
            else:
                lines.append(f"{pad}- {yaml_text(v).lstrip()}")
        return "\n".join(lines)
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z_./][\w./-]*", value) and value not in (
            "true", "false", "null", "yes", "no", "on", "off", "y", "n", "True", "False", "Null", "NULL", "~"):
        return pad + value
    return pad + json.dumps(value, ensure_ascii=False)


def topics_output(kind: str, data, fmt: str) -> str:
    """--list / --describe output in ``fmt`` (json, yaml); ``data`` is the
    topic names (list) or the described topics (describe)."""
    value = data if kind == "list" else topics_structured(data)
    if fmt == "json":
        return json.dumps(value, indent=2, ensure_ascii=False)
    return yaml_text(value)


def topics_table(kind: str, data) -> None:
    """A rich table on stdout (``--output table``)."""
    from rich.console import Console
    from rich.table import Table
    console = Console()
    if kind == "list":
        table = Table("TOPIC")
        for name in data:
            table.add_row(name)
        console.print(table)
        return
    topics = Table("TOPIC", "TOPIC ID", "PARTITIONS", "RF", "CONFIGS", title="Topics")
    parts = Table("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ELR", "LAST KNOWN ELR", title="Partitions")
    for t in data:
        if t.get("show_topic", True):
            topics.add_row(t["topic"], t["topic_id"] or "", str(t["partition_count"]),
                           str(t["replication_factor"]),
                           "\n".join(f"{k}={v}" for k, v in t["configs"].items()))
        for p in t["partitions"]:
            parts.add_row(p["topic"], str(p["partition"]), "none" if p["leader"] is None else str(p["leader"]),
                          _ids(p["replicas"]), _ids(p["isr"]),
                          "N/A" if p["elr"] is None else _ids(p["elr"]),
                          "N/A" if p["last_known_elr"] is None else _ids(p["last_known_elr"]))
    if topics.row_count:
        console.print(topics)
    if parts.row_count:
        console.print(parts)


# --- kproto offsets (ZooKeeper offsets migration plan) -----------------------------------
#
# A plan row is a dict with group, topic, partition, zookeeper_offset,
# kafka_offset, action and (after commits) result. Plain aligned columns in
# the manner of kafka-consumer-groups --describe: each column as wide as its
# longest cell, "-" where there is no value, no trailing blanks.

OFFSETS_COLUMNS = (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"),
                   ("zookeeper_offset", "ZOOKEEPER-OFFSET"), ("kafka_offset", "KAFKA-OFFSET"))


def offsets_plan_lines(rows: Iterable[dict], *, executed: bool = False, dual: bool = False) -> list[str]:
    """The plan (or dual check) table; the header alone when there are no rows."""
    columns = list(OFFSETS_COLUMNS) + [("action", "STATUS" if dual else "ACTION")]
    if executed:
        columns.append(("result", "RESULT"))
    cells = [[h for _, h in columns]]
    cells += [["-" if r[k] is None else str(r[k]) for k, _ in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]


# --- kafka-consumer-groups lines (ConsumerGroupCommand.java, Kafka 3.9 / trunk 1eb76443) ---
#
# Each function returns the exact text Kafka prints for one group (or one
# listing), newlines included: Kafka writes every line as printf("\n" + format)
# and ends a table with println(), so a table starts with an empty line. Java's
# "%-Ns" pads to N UTF-16 units and never truncates. Rows arrive in Kafka's
# print order with None for a missing value (printed "-").

GROUPS_COLUMNS = {
    "list": (("group", "GROUP"),),
    "list_state": (("group", "GROUP"), ("state", "STATE")),
    "offsets": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"),
                ("current_offset", "CURRENT-OFFSET"), ("log_end_offset", "LOG-END-OFFSET"), ("lag", "LAG"),
                ("consumer_id", "CONSUMER-ID"), ("host", "HOST"), ("client_id", "CLIENT-ID")),
    "members": (("group", "GROUP"), ("consumer_id", "CONSUMER-ID"), ("group_instance_id", "GROUP-INSTANCE-ID"),
                ("host", "HOST"), ("client_id", "CLIENT-ID"), ("partitions", "#PARTITIONS"),
                ("assignment", "ASSIGNMENT")),
    "state": (("group", "GROUP"), ("coordinator", "COORDINATOR (ID)"),
              ("assignment_strategy", "ASSIGNMENT-STRATEGY"), ("state", "STATE"), ("members", "#MEMBERS")),
    "reset": (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"), ("new_offset", "NEW-OFFSET")),
    "delete": (("group", "GROUP"), ("error", "ERROR")),
}


def java_topic_partition_hash(tp: tuple[str, int]) -> int:
    """``TopicPartition.hashCode`` (for ``java_hashmap_order``)."""
    return _topic_partition_hash(tp)


def _jlen(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _pad(value, width: int) -> str:
    """Java's ``%-{width}s``; None prints as Kafka's MISSING_COLUMN_VALUE."""
    text = "-" if value is None else str(value)
    return text + " " * (width - _jlen(text))


def _widest(rows, key: str, least: int) -> int:
    return max([least] + [_jlen("-" if r[key] is None else str(r[key])) for r in rows])


def groups_list_text(rows, *, with_state: bool = False) -> str:
    """--list: one name a line; with --state a ``%-Ns %-20s`` table whose
    first column is the longest name (at least 15) plus 10."""
    if not with_state:
        return "".join(f"{name}\n" for name in rows)
    width = _widest(rows, "group", 15) + 10
    return "".join(f"{_pad(g, width)} {_pad(s, 20)}\n"
                   for g, s in [("GROUP", "STATE")] + [(r["group"], r["state"]) for r in rows])


def groups_offsets_text(rows: list[dict]) -> str:
    """--describe [--offsets]: ``%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s``,
    G/T/C/H the longest group, topic, consumer id and host (at least 15)."""
    g, t = _widest(rows, "group", 15), _widest(rows, "topic", 15)
    c, h = _widest(rows, "consumer_id", 15), _widest(rows, "host", 15)
    lines = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
              "CLIENT-ID")]
    lines += [tuple(r[k] for k, _ in GROUPS_COLUMNS["offsets"]) for r in rows]
    return "".join(f"\n{_pad(a, g)} {_pad(b, t)} {_pad(p, 10)} {_pad(cur, 15)} {_pad(end, 15)} {_pad(lag, 15)} "
                   f"{_pad(cid, c)} {_pad(host, h)} {'-' if client is None else client}"
                   for a, b, p, cur, end, lag, cid, host, client in lines) + "\n"


def groups_assignment_text(assignment: dict) -> str:
    """--members --verbose ASSIGNMENT: per topic ``(0,1)`` (partitions sorted
    as strings, the topic not named), the topics' strings sorted, ``, ``-joined."""
    if not assignment:
        return "-"
    return ", ".join(sorted("(" + ",".join(sorted(map(str, parts))) + ")" for parts in assignment.values()))


def groups_members_text(rows: list[dict], *, verbose: bool = False) -> str:
    """--describe --members: ``%-Gs %-Cs [%-Is ]%-Hs %-CLs %-15s `` (a blank
    after #PARTITIONS), GROUP-INSTANCE-ID only when some member has one."""
    instance = any(r["group_instance_id"] for r in rows)
    widths = {"group": _widest(rows, "group", 15), "consumer_id": _widest(rows, "consumer_id", 15),
              "group_instance_id": max([17] + [_jlen(r["group_instance_id"] or "") for r in rows]),
              "host": _widest(rows, "host", 15), "client_id": _widest(rows, "client_id", 15), "partitions": 15}
    keys = [k for k in widths if instance or k != "group_instance_id"]
    names = dict(GROUPS_COLUMNS["members"])
    out = "\n" + "".join(_pad(names[k], widths[k]) + " " for k in keys) + ("ASSIGNMENT" if verbose else "") + "\n"
    for r in rows:
        cells = {**r, "group_instance_id": r["group_instance_id"] or ""}
        out += "".join(_pad(cells[k], widths[k]) + " " for k in keys)
        out += (groups_assignment_text(r["assignment"]) if verbose else "") + "\n"
    return out


def groups_coordinator_text(c: dict) -> str:
    return f"{c['host']}:{c['port']}  ({c['id']})"


def groups_state_text(row: dict) -> str:
    """--describe --state: ``%-Ws %-25s %-20s %-15s %s``, W the coordinator
    text's length (at least 25): Kafka sizes the GROUP column by it."""
    coordinator = groups_coordinator_text(row["coordinator"])
    w = max(25, _jlen(coordinator))
    lines = [("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
             (row["group"], coordinator, row["assignment_strategy"], row["state"], row["members"])]
    return "".join(f"\n{_pad(a, w)} {_pad(b, 25)} {_pad(c, 20)} {_pad(d, 15)} {e}" for a, b, c, d, e in lines) + "\n"


def groups_reset_text(plans: dict) -> str:
    """--reset-offsets without --export: ``%-30s %-30s %-10s %-15s`` rows;
    the header only when some group was considered; always a final newline.
    ``plans`` maps a group to its ((topic, partition), offset) pairs."""
    out = f"\n{_pad('GROUP', 30)} {_pad('TOPIC', 30)} {_pad('PARTITION', 10)} {_pad('NEW-OFFSET', 15)}" if plans else ""
    for group, entries in plans.items():
        out += "".join(f"\n{_pad(group, 30)} {_pad(t, 30)} {_pad(p, 10)} {_pad(o, 15)}" for (t, p), o in entries)
    return out + "\n"


def jackson_csv_field(text: str) -> str:
    """A string as Jackson's CsvEncoder writes it by default (loose quoting
    check): quoted when longer than 24 characters or holding any character
    below ``-`` (one past the highest of ``,``, ``"`` and ``\\n``); quotes doubled."""
    if len(text) > 24 or any(ch < "-" for ch in text):
        return '"' + text.replace('"', '""') + '"'
    return text


def groups_export_csv(plans: dict, *, with_group: bool) -> str:
    """--export: ``topic,partition,offset`` lines (``group,`` first for several
    groups or --all-groups), then println's newline."""
    lines = []
    for group, entries in plans.items():
        head = jackson_csv_field(group) + "," if with_group else ""
        lines += [f"{head}{jackson_csv_field(t)},{p},{o}\n" for (t, p), o in entries]
    return "".join(lines) + "\n"


def groups_cells(kind: str, row) -> list[str]:
    """A row as the text cells of ``--output table``."""
    if kind == "list":
        return [row]
    cells = []
    for key, _ in GROUPS_COLUMNS[kind]:
        value = row.get(key)
        if key == "coordinator":
            value = groups_coordinator_text(value)
        elif key == "assignment":
            value = groups_assignment_text(value)
        cells.append("-" if value is None else str(value))
    return cells


def groups_table(kind: str, rows: list) -> None:
    """A rich table on stdout (``--output table``)."""
    from rich.console import Console
    from rich.table import Table
    table = Table(*(title for _, title in GROUPS_COLUMNS[kind]))
    for row in rows:
        table.add_row(*groups_cells(kind, row))
    Console().print(table)


def groups_output(rows: list, fmt: str) -> str:
    """Rows as JSON or YAML."""
    return json.dumps(rows, indent=2, ensure_ascii=False) if fmt == "json" else yaml_text(rows)
