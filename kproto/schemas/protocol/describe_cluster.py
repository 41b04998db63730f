"""DescribeCluster (key 60): brokers, controller and cluster id (KIP-700).

Ledger: v0-2 supported; flexible in every version.

    v0   include_cluster_authorized_operations; response cluster_id, controller_id, brokers
    v1   + endpoint_type (1 brokers, 2 controllers, KIP-919)
    v2   request include_fenced_brokers; brokers + is_fenced (KIP-1073)
    not supported: nothing newer exists in Kafka 4.x's definitions.

The broker answers v0-2: v2's fenced brokers (KIP-1073) are a KRaft controller's
notion; a standalone node is registered and unfenced, so ``is_fenced`` is false
whatever include_fenced_brokers says; a node of ``kproto cluster`` lists its fenced
brokers too when asked.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeCluster Request v2 (flexible):
      include_cluster_authorized_operations BOOLEAN
      endpoint_type INT8
      include_fenced_brokers BOOLEAN
      TAG_BUFFER

    DescribeCluster Response v2 (flexible):
      throttle_time_ms INT32
      error_code INT16
      error_message COMPACT_NULLABLE_STRING
      endpoint_type INT8
      cluster_id COMPACT_STRING
      controller_id INT32
      brokers COMPACT_ARRAY of DescribeClusterBroker
        broker_id INT32
        host COMPACT_STRING
        port INT32
        rack COMPACT_NULLABLE_STRING
        is_fenced BOOLEAN
        TAG_BUFFER
      cluster_authorized_operations INT32
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeCluster{Request,Response}.json;
KIP-700, KIP-919, KIP-1073.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "DescribeClusterRequest",
    Field("include_cluster_authorized_operations", BOOL,
          doc="ask for the cluster's authorized-operations bitfield"),
    Field("endpoint_type", INT8, "1+", default=1, doc="1 brokers, 2 controllers"),
    Field("include_fenced_brokers", BOOL, "2+", doc="list fenced brokers too"),
)

DESCRIBE_CLUSTER_BROKER = Struct(
    "DescribeClusterBroker",
    Field("broker_id", INT32, doc="broker id"),
    Field("host", STRING, doc="broker host"),
    Field("port", INT32, doc="broker port"),
    Field("rack", STRING, nullable="0+", default=None, doc="broker rack, null if none"),
    Field("is_fenced", BOOL, "2+", doc="broker is fenced"),
)

RESPONSE = Struct(
    "DescribeClusterResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("error_code", INT16, doc="0 if described"),
    Field("error_message", STRING, nullable="0+", default=None, doc="text for error_code"),
    Field("endpoint_type", INT8, "1+", default=1, doc="endpoint type answered"),
    Field("cluster_id", STRING, doc="cluster id"),
    Field("controller_id", INT32, default=-1, doc="controller's id, -1 if unknown"),
    Field("brokers", ArrayOf(DESCRIBE_CLUSTER_BROKER), doc="the brokers"),
    Field("cluster_authorized_operations", INT32, default=-2**31,
          doc="bitfield of allowed cluster operations, -2^31 if not asked"),
)

API = ApiSpec("DescribeCluster", key=60, min_version=0, max_version=2, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 2))
request = API.request
response = API.response
