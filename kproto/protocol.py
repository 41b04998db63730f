"""Kafka's request/response frames, read and written: the codecs over ``kproto.schemas.protocol``.

Sans-I/O: every function takes and returns bytes and construct Containers.
Each header or body is read by the parser that ``kproto.fastpath.protocol``
generates from its schema, and by the schema itself when that declines
(``Irregular``), so errors are always the schema's. The registry
(``API_KEYS``, ``api``, ...) is ``kproto.schemas.protocol``'s, re-exported
here with its API modules (``protocol.produce``) so one import serves a caller.

A *frame* here is one request or response **without** its int32 size
prefix: what ``kproto.framing.FrameReader`` yields, and what
``kproto.framing.frame()`` wraps. A frame is header + body::

    request  frame => RequestHeader(v1 | v2) body
    response frame => ResponseHeader(v0 | v1) body

Header versions follow the body (``request_header_version`` /
``response_header_version``): v2/v1 exactly when the body version is
flexible, except that ApiVersions responses always use header v0.

Errors: bytes that do not fit the schema raise ``MalformedMessageError``
(a ``kproto.errors.DecodeError``) with the byte position in the frame and the
field path; a known API at a version outside ``min_version..max_version``
raises ``UnsupportedVersionError`` (``decode_request_header`` still reads the
header, so a broker can answer ApiVersions with error 35, KIP-511); an API key
kproto does not know raises ``InvalidRequestError``. Values that do not fit
on build raise ``CorruptRecordError`` naming the field (``kproto.schemas.build``).

A decoder passes ``null_warnings`` (a list) to the decode functions: a null
where the schema allows none (some brokers send them) then decodes as None and
adds one line per such field to the list, instead of failing the whole body.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Callable

from construct import Construct, Container, Sequence, Tell

from kproto import schemas
from kproto.errors import ErrorCode
from kproto.fastpath.protocol import Irregular, fast_builder, fast_parser
from kproto.schemas.message import ApiSpec, MalformedMessageError, StructCodec, codec, present_only
from kproto.schemas.message import exact as _exact
from kproto.schemas.protocol import (
    _MODULE_NAMES, API_KEYS, TOPIC_IDS_SINCE, api, highest_common_version, request_header_for,
    request_header_version, response_header_for, response_header_version, served_versions,
)
from kproto.schemas.protocol.header import request_header, response_header

__all__ = [
    "API_KEYS", "ApiSpec", "MalformedMessageError", "TOPIC_IDS_SINCE", "api", "request_header_version",
    "response_header_version", "decode_request_header", "decode_request", "decode_request_body", "encode_request",
    "decode_response", "encode_response", "highest_common_version", "served_versions",
]


def __getattr__(name: str):
    """``protocol.produce`` and the like: the API module, as ``kproto.schemas.protocol`` has it."""
    if name in _MODULE_NAMES.values():
        return importlib.import_module(f"kproto.schemas.protocol.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _parse(con: Construct, data: bytes, position: int = 0, **params):
    return schemas.parse(con, data, position=position, error=MalformedMessageError, **params)


# (codec, present) -> its generated parser: one lookup per header or body (a
# capture decodes four an exchange); codecs are few and cached (message.codec)
_PARSERS: dict[tuple[StructCodec, bool], Callable] = {}


def _decode(con: StructCodec, data: bytes, position: int = 0, *, exact: bool = True,
            start: int = 0, present: bool = False,
            null_warnings: list[str] | None = None) -> tuple[Container, int]:
    """(value, end) of the struct at ``data[start:]``: the generated fast
    parser, or, when it declines, the schema itself (which raises the
    located error, or agrees). ``present``: only the fields of the version
    (``present_only``), as a decoder shows a body (plain dicts from the
    generated parser, Containers from the schema: dicts either way).
    ``null_warnings``: the schema's lenient codec judges instead, a forbidden
    null becoming None and a line in the list (the module docstring)."""
    parse = _PARSERS.get((con, present))
    if parse is None:
        parse = _PARSERS[con, present] = fast_parser(con.spec, con.version, con.flexible, present)
    try:
        value, end = parse(data, start)
        if not exact or end == len(data):
            return value, end
    except Irregular:       # input the generated code declines: the schema judges
        pass
    tail = data[start:] if start else data
    params = {}
    if null_warnings is not None:
        con, params["null_warnings"] = codec(con.spec, con.version, con.flexible, True), []
    if exact:
        value, end = _parse(_exact(con), tail, position + start, **params), len(data)
    else:
        value, end = _parse(_counted(con), tail, position + start, **params)
        end += start
    for path, rule in params.get("null_warnings", ()):
        null_warnings.append(f"{schemas.field_path(path)}: null where the schema says {rule}")
    return (present_only(con.spec, con.version, value) if present else value), end


def _encode(con: StructCodec, value) -> bytes:
    """The generated fast builder, or the schema when it declines."""
    out = bytearray()
    try:
        fast_builder(con.spec, con.version, con.flexible)(value, out)
        return bytes(out)
    except Irregular:       # the schema raises the located error
        return schemas.build(con, value)


@lru_cache(maxsize=None)
def _counted(con: Construct) -> Construct:
    """``con`` and the offset it stopped at."""
    return Sequence(con, Tell)


def decode_request_header(frame: bytes | bytearray | memoryview, *,
                          present: bool = False) -> tuple[Container, int]:
    """Read the request header; returns (header, offset of the body).

    Works for any API version, supported or not, as long as the API key is
    known (its flexible range says whether the header carries tags); for an
    unknown key, header v1 is assumed (client_id is readable either way).
    ``present``: the header's fields only, as a plain dict (a decoder's).
    """
    frame = bytes(frame)
    if len(frame) < 4:
        raise MalformedMessageError("frame too short for a request header", position=len(frame),
                                    path="request_api_version" if len(frame) >= 2 else "request_api_key")
    return _decode(request_header_for(int.from_bytes(frame[0:2], "big", signed=True),
                                       int.from_bytes(frame[2:4], "big", signed=True)), frame, exact=False,
                   present=present)


def decode_request(frame: bytes | bytearray | memoryview, *,
                   allow_trailing: bool = False) -> tuple[Container, Container]:
    """(header, body) of one request frame (no size prefix).

    ``allow_trailing``: ignore bytes after the body, as Kafka's generated
    readers do (librdkafka 2.16 sends Metadata v12 with 3 such bytes); a
    broker must accept what Kafka accepts, a decoder reports it."""
    frame = bytes(frame)
    header, offset = decode_request_header(frame)
    return header, decode_request_body(header, frame, offset, allow_trailing=allow_trailing)


def decode_request_body(header: Container, frame: bytes, offset: int, *,
                        allow_trailing: bool = False, present: bool = False,
                        null_warnings: list[str] | None = None) -> Container:
    """The body of a request whose header ``decode_request_header`` already
    read (``offset``: where the body starts), so a broker reads it once;
    ``present``: only the fields of its version (``present_only``);
    ``null_warnings``: a decoder's (the module docstring)."""
    frame = bytes(frame)
    con = _request_body(header["request_api_key"], header["request_api_version"])
    return _decode(con, frame, start=offset, exact=not allow_trailing, present=present,
                   null_warnings=null_warnings)[0]


