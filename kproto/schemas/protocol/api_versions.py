"""ApiVersions (key 18): which API versions a broker speaks (KIP-35).

Ledger: v0-5 supported; v3+ flexible in the body, but the response header is
v0 in every version (ApiSpec.flexible_response_header).

    v0  request empty; response error_code, api_keys
    v1  response + throttle_time_ms
    v2  same as v1 (the broker answers before throttling)
    v3  flexible; request + client_software_name/version; response tags 0-3
        (features: kproto.features, as Kafka 4.4 answers them)
    v4  same as v3 (KAFKA-17011: a supported feature's min_version may be 0)
    v5  request + cluster_id, node_id: the cluster and node the client means to
        reach; a mismatch is error 129 REBOOTSTRAP_REQUIRED (KIP-1242)
    not supported: nothing newer exists in Kafka 4.4's definitions.

KIP-511: a request at a version the broker does not know is answered with
error 35 UNSUPPORTED_VERSION in a *v0 body* that still lists ApiVersions'
own range, so the client can retry lower. The registry encodes and decodes
such answers as v0 whatever version was asked (ApiSpec.unsupported_version_body).
librdkafka sends v3 first, kafka-python v4, aiokafka always v0.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    ApiVersions Request v5 (flexible):
      client_software_name COMPACT_STRING
      client_software_version COMPACT_STRING
      cluster_id COMPACT_NULLABLE_STRING
      node_id INT32
      TAG_BUFFER

    ApiVersions Response v5 (flexible):
      error_code INT16
      api_keys COMPACT_ARRAY of ApiVersion
        api_key INT16
        min_version INT16
        max_version INT16
        TAG_BUFFER
      throttle_time_ms INT32
      TAG_BUFFER {
        [0] supported_features COMPACT_ARRAY of SupportedFeatureKey
          name COMPACT_STRING
          min_version INT16
          max_version INT16
          TAG_BUFFER
        [1] finalized_features_epoch INT64
        [2] finalized_features COMPACT_ARRAY of FinalizedFeatureKey
          name COMPACT_STRING
          max_version_level INT16
          min_version_level INT16
          TAG_BUFFER
        [3] zk_migration_ready BOOLEAN
      }

doc-ref: clients/src/main/resources/common/message/ApiVersions{Request,Response}.json;
KIP-35, KIP-482, KIP-511, KIP-584 (features).
"""

from kproto.schemas.message import (
    BOOL, INT16, INT32, INT64, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "ApiVersionsRequest",
    Field("client_software_name", STRING, "3+", doc="client library name, e.g. librdkafka"),
    Field("client_software_version", STRING, "3+", doc="client library version"),
    Field("cluster_id", STRING, "5+", nullable="5+", default=None,
          doc="cluster the client intends to connect to, null if unknown"),
    Field("node_id", INT32, "5+", default=-1,
          doc="node the client intends to connect to, -1 if unknown"),
)

API_VERSION = Struct(
    "ApiVersion",
    Field("api_key", INT16, doc="the API key"),
    Field("min_version", INT16, doc="oldest version the broker accepts"),
    Field("max_version", INT16, doc="newest version the broker accepts"),
)

SUPPORTED_FEATURE_KEY = Struct(
    "SupportedFeatureKey",
    Field("name", STRING, "3+", doc="feature name, e.g. metadata.version"),
    Field("min_version", INT16, "3+", doc="oldest feature level this broker supports"),
    Field("max_version", INT16, "3+", doc="newest feature level this broker supports"),
)

FINALIZED_FEATURE_KEY = Struct(
    "FinalizedFeatureKey",
    Field("name", STRING, "3+", doc="feature name"),
    Field("max_version_level", INT16, "3+", doc="cluster-wide finalized maximum level"),
    Field("min_version_level", INT16, "3+", doc="cluster-wide finalized minimum level"),
)

RESPONSE = Struct(
    "ApiVersionsResponse",
    Field("error_code", INT16, doc="0, or 35 when the request version was unknown"),
    Field("api_keys", ArrayOf(API_VERSION), doc="every API the broker serves, with its range"),
    Field("throttle_time_ms", INT32, "1+", doc="quota throttle applied, in ms"),
    Field("supported_features", ArrayOf(SUPPORTED_FEATURE_KEY), "3+", tag=0,
          doc="features this broker can support"),
    Field("finalized_features_epoch", INT64, "3+", default=-1, tag=1,
          doc="epoch of the finalized features, -1 if unknown"),
    Field("finalized_features", ArrayOf(FINALIZED_FEATURE_KEY), "3+", tag=2,
          doc="features finalized for the whole cluster"),
    Field("zk_migration_ready", BOOL, "3+", default=False, tag=3,
          doc="KRaft controller ready for a ZooKeeper migration"),
)

API = ApiSpec("ApiVersions", key=18, min_version=0, max_version=5, flexible_from=3,
              request_schema=REQUEST, response_schema=RESPONSE,
              flexible_response_header=False, unsupported_version_body=0, served=(0, 5))
request = API.request
response = API.response
