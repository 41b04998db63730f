"""Kafka's request/response protocol: one registry over the per-API schemas.

Sans-I/O: every function takes and returns bytes and construct Containers.
The broker (dispatch, and its ApiVersions answer), the client (version
negotiation) and the capture decoder all read the same ``API_KEYS``.

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
from collections.abc import Mapping
from functools import lru_cache
from typing import Callable

from construct import Construct, Container, Sequence, Subconstruct, Tell, TerminatedError

from kproto import schemas
from kproto.codegen.protocol import Irregular, fast_builder, fast_parser
from kproto.errors import ErrorCode, InvalidRequestError, UnsupportedVersionError
from kproto.schemas.message import ApiSpec, MalformedMessageError, StructCodec, codec, present_only
from kproto.schemas.protocol.header import request_header, response_header

__all__ = [
    "API_KEYS", "ApiSpec", "MalformedMessageError", "api", "request_header_version",
    "response_header_version", "decode_request_header", "decode_request", "decode_request_body", "encode_request",
    "decode_response", "encode_response", "highest_common_version", "served_versions",
]

# One module per API, named after it in snake_case, besides header: the 26 the
# broker answers are written by hand, the others by kproto.schemas.generate.
# api_key -> module, so that a module loads when its key is first used: a
# capture decoder meets a handful of the 96 APIs, and loading all of them is
# ~15 ms of its start-up. tests/test_protocol_registry.py keeps this equal to
# the modules (a new API module goes here too).
_MODULE_NAMES: dict[int, str] = {
    0: "produce", 1: "fetch", 2: "list_offsets", 3: "metadata", 4: "leader_and_isr", 5: "stop_replica",
    6: "update_metadata", 7: "controlled_shutdown", 8: "offset_commit", 9: "offset_fetch",
    10: "find_coordinator", 11: "join_group", 12: "heartbeat", 13: "leave_group", 14: "sync_group",
    15: "describe_groups", 16: "list_groups", 17: "sasl_handshake", 18: "api_versions", 19: "create_topics",
    20: "delete_topics", 21: "delete_records", 22: "init_producer_id", 23: "offset_for_leader_epoch",
    24: "add_partitions_to_txn", 25: "add_offsets_to_txn", 26: "end_txn", 27: "write_txn_markers",
    28: "txn_offset_commit", 29: "describe_acls", 30: "create_acls", 31: "delete_acls", 32: "describe_configs",
    33: "alter_configs", 34: "alter_replica_log_dirs", 35: "describe_log_dirs", 36: "sasl_authenticate",
    37: "create_partitions", 38: "create_delegation_token", 39: "renew_delegation_token",
    40: "expire_delegation_token", 41: "describe_delegation_token", 42: "delete_groups", 43: "elect_leaders",
    44: "incremental_alter_configs", 45: "alter_partition_reassignments", 46: "list_partition_reassignments",
    47: "offset_delete", 48: "describe_client_quotas", 49: "alter_client_quotas",
    50: "describe_user_scram_credentials", 51: "alter_user_scram_credentials", 52: "vote",
    53: "begin_quorum_epoch", 54: "end_quorum_epoch", 55: "describe_quorum", 56: "alter_partition",
    57: "update_features", 58: "envelope", 59: "fetch_snapshot", 60: "describe_cluster",
    61: "describe_producers", 62: "broker_registration", 63: "broker_heartbeat", 64: "unregister_broker",
    65: "describe_transactions", 66: "list_transactions", 67: "allocate_producer_ids",
    68: "consumer_group_heartbeat", 69: "consumer_group_describe", 70: "controller_registration",
    71: "get_telemetry_subscriptions", 72: "push_telemetry", 73: "assign_replicas_to_dirs",
    74: "list_config_resources", 75: "describe_topic_partitions", 76: "share_group_heartbeat",
    77: "share_group_describe", 78: "share_fetch", 79: "share_acknowledge", 80: "add_raft_voter",
    81: "remove_raft_voter", 82: "update_raft_voter", 83: "initialize_share_group_state",
    84: "read_share_group_state", 85: "write_share_group_state", 86: "delete_share_group_state",
    87: "read_share_group_state_summary", 88: "streams_group_heartbeat", 89: "streams_group_describe",
    90: "describe_share_group_offsets", 91: "alter_share_group_offsets", 92: "delete_share_group_offsets",
}


class _Registry(Mapping):
    """api_key -> ApiSpec in key order, each API's module imported on first use."""

    def __init__(self, names: dict[int, str]) -> None:
        self._names = names
        self._specs: dict[int, ApiSpec] = {}

    def __getitem__(self, key: int) -> ApiSpec:
        spec = self._specs.get(key)
        if spec is None:
            name = self._names[key]             # KeyError: not an API kproto knows
            spec = self._specs[key] = importlib.import_module(f"{__name__}.{name}").API
        return spec

    def get(self, key, default=None):
        spec = self._specs.get(key)
        if spec is None:
            return self[key] if key in self._names else default
        return spec

    def __contains__(self, key) -> bool:
        return key in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"API_KEYS({len(self._names)} APIs)"


