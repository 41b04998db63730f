"""UpdateFeatures: finalize feature levels (kafka-features.sh upgrade/downgrade/disable).

Kafka's broker forwards the request to its controller (KafkaApis → ControllerApis.
handleUpdateFeatures → QuorumController → FeatureControlManager.updateFeatures); kproto's
node is its own controller, so the checks and texts are kproto.features'. All or nothing:
the first failing update fails the request with INVALID_UPDATE_VERSION and
"The update failed for all features since the following feature had an error: …",
no per-feature results (v0-1 list each feature, error 0 and message "NONE", only on success).
Kafka 4.4 ignores v0's ``allow_downgrade``: every v0 update is an UPGRADE (measured).
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.features import UPDATE_FAILED, UpgradeType
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.handlers import handles


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    """ControllerApis.handleUpdateFeatures: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED."""
    if not a.ok(O.ALTER, R.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": C_DENIED,
                "error_message": "Cluster authorization failed.", "results": []}
    return await handler(broker, ctx, body)


@handles(P.update_features, authorize=_authorize)
async def update_features(broker, ctx, body) -> dict:
    version = ctx.request_api_version
    updates, types = {}, {}
    for u in body.feature_updates:
        updates[u.feature] = u.max_version_level
        # v0: the controller reads upgrade_type's default, UPGRADE, whatever allow_downgrade says (measured)
        types[u.feature] = UpgradeType.of(u.upgrade_type) if version >= 1 else UpgradeType.UPGRADE
    # an emulated release's broker supported only what its ApiVersions lists (none before 3.3)
    error = broker.features.update(updates, types, validate_only=version >= 1 and body.validate_only,
                                   node_id=broker.node_id, supported=broker.supported_features or {})
    if error is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_UPDATE_VERSION,
                "error_message": UPDATE_FAILED + error, "results": []}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "results": [{"feature": name, "error_code": 0, "error_message": "NONE"} for name in updates]}
