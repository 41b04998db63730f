"""kafka-dump-log's output (DumpLogSegments.scala @3.9.0-rc3: printBatchLevel, dumpLog).

One field list per line kind drives both outputs: ``V2_BATCH_FIELDS`` and
``LEGACY_BATCH_FIELDS`` for batch lines, ``V2_RECORD_FIELDS`` and
``LEGACY_RECORD_FIELDS`` for record lines. The text line is ``name: value``
pairs in that order (Java's renderings: ``true``, ``OptionalLong[n]``,
``[a,b]``); ``--json`` is an object with the same names and values. The
field named ``TIMESTAMP`` takes the batch's timestamp type name
(``CreateTime``, ``LogAppendTime``, ``NoTimestampType``), as Kafka prints it.
"""

from __future__ import annotations

from functools import lru_cache

from kproto.accel import crecords
from kproto.records import TimestampType, sequence_at
from kproto.schemas import records as S
from kproto.tools.dump_log.decoders import kraft_control_json
from kproto.tools.render import JsonValue, jackson_json, java_bool, java_list, optional_long, plain_decoder

#: csrc/lines.c: a v2 data batch's record lines in one call (None without the C accelerator)
_dump_log_lines = getattr(crecords, "dump_log_lines", None)
_UTF8 = plain_decoder("utf8", False)

__all__ = ["V2_BATCH_FIELDS", "LEGACY_BATCH_FIELDS", "V2_RECORD_FIELDS", "LEGACY_RECORD_FIELDS",
           "batch_fields", "batch_line", "batch_json", "RecordPrinter", "index_line", "time_index_line",
           "summary_lines"]

TIMESTAMP = "{timestamp}"

V2_BATCH_FIELDS = ("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                   "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs",
                   "position", TIMESTAMP, "size", "magic", "compresscodec", "crc", "isvalid")
LEGACY_BATCH_FIELDS = ("offset", "position", TIMESTAMP, "size", "magic", "compresscodec", "crc", "isvalid")
V2_RECORD_FIELDS = ("offset", TIMESTAMP, "keySize", "valueSize", "sequence", "headerKeys")
LEGACY_RECORD_FIELDS = ("offset", TIMESTAMP, "keySize", "valueSize", "isValid", "crc")



def _text(name: str, value) -> str:
    """A batch field as Kafka's text shows it."""
    if name == "deleteHorizonMs":
        return optional_long(value)
    return java_bool(value) if isinstance(value, bool) else str(value)


def last_sequence(b) -> int:
    """DefaultRecordBatch.lastSequence: only -1 (NO_SEQUENCE) means none; a
    base of 0 or more is incremented (wrapping past Int.MAX to 0), a negative
    one added to as Java's int arithmetic does."""
    if b.base_sequence == -1:
        return -1
    if b.base_sequence < 0:
        return b.base_sequence + b.last_offset_delta
    return sequence_at(b.base_sequence, b.last_offset_delta)


def batch_fields(b, position: int, codec: str, valid: bool) -> tuple[tuple[str, ...], tuple]:
    """(names, values) of a batch line; the names with the timestamp type filled in."""
    ts = TimestampType.NAMES[b.timestamp_type]
    if b.magic == 2:
        names, values = V2_BATCH_FIELDS, (
            b.base_offset, b.last_offset, b.records_count, b.base_sequence, last_sequence(b), b.producer_id,
            b.producer_epoch, b.partition_leader_epoch, b.is_transactional, b.is_control,
            b.delete_horizon_ms, position, b.max_timestamp, b.size, 2, codec, b.crc, valid)
    else:
        names, values = LEGACY_BATCH_FIELDS, (
            b.offset, position, b.max_timestamp, b.size, b.magic, codec, b.crc, valid)
    return _named(names, ts), values


@lru_cache(maxsize=None)
def _named(names: tuple[str, ...], ts: str) -> tuple[str, ...]:
    return tuple(ts if n is TIMESTAMP else n for n in names)


@lru_cache(maxsize=None)
def _batch_template(names: tuple[str, ...]) -> str:
    return " ".join(f"{n}: %s" for n in names)


def batch_line(b, position: int, codec: str, valid: bool) -> str:
    names, values = batch_fields(b, position, codec, valid)
    # %s is str(); only Java's booleans and OptionalLong need _text
    return _batch_template(names) % tuple([_text(n, v) if v.__class__ is bool or n == "deleteHorizonMs" else v
                                           for n, v in zip(names, values)])


def batch_json(b, position: int, codec: str, valid: bool) -> dict:
    return dict(zip(*batch_fields(b, position, codec, valid)))


@lru_cache(maxsize=None)
def _template(fields: tuple[str, ...], ts: str) -> str:
    # Kafka's legacy record line ends "crc: <n>}": a stray brace in its format string.
    tail = "}" if fields is LEGACY_RECORD_FIELDS else ""
    return "| " + " ".join(f"{ts if n is TIMESTAMP else n}: %s" for n in fields) + tail


# DumpLogSegments.printControlRecord (Kafka 4.x): the KRaft control types print their
# JSON after these labels (only LeaderChange has a colon).
KRAFT_CONTROL_LABELS = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter",
                        5: "KRaftVersion", 6: "KRaftVoters"}


