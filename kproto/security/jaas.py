"""The JAAS config line as Kafka reads ``sasl.jaas.config``:

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_alice="alice-secret";

Only what kproto uses: the module name, its flag and its ``key=value`` options
(quoted values with ``\\`` escapes). ``user_<name>`` options are PLAIN's users on
the broker; ``username``/``password`` are a client's own credentials.
"""

from __future__ import annotations

import re

from kproto.errors import InvalidConfigError

_TOKEN = re.compile(r'\s*(?:(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<q>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))|(?P<end>;))')
FLAGS = ("required", "requisite", "sufficient", "optional")


def parse_jaas(text: str, name: str = "sasl.jaas.config") -> tuple[str, dict[str, str]]:
    """-> (login module class, options). Errors never echo the values (they hold passwords)."""
    head = text.strip().split(None, 2)
    if len(head) < 2 or head[1] not in FLAGS:
        raise InvalidConfigError(f"Invalid value for configuration {name}: "
                                 "expected '<LoginModule> <flag> key=\"value\" ... ;'")
    rest = head[2] if len(head) > 2 else ""
    options: dict[str, str] = {}
    pos, ended = 0, False
    while pos < len(rest) and rest[pos:].strip():
        m = _TOKEN.match(rest, pos)
        if m is None or ended:
            raise InvalidConfigError(f"Invalid value for configuration {name}: "
                                     f"cannot parse the options at character {pos}")
        if m.group("end"):
            ended = True
        else:
            value = m.group("q")
            value = re.sub(r"\\(.)", r"\1", value) if value is not None else m.group("bare")
            options[m.group("key")] = value
        pos = m.end()
    if not ended:
        raise InvalidConfigError(f"Invalid value for configuration {name}: the line must end with ';'")
    return head[0], options


def plain_users(options: dict[str, str]) -> dict[str, str]:
    return {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
