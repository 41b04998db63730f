"""What every tool prints with: Java-style values, Jackson-style JSON and CSV,
YAML, rich tables, a buffered line writer, and the key/value decoders.

Kafka's tools print Java values, and their exact text is part of the format:
``true``/``false``, ``OptionalLong.empty``/``OptionalLong[n]``, unsigned CRCs,
``[a,b]`` lists (Scala ``mkString("[", ",", "]")``), Jackson's compact JSON
(``ObjectNode.toString``). The helpers here are the one place those rules
live; each command's own lines are in its ``*_lines``/``*_text`` module
(dump_log.lines, topics.text, groups.text), hash orders in kproto.jvm, the
internal topics' records in dump_log.decoders. Stdout
carries data only: the writer is for stdout; diagnostics go through ``err``.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from functools import partial
from typing import Iterable


__all__ = [
    "plain_decoder", "text_parser", "json_parser", "java_bool", "optional_long", "java_list", "java_file",
    "java_absolute_path", "jackson_json", "jackson_csv_field", "kafka_uuid", "yaml_text", "structured_output",
    "rich_table", "LineWriter", "err", "JsonValue",
]


class JsonValue:
    """A decoder result that is JSON: text output prints it Jackson-style, JSON output nests it."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


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


# --- key/value decoders (DumpLogSegments' Decoder and MessageParser plumbing) ---------------

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
        self._more = 0      # lines beyond one per entry of ``lines`` (blocks)

    def block(self, text: str, n: int) -> None:
        """``n`` lines already joined by newlines, as one entry."""
        self.lines.append(text)
        self._more += n - 1

    def maybe_flush(self) -> None:
        if len(self.lines) + self._more >= self.CHUNK:
            self.flush()

    def flush(self) -> None:
        lines = self.lines
        self._more = 0
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


def kafka_uuid(value) -> str | None:
    """``org.apache.kafka.common.Uuid.toString``: URL-safe base64 without
    padding; None for a missing or zero id (Kafka then omits TopicId)."""
    if value is None or not getattr(value, "int", 1):
        return None
    raw = value.bytes if hasattr(value, "bytes") else bytes(value)
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def jackson_csv_field(text: str) -> str:
    """A string as Jackson's CsvEncoder writes it by default (loose quoting
    check): quoted when longer than 24 characters or holding any character
    below ``-`` (one past the highest of ``,``, ``"`` and ``\\n``); quotes doubled."""
    if len(text) > 24 or any(ch < "-" for ch in text):
        return '"' + text.replace('"', '""') + '"'
    return text


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


def structured_output(value, fmt: str) -> str:
    """JSON-shaped data as ``--output json`` (indented) or ``yaml`` prints it."""
    return json.dumps(value, indent=2, ensure_ascii=False) if fmt == "json" else yaml_text(value)


def rich_table(titles, rows, *, title: str | None = None, console=None) -> None:
    """A rich table of text cells on stdout (``--output table``); nothing
    for no rows when ``title`` names it (one of several tables)."""
    from rich.console import Console
    from rich.table import Table
    table = Table(*titles, title=title)
    for row in rows:
        table.add_row(*row)
    if title is None or table.row_count:
        (console or Console()).print(table)
