"""java.util.Properties text, read and written as Java does.

One format, several owners: the broker's ``meta.properties``
(kproto.log.checkpoint), ``--command-config`` client files
(kproto.client.transport) and server.properties-style settings. It lives
here, below all of them, so a client never imports the log to read a file.
"""

from __future__ import annotations

import re
import time
from typing import Mapping

from kproto.errors import DecodeError

__all__ = ["parse_properties", "format_properties"]

_PROPERTY = re.compile(r"((?:[^\\=:\s]|\\.)*)\s*([=:]?)\s*(.*)")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_properties(text: str, path: str = "", *, strict: bool = True,
                     error: type[DecodeError] = DecodeError) -> dict[str, str]:
    """java.util.Properties lines: the key ends at the first unescaped ``=``,
    ``:`` or blank; ``#``/``!`` comments. ``strict`` (meta.properties): a
    line must have a separator, else ``error`` names the file and byte;
    otherwise a lone key means an empty value."""
    out: dict[str, str] = {}
    pos = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and stripped[0] not in "#!":
            key, sep, value = _PROPERTY.fullmatch(stripped).groups()
            if strict and not sep and not value:
                raise error(f"malformed property line: {line}", file=path, position=pos)
            out[_unescape(key)] = _unescape(value.strip())
        pos += len(line) + 1
    return out


def format_properties(props: Mapping[str, str], now_s: float | None = None) -> str:
    """java.util.Properties.store with an empty comment: '#', the date, then key=value."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(now_s))
    lines = ["#", "#" + stamp] + [f"{k}={_escape(v)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"
