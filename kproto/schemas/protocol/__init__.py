"""Kafka's request/response protocol as data: one registry over the per-API schemas.

The broker (dispatch, and its ApiVersions answer), the client (version
negotiation) and the capture decoder all read the same ``API_KEYS``. The
codecs that read and write frames with these schemas (the generated fast
path, falling back on the schema) are ``kproto.protocol``'s.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from functools import lru_cache

from kproto.errors import InvalidRequestError, UnsupportedVersionError
from kproto.schemas.message import ApiSpec, MalformedMessageError, StructCodec
from kproto.schemas.protocol.header import request_header, response_header

__all__ = [
    "API_KEYS", "ApiSpec", "MalformedMessageError", "TOPIC_IDS_SINCE", "api", "request_header_version",
    "response_header_version", "highest_common_version", "served_versions", "request_header_for",
    "response_header_for",
]

# One module per API, named after it in snake_case, besides header: the 26 the
# broker answers are written by hand, the others by generators.protocol.
# api_key -> module, so that a module loads when its key is first used: a
# capture decoder meets a handful of the 96 APIs, and loading all of them is
# ~15 ms of its start-up. tests/schemas/test_protocol_registry.py keeps this equal to
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

# The first version of each API that names topics by id only (KIP-516): the broker names
# them for its handlers (kproto.server.topic_ids); kproto's client, which builds bodies by
# name, speaks the versions below.
TOPIC_IDS_SINCE: dict[int, int] = {0: 13, 1: 13, 8: 10, 9: 10, 28: 6}


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


def request_header_version(api_key: int, api_version: int) -> int:
    """1 or 2 (v0 belongs to ControlledShutdown v0 only, which kproto does not speak)."""
    return api(api_key).request_header_version(api_version)


def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1; always 0 for ApiVersions."""
    return api(api_key).response_header_version(api_version)


@lru_cache(maxsize=4096)
def request_header_for(key: int, version: int) -> StructCodec:
    """The request header codec of ``key`` v``version`` (header v1 for a key kproto does not know)."""
    spec = API_KEYS.get(key)
    return request_header(spec.request_header_version(version) if spec is not None else 1)


@lru_cache(maxsize=4096)
def response_header_for(api_key: int, api_version: int) -> tuple[ApiSpec, StructCodec]:
    """(spec, response header codec) of a response to ``api_key`` v``api_version``,
    after the checks ``kproto.protocol.decode_response`` makes (which raise, so are not cached)."""
    spec = api(api_key)
    if spec.unsupported_version_body is None:
        spec.check_version(api_version)
    return spec, response_header(spec.response_header_version(api_version))


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