def control_fields(control, value: bytes | None = None) -> dict:
    """What Kafka adds for a control record (``control`` is records.ControlRecord,
    ``value`` the record's value): field name -> value (a JsonValue for KRaft types)."""
    if control.type in (0, 1):
        return {"endTxnMarker": S.CONTROL_TYPES[control.type], "coordinatorEpoch": control.coordinator_epoch}
    decoded = kraft_control_json(control.type, value)
    if decoded is not None:
        return {KRAFT_CONTROL_LABELS[control.type]: JsonValue(decoded)}
    return {"controlType": f"{S.CONTROL_TYPES.get(control.type, 'UNKNOWN')}({control.type})"}


def control_text(control, value: bytes | None) -> str:
    out = []
    for k, v in control_fields(control, value).items():
        if isinstance(v, JsonValue):
            out.append(f" {k} {jackson_json(v.value)}")
        else:
            out.append(f" {k}: {v}")
    return "".join(out)


class RecordPrinter:
    """Record lines for one file: text (``| offset: …``) or JSON dicts.

    ``kdec``/``vdec`` turn key/value bytes into text; ``parser`` (record ->
    (key, payload)) replaces both for the topic decoders. ``last``/``gaps``
    track Kafka's non-consecutive offsets over the whole file.
    """

    def __init__(self, *, data: bool, skip_metadata: bool, kdec, vdec, parser, control_record,
                 block=None) -> None:
        self.data = data
        # ``block(text, n)`` takes n lines at once (LineWriter.block): then a v2 data batch's
        # lines are written by the C accelerator when the decoders are the utf8 ones.
        self.block = block if _dump_log_lines is not None else None
        self.fast = parser is None and (not data or kdec is vdec is _UTF8)
        self.skip = skip_metadata
        self.kdec = kdec
        self.vdec = vdec
        self.parser = parser
        self.control_record = control_record
        self.last = -1
        self.gaps: list[tuple[int, int]] = []

    def _values(self, batch, recs, valid: bool):
        """(record, its *_RECORD_FIELDS values) per record, tracking offset gaps
        (DumpLogSegments: lastOffset starts at -1, "unset"; a record whose offset
        is not lastOffset + 1 makes a (lastOffset, offset) pair)."""
        gaps = self.gaps
        nxt = self.last + 1
        v2 = batch.magic == 2
        bo, bs = (batch.base_offset, batch.base_sequence) if v2 else (0, -1)
        ok = valid or bool(batch.compression)   # inner messages of a wrapper passed their own CRC check
        for r in recs:
            o = r.offset
            if o != nxt and nxt:
                gaps.append((nxt - 1, o))
            nxt = o + 1
            k, v = r.key, r.value
            size = (-1 if k is None else len(k), -1 if v is None else len(v))
            if v2:
                yield r, (o, r.timestamp, *size, sequence_at(bs, o - bo), [x[0] for x in r.headers])
            else:
                yield r, (o, r.timestamp, *size, ok, r.crc)
            self.last = o

    def _key_payload(self, r) -> tuple:
        if self.parser is not None:
            return self.parser(r)
        return (None if r.key is None else self.kdec(r.key), None if r.value is None else self.vdec(r.value))

    # -- text ------------------------------------------------------------------------

    def lines(self, append, batch, recs, valid: bool = True) -> None:
        control = batch.magic == 2 and batch.is_control
        show = self.data and not control
        if self.skip:
            # Kafka 4.4 with --skip-record-metadata: "| key: k payload: v", "| payload: v"
            # without a key (measured; 3.x printed " payload: v"), an empty line for a control record.
            for r, _ in self._values(batch, recs, valid):
                line = ""
                if show:
                    ks, vs = self._key_payload(r)
                    line = "" if ks is None else f"| key: {ks}"
                    line = line if vs is None else f"{line or '|'} payload: {vs}"
                append(line)
            return
        v2 = batch.magic == 2
        if v2 and not control and self.fast and self.block is not None and type(recs) is list:
            text, self.last = _dump_log_lines(recs, batch.base_offset, batch.base_sequence,
                                              TimestampType.NAMES[batch.timestamp_type], show, self.last, self.gaps)
            if recs:
                self.block(text, len(recs))
            return
        template = _template(V2_RECORD_FIELDS if v2 else LEGACY_RECORD_FIELDS,
                             TimestampType.NAMES[batch.timestamp_type])
        for r, values in self._values(batch, recs, valid):
            if v2:
                line = template % (*values[:5], java_list(values[5]))
            else:
                line = template % (*values[:4], java_bool(values[4]), values[5])
            if show:
                ks, vs = self._key_payload(r)
                if ks is not None:
                    line = f"{line} key: {ks}"
                if vs is not None:
                    line = f"{line} payload: {vs}"
            elif control:
                line += control_text(self.control_record(r), r.value)
            append(line)

    # -- JSON ------------------------------------------------------------------------

    def json(self, batch, recs, valid: bool = True) -> list[dict]:
        control = batch.magic == 2 and batch.is_control
        ts = TimestampType.NAMES[batch.timestamp_type]
        names = tuple(ts if n is TIMESTAMP else n
                      for n in (V2_RECORD_FIELDS if batch.magic == 2 else LEGACY_RECORD_FIELDS))
        out = []
        for r, values in self._values(batch, recs, valid):
            d = {} if self.skip else dict(zip(names, values))
            if control:
                if not self.skip:
                    d.update({k.rstrip(":"): v.value if isinstance(v, JsonValue) else v
                              for k, v in control_fields(self.control_record(r), r.value).items()})
            elif self.data:
                ks, vs = self._key_payload(r)
                if ks is not None:
                    d["key"] = ks
                if vs is not None:
                    d["payload"] = vs
            out.append(d)
        return out


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