@lru_cache(maxsize=4096)
def _request_body(api_key: int, api_version: int) -> StructCodec:
    """The request body codec, once per (key, version): a decoder asks per frame
    (the lookups and version check cost a tenth of a small request's decode;
    what raises is not cached)."""
    return api(api_key).request(api_version)


@lru_cache(maxsize=4096)
def _response_body(api_key: int, version: int) -> StructCodec:
    """The response body codec, as ``_request_body``."""
    return api(api_key).response(version)


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body) -> bytes:
    """One request frame (header + body), **without** the int32 size prefix."""
    spec = api(api_key)
    con = spec.request(api_version)
    header = {"request_api_key": api_key, "request_api_version": api_version,
              "correlation_id": correlation_id, "client_id": client_id}
    return _encode(request_header(spec.request_header_version(api_version)), header) + _encode(con, body)


def _body_version(spec: ApiSpec, api_version: int, error_code) -> int:
    """The version the body is encoded in: ``api_version``, except ApiVersions
    error-35 answers, which are v0 whatever was asked (even past our max)."""
    if spec.unsupported_version_body is not None and error_code == ErrorCode.UNSUPPORTED_VERSION:
        return spec.unsupported_version_body
    spec.check_version(api_version)
    return api_version


def decode_response(api_key: int, api_version: int, frame: bytes | bytearray | memoryview, *,
                    present: bool = False, null_warnings: list[str] | None = None) -> tuple[Container, Container]:
    """(header, body) of one response frame to a request of ``api_key`` v``api_version``;
    ``present``: a body with only the fields of its version (``present_only``),
    header and body plain dicts when the generated parsers read them;
    ``null_warnings``: a decoder's (the module docstring).

    ApiVersions: an error-35 answer is read as a v0 body (KIP-511), as the
    Java client and kafka-python do, also when ``api_version`` is past ours.
    """
    frame = bytes(frame)
    spec, head = response_header_for(api_key, api_version)
    header, offset = _decode(head, frame, exact=False, present=present)
    error_code = None
    if spec.unsupported_version_body is not None and len(frame) >= offset + 2:
        error_code = int.from_bytes(frame[offset:offset + 2], "big", signed=True)
    version = api_version if error_code is None else _body_version(spec, api_version, error_code)
    return header, _decode(_response_body(api_key, version), frame, start=offset, present=present,
                           null_warnings=null_warnings)[0]


def encode_response(api_key: int, api_version: int, correlation_id: int, body) -> bytes:
    """One response frame (header + body), **without** the int32 size prefix.

    ApiVersions: a body whose error_code is 35 is written as v0 (KIP-511), so
    a broker answers a too-new request with ``encode_response(18, asked, ...)``.
    """
    spec = api(api_key)
    version = _body_version(spec, api_version, body.get("error_code") if hasattr(body, "get") else None)
    header = {"correlation_id": correlation_id}
    return (_encode(response_header(spec.response_header_version(api_version)), header)
            + _encode(spec.response(version), body))
