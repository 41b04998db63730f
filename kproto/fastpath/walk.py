"""What every code generator here shares: the schema node kinds and a source writer.

The generators (``python``: record codecs in Python, ``c``: the same in C,
``protocol``: the request/response codecs) all translate a schema into
straight-line code. ``node_kind`` is the one place that says which construct
nodes of the record schema have a generated form and how a node is seen
through its build-only wrappers (Rebuild, Const, Renamed); ``Writer`` holds
the generated lines, fresh names and the constants the code refers to, and
compiles Python source. ``Irregular`` is the protocol generator's signal that
input (or a value to build) is not one its straight-line code handles: the
caller then asks the schema, which raises the located error or agrees.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import itertools
import marshal
import os
import threading
from pathlib import Path
from types import CodeType
from typing import Callable

from construct import Array, Const, FormatField, Prefixed, Rebuild, Renamed, Struct, Terminated

from kproto.schemas.primitives import KArray, Sized, UnsignedVarInt, ZigZagVarInt

__all__ = ["FIXED", "ZIGZAG", "UVARINT", "SIZED", "ARRAY", "PREFIXED", "STRUCT", "INTEGERS", "unwrap",
           "node_kind", "is_terminator", "Writer", "Irregular", "Syntax", "PYTHON", "C", "emit_sized",
           "cache_dir", "compiled"]

# The node kinds of the record schema that have a generated form.
FIXED, ZIGZAG, UVARINT, SIZED, ARRAY, PREFIXED, STRUCT = (
    "fixed", "zigzag", "uvarint", "sized", "array", "prefixed", "struct")
INTEGERS = frozenset({FIXED, ZIGZAG, UVARINT})

_KINDS = ((FormatField, FIXED), (ZigZagVarInt, ZIGZAG), (UnsignedVarInt, UVARINT), (Sized, SIZED),
          ((KArray, Array), ARRAY), (Prefixed, PREFIXED), (Struct, STRUCT))


class Irregular(Exception):
    """Input the generated code does not handle; the schema codec decides."""


def unwrap(con):
    """Fields whose build value is derived (Rebuild, Const) parse as their subcon."""
    while isinstance(con, (Renamed, Rebuild, Const)):
        con = con.subcon
    return con


def node_kind(con, path: str = "") -> tuple[str, object]:
    """(kind, unwrapped node); TypeError for a node with no generated form,
    so nothing is ever silently mistranslated."""
    con = unwrap(con)
    for types, kind in _KINDS:
        if isinstance(con, types):
            return kind, con
    raise TypeError(f"codegen: no generated form for {type(con).__name__} at {path or 'top'}")


def is_terminator(sub) -> bool:
    """construct's ``Terminated`` in a struct: the container must end here."""
    return sub is Terminated or isinstance(sub, type(Terminated))


def cache_dir() -> Path | None:
    """Where ``compiled`` keeps code objects: ``$KPROTO_CODEC_CACHE``, else kproto/codecs
    under ``$XDG_CACHE_HOME`` (``~/.cache``); None (no cache) when that is empty or "0"."""
    where = os.environ.get("KPROTO_CODEC_CACHE")
    if where is None:
        home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        where = os.path.join(home, "kproto", "codecs")
    if where in ("", "0"):
        return None
    return Path(where, importlib.util.MAGIC_NUMBER.hex())     # one bytecode format a directory


def compiled(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, kept on disk by the hash of both as a .pyc keeps a
    module: generated codecs cost ~3-12 ms of compile() each, paid by every process (each
    forked test broker, each client) for each (API, version) it meets; reading one back is
    ~0.1 ms. The same source and name make the same code object, so an entry is never stale;
    one unreadable is compiled again, and a cache that cannot be written is skipped."""
    where = cache_dir()
    if where is None:
        return compile(source, filename, "exec")
    path = where / hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()
    try:
        code = marshal.loads(path.read_bytes())
        if isinstance(code, CodeType) and code.co_filename == filename:
            return code
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, filename, "exec")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")    # a writer's own
    try:
        where.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps(code))
        os.replace(tmp, path)      # whole or absent to a reader in another process
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return code


class Writer:
    """Generated source: indented lines, fresh names, and a namespace of constants."""

    def __init__(self, namespace: dict | None = None) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, object] = dict(namespace or {})
        self.ids = itertools.count()

    def var(self, stem: str) -> str:
        return f"{stem}{next(self.ids)}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def const(self, value: object, stem: str = "_k") -> str:
        name = self.var(stem)
        self.ns[name] = value
        return name

    def compile(self, name: str, filename: str) -> Callable:
        """Compile the lines as Python and return the function ``name`` (its
        source kept as ``__source__`` for tests and debugging)."""
        source = "\n".join(self.lines)
        exec(compiled(source, filename), self.ns)
        fn = self.ns[name]
        fn.__source__ = source
        return fn


class Syntax:
    """How a target language spells the few statements the shared walks emit
    (``{}`` is the condition, statement or target)."""

    def __init__(self, *, if_block: str, if_line: str, else_: str, end: str | None, stmt: str,
                 null: str) -> None:
        self.if_block, self.if_line, self.else_, self.end = if_block, if_line, else_, end
        self.stmt, self.null = stmt, null


PYTHON = Syntax(if_block="if {}:", if_line="if {}:", else_="else:", end=None, stmt="{}", null="{} = None")
C = Syntax(if_block="if ({}) {{", if_line="if ({})", else_="} else {", end="}", stmt="{};",
           null="Py_INCREF(Py_None); {} = Py_None;")


def emit_sized(g: Writer, syntax: Syntax, con, target: str, n: str, ind: int, end: str, *,
               fail: Callable[[int, str], None], take: Callable[[int], None], null: str | None = None) -> None:
    """A length-prefixed value (``Sized``) after its length was read into ``n``:
    Kafka's rules (compact lengths are +1, -1 is null where nullable, the
    data must lie inside its container), the same in every language; ``take``
    emits reading the ``n`` bytes, ``fail`` a located error, ``null`` (if
    given) what a null sets instead of the language's null."""
    if con.compact:
        g.emit(ind, syntax.stmt.format(f"{n} -= 1"))
    g.emit(ind, syntax.if_block.format(f"{n} < 0"))
    if con.nullable:
        g.emit(ind + 1, syntax.if_line.format(f"{n} != -1"))
        fail(ind + 2, "invalid length")
        g.emit(ind + 1, null or syntax.null.format(target))
    else:
        fail(ind + 1, "invalid length")
    g.emit(ind, syntax.else_)
    g.emit(ind + 1, syntax.if_line.format(f"pos + {n} > {end}"))
    fail(ind + 2, "length runs past the end of its container")
    take(ind + 1)
    if syntax.end:
        g.emit(ind, syntax.end)
