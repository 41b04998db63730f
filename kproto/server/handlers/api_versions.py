"""ApiVersions: what this broker speaks, from the handler table, and its features.

Header v0 responses whatever the version (KIP-511). v3+ carry the tagged
SupportedFeatures, FinalizedFeaturesEpoch and FinalizedFeatures as Kafka 4.4's
broker does (kproto.features), or as the ``--kafka-version`` release did (server/emulation.py).
"""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.server.access import self_checked
from kproto.server.handlers import handles


@handles(P.api_versions, authorize=self_checked)
async def api_versions(broker, ctx, body) -> dict:
    if ctx.request_api_version >= 3:
        ctx.connection.client_software = (body.client_software_name, body.client_software_version)
    return broker.api_versions_body(version=ctx.request_api_version)
