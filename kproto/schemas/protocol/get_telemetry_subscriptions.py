"""GetTelemetrySubscriptions (key 71): which client metrics the broker wants (KIP-714).

Ledger: v0 supported; flexible in every version; the broker answers v0 (ApiSpec.served).

    v0   client_instance_id (zero on first call); response subscription
    not supported: nothing newer exists in Kafka 4.4's definitions.

librdkafka >= 2.5 and kafka-clients 3.7+ ask this when it is advertised, then send
PushTelemetry (key 72). Kafka advertises both only with a telemetry receiver plugin
configured; kproto always, its receiver being kproto.server.telemetry.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    GetTelemetrySubscriptions Request v0 (flexible):
      client_instance_id UUID
      TAG_BUFFER

    GetTelemetrySubscriptions Response v0 (flexible):
      throttle_time_ms INT32
      error_code INT16
      client_instance_id UUID
      subscription_id INT32
      accepted_compression_types COMPACT_ARRAY of INT8
      push_interval_ms INT32
      telemetry_max_bytes INT32
      delta_temporality BOOLEAN
      requested_metrics COMPACT_ARRAY of COMPACT_STRING
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/GetTelemetrySubscriptions{Request,Response}.json
(read from apache/kafka, not bundled with kafka-python); KIP-714.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, UUID, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "GetTelemetrySubscriptionsRequest",
    Field("client_instance_id", UUID, doc="client's instance id, zero to get one assigned"),
)

RESPONSE = Struct(
    "GetTelemetrySubscriptionsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if answered"),
    Field("client_instance_id", UUID, doc="assigned instance id if the request had zero"),
    Field("subscription_id", INT32, doc="id of the current subscription set"),
    Field("accepted_compression_types", ArrayOf(INT8), doc="codecs allowed for PushTelemetry"),
    Field("push_interval_ms", INT32, doc="how often to push"),
    Field("telemetry_max_bytes", INT32, doc="largest metrics payload accepted"),
    Field("delta_temporality", BOOL, doc="send counters as deltas, not cumulative"),
    Field("requested_metrics", ArrayOf(STRING),
          doc="metric name prefixes wanted; [] none, [\"\"] all"),
)

API = ApiSpec("GetTelemetrySubscriptions", key=71, min_version=0, max_version=0, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 0))
request = API.request
response = API.response
