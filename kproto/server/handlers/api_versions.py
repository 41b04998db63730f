"""ApiVersions: what this broker speaks, from the handler table, and its features.

Header v0 responses whatever the version (KIP-511). v3+ carry the tagged
SupportedFeatures, FinalizedFeaturesEpoch and FinalizedFeatures as Kafka 4.4's
broker does (kproto.features), or as the ``--kafka-version`` release did (server/emulation.py).
v5 (KIP-1242): the client may name the cluster and node it means to reach.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.server.access import self_checked
from kproto.server.handlers import handles


def intended_target_error(broker, cluster_id: str | None, node_id: int) -> int:
    """KIP-1242's check of the v5 ClusterId and NodeId, as measured on Kafka 4.4's broker:
    both or neither must be given (INVALID_REQUEST: a cluster id with node -1, or a node id
    other than -1 without a cluster id), and given ones must be this broker's own
    (REBOOTSTRAP_REQUIRED: the client's bootstrap list points at another cluster or node)."""
    if (cluster_id is None) != (node_id == -1):
        return ErrorCode.INVALID_REQUEST
    if cluster_id is not None and (cluster_id, node_id) != (broker.cluster_id, broker.node_id):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE


@handles(P.api_versions, authorize=self_checked)
async def api_versions(broker, ctx, body) -> dict:
    if ctx.request_api_version >= 3:
        ctx.connection.client_software = (body.client_software_name, body.client_software_version)
    if ctx.request_api_version >= 5:
        error = intended_target_error(broker, body.cluster_id, body.node_id)
        if error:   # Kafka answers an empty list and no features, and keeps the connection
            return {"error_code": error, "api_keys": [], "throttle_time_ms": 0}
    return broker.api_versions_body(version=ctx.request_api_version)