def __getattr__(name: str):
    """``protocol.produce`` and the like: an API module, imported on first use."""
    if name in _MODULE_NAMES.values():
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: api_key -> ApiSpec, in key order. The one list of what kproto can speak:
#: every API key and version Kafka has defined (``min_version..max_version``);
#: ``served`` says which of those kproto's broker answers.
API_KEYS: Mapping[int, ApiSpec] = _Registry(_MODULE_NAMES)


def served_versions() -> dict[int, tuple[int, int]]:
    """api_key -> (min, max) the broker answers: what its ApiVersions advertises."""
    return {k: spec.served for k, spec in API_KEYS.items() if spec.served is not None}


def api(api_key: int) -> ApiSpec:
    """The spec for ``api_key``; ``InvalidRequestError`` if kproto does not know it."""
    try:
        return API_KEYS[api_key]
    except KeyError:
        raise InvalidRequestError(f"unknown API key {api_key}") from None


def _parse(con: Construct, data: bytes, position: int = 0, **params):
    return schemas.parse(con, data, position=position, error=MalformedMessageError, **params)


def request_header_version(api_key: int, api_version: int) -> int:
    """1 or 2 (v0 belongs to ControlledShutdown v0 only, which kproto does not speak)."""
    return api(api_key).request_header_version(api_version)


def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1; always 0 for ApiVersions."""
    return api(api_key).response_header_version(api_version)


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


class _Exact(Subconstruct):
    """``subcon``, then the end of the frame: bytes past it are an error
    located at the first of them."""

    def _parse(self, stream, context, path):
        value = self.subcon._parsereport(stream, context, path)
        rest = stream.read()
        if rest:
            stream.seek(-len(rest), 1)
            raise TerminatedError(f"{len(rest)} bytes left after the body", path=path)
        return value

    def _build(self, obj, stream, context, path):
        return self.subcon._build(obj, stream, context, path)


@lru_cache(maxsize=None)
def _exact(con: Construct) -> Construct:
    return _Exact(con)


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
    return _decode(_request_header_for(int.from_bytes(frame[0:2], "big", signed=True),
                                       int.from_bytes(frame[2:4], "big", signed=True)), frame, exact=False,
                   present=present)


@lru_cache(maxsize=4096)
def _request_header_for(key: int, version: int) -> StructCodec:
    spec = API_KEYS.get(key)
    return request_header(spec.request_header_version(version) if spec is not None else 1)


@lru_cache(maxsize=4096)
def _response_header_for(api_key: int, api_version: int) -> tuple[ApiSpec, StructCodec]:
    """(spec, response header codec) of a response to ``api_key`` v``api_version``,
    after the checks ``decode_response`` makes (which raise, so are not cached)."""
    spec = api(api_key)
    if spec.unsupported_version_body is None:
        spec.check_version(api_version)
    return spec, response_header(spec.response_header_version(api_version))


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
    con = api(header["request_api_key"]).request(header["request_api_version"])
    return _decode(con, frame, start=offset, exact=not allow_trailing, present=present,
                   null_warnings=null_warnings)[0]


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
    spec, head = _response_header_for(api_key, api_version)
    header, offset = _decode(head, frame, exact=False, present=present)
    error_code = None
    if spec.unsupported_version_body is not None and len(frame) >= offset + 2:
        error_code = int.from_bytes(frame[offset:offset + 2], "big", signed=True)
    version = _body_version(spec, api_version, error_code)
    return header, _decode(spec.response(version), frame, start=offset, present=present,
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


def highest_common_version(api_key: int, broker_min: int, broker_max: int, *,
                           upto: int | None = None) -> int:
    """The version a client uses for ``api_key`` against a broker advertising
    ``broker_min..broker_max`` (ApiVersions): the highest both speak, and at
    most ``upto`` (a client that builds bodies for fewer versions than kproto
    decodes). ``UnsupportedVersionError`` if the ranges do not overlap."""
    spec = api(api_key)
    ours = spec.max_version if upto is None else min(upto, spec.max_version)
    version = min(ours, broker_max)
    if version < max(spec.min_version, broker_min):
        raise UnsupportedVersionError(
            f"{spec.name}: broker speaks v{broker_min}-{broker_max}, "
            f"kproto v{spec.min_version}-{ours}")
    return version
