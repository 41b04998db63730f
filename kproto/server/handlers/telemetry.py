"""Client telemetry (KIP-714): GetTelemetrySubscriptions, PushTelemetry, and
ListConfigResources (the config resources, client metrics subscriptions among them).

The work is kproto.server.telemetry's (Kafka's ClientMetricsManager). Kafka authorizes
neither telemetry API (KafkaApis.handleGetTelemetrySubscriptionsRequest,
handlePushTelemetryRequest); ListConfigResources needs DESCRIBE_CONFIGS on the cluster.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access, self_checked
from kproto.server.handlers import handles

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@handles(P.get_telemetry_subscriptions, authorize=self_checked)
async def get_telemetry_subscriptions(broker, ctx, body) -> dict:
    return broker.client_metrics.get_subscriptions(ctx, body.client_instance_id)


@handles(P.push_telemetry, authorize=self_checked)
async def push_telemetry(broker, ctx, body) -> dict:
    return {"throttle_time_ms": 0, "error_code": broker.client_metrics.push(ctx, body)}


async def _list_authorize(a: Access, broker, ctx, body, handler) -> dict:
    """KafkaApis.handleListConfigResources: DESCRIBE_CONFIGS on the cluster."""
    if not a.ok(O.DESCRIBE_CONFIGS, R.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": C_DENIED, "config_resources": []}
    return await handler(broker, ctx, body)


@handles(P.list_config_resources, authorize=_list_authorize)
async def list_config_resources(broker, ctx, body) -> dict:
    """ListConfigResourcesRequest.supportedResourceTypes: v0 lists client metrics
    subscriptions only; v1 any of topics, brokers, broker loggers, client metrics and
    groups (none asked: all); a type outside those answers UNSUPPORTED_VERSION."""
    supported = [CLIENT_METRICS] if ctx.request_api_version == 0 else [TOPIC, BROKER, BROKER_LOGGER,
                                                                          CLIENT_METRICS, GROUP]
    types = body.resource_types if ctx.request_api_version >= 1 and body.resource_types else supported
    if any(t not in supported for t in types):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.UNSUPPORTED_VERSION, "config_resources": []}
    names: list[tuple[str, int]] = []
    if GROUP in types:
        names += [(g, GROUP) for g in broker.shares.group_configs.names()]
    if CLIENT_METRICS in types:
        names += [(n, CLIENT_METRICS) for n in broker.client_metrics.names()]
    if BROKER_LOGGER in types:
        names.append((str(broker.node_id), BROKER_LOGGER))
    if BROKER in types:
        names.append((str(broker.node_id), BROKER))
    if TOPIC in types:
        names += [(t, TOPIC) for t in sorted(broker.logs.topics())]
    return {"throttle_time_ms": 0, "error_code": 0,
            "config_resources": [{"resource_name": n, "resource_type": t} for n, t in names]}
