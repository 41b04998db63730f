"""Request handlers, one module per API family (Kafka's KafkaApis, split up).

Each module has ``HANDLERS = {api_key: (handler, min_version, max_version)}``,
keyed by its schema's ``API.key``: the versions the broker advertises in
ApiVersions, within the registry's, with a ledger in the module saying why
it stops where it does. Handlers are ``async (broker, header, body) -> body |
None`` (None: no response, Produce acks=0).
"""

from __future__ import annotations

from kproto.server.handlers import (
    acls, api_versions, cluster, configs, delete_records, fetch, groups, list_offsets, metadata, produce,
    producer_ids, sasl, scram, share, topics, txn,
)

_MODULES = (api_versions, metadata, produce, fetch, list_offsets, producer_ids, topics, delete_records, configs,
            cluster, groups, sasl, acls, scram, txn, share)


def table() -> dict:
    """api_key -> (handler, min_version, max_version), every API the broker answers."""
    out: dict = {}
    for m in _MODULES:
        for key, entry in m.HANDLERS.items():
            assert key not in out, f"API key {key} handled twice"
            out[key] = entry
    return out
