"""PushTelemetry (key 72): a client pushes its metrics (KIP-714).

Ledger: v0 supported; flexible in every version; the broker answers v0 (ApiSpec.served).

    v0   client_instance_id, subscription_id, terminating, compression_type, metrics
    not supported: nothing newer exists in Kafka 4.4's definitions.

metrics is an OpenTelemetry MetricsData protobuf, compressed with
compression_type; the codec keeps it as raw bytes, the broker decodes it
(kproto.server.telemetry).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    PushTelemetry Request v0 (flexible):
      client_instance_id UUID
      subscription_id INT32
      terminating BOOLEAN
      compression_type INT8
      metrics COMPACT_BYTES
      TAG_BUFFER

    PushTelemetry Response v0 (flexible):
      throttle_time_ms INT32
      error_code INT16
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/PushTelemetry{Request,Response}.json
(read from apache/kafka, not bundled with kafka-python); KIP-714.
"""

from kproto.schemas.message import (
    BOOL, BYTES, INT8, INT16, INT32, UUID, ApiSpec, Field, Struct,
)

REQUEST = Struct(
    "PushTelemetryRequest",
    Field("client_instance_id", UUID, doc="client's instance id"),
    Field("subscription_id", INT32, doc="subscription the metrics answer"),
    Field("terminating", BOOL, doc="last push before the client closes"),
    Field("compression_type", INT8, doc="codec of metrics (0 none, 1 gzip, ...)"),
    Field("metrics", BYTES, doc="OpenTelemetry MetricsData, compressed"),
)

RESPONSE = Struct(
    "PushTelemetryResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if accepted"),
)

API = ApiSpec("PushTelemetry", key=72, min_version=0, max_version=0, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 0))
request = API.request
response = API.response
