"""Request handlers, one module per API family (Kafka's KafkaApis, split up).

Each module has ``HANDLERS = {api_key: (handler, min_version, max_version)}``:
the versions the broker advertises in ApiVersions, within the registry's.
"""

from __future__ import annotations

from kproto.server.handlers import cluster, configs, fetch, list_offsets, metadata, produce, producer_ids, topics
from kproto.server.handlers import api_versions

_MODULES = (api_versions, metadata, produce, fetch, list_offsets, producer_ids, topics, configs, cluster)


def table() -> dict:
    out = {}
    for m in _MODULES:
        out.update(m.HANDLERS)
    return out
