"""DescribeConfigs (key 32): effective configs of topics and brokers.

Ledger: v0-4 supported; v4+ flexible.

    v0   resources (type, name, keys or null for all); response is_default per config
    v1   request + include_synonyms; response config_source + synonyms replace is_default
    v2   same as v1 (the broker answers before throttling)
    v3   request + include_documentation; response + config_type, documentation (KIP-569)
    v4   flexible
    not supported: nothing newer exists in Kafka 4.x's definitions.

Resource types: 2 topic, 4 broker, 8 broker logger. Kafka 4.0 removed v0
(aiokafka uses 0-2; librdkafka <= 1, kafka-python <= 4).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    DescribeConfigs Request v4 (flexible):
      resources COMPACT_ARRAY of DescribeConfigsResource
        resource_type INT8
        resource_name COMPACT_STRING
        configuration_keys COMPACT_NULLABLE_ARRAY of COMPACT_STRING
        TAG_BUFFER
      include_synonyms BOOLEAN
      include_documentation BOOLEAN
      TAG_BUFFER

    DescribeConfigs Response v4 (flexible):
      throttle_time_ms INT32
      results COMPACT_ARRAY of DescribeConfigsResult
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        resource_type INT8
        resource_name COMPACT_STRING
        configs COMPACT_ARRAY of DescribeConfigsResourceResult
          name COMPACT_STRING
          value COMPACT_NULLABLE_STRING
          read_only BOOLEAN
          config_source INT8
          is_sensitive BOOLEAN
          synonyms COMPACT_ARRAY of DescribeConfigsSynonym
            name COMPACT_STRING
            value COMPACT_NULLABLE_STRING
            source INT8
            TAG_BUFFER
          config_type INT8
          documentation COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/DescribeConfigs{Request,Response}.json;
KIP-133, KIP-226, KIP-569.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

DESCRIBE_CONFIGS_RESOURCE = Struct(
    "DescribeConfigsResource",
    Field("resource_type", INT8, doc="2 topic, 4 broker, 8 broker logger"),
    Field("resource_name", STRING, doc="topic name or broker id"),
    Field("configuration_keys", ArrayOf(STRING), nullable="0+", doc="keys wanted, null for all"),
)

REQUEST = Struct(
    "DescribeConfigsRequest",
    Field("resources", ArrayOf(DESCRIBE_CONFIGS_RESOURCE), doc="what to describe"),
    Field("include_synonyms", BOOL, "1+", default=False, doc="list every source of each value"),
    Field("include_documentation", BOOL, "3+", default=False, doc="add each key's documentation"),
)

DESCRIBE_CONFIGS_SYNONYM = Struct(
    "DescribeConfigsSynonym",
    Field("name", STRING, "1+", doc="key at that source"),
    Field("value", STRING, "1+", nullable="0+", doc="value at that source"),
    Field("source", INT8, "1+", doc="the source"),
)

DESCRIBE_CONFIGS_RESOURCE_RESULT = Struct(
    "DescribeConfigsResourceResult",
    Field("name", STRING, doc="config key"),
    Field("value", STRING, nullable="0+", doc="effective value, null if sensitive"),
    Field("read_only", BOOL, doc="cannot be changed"),
    Field("config_source", INT8, "1+", default=-1,
          doc="1 topic, 2 dynamic broker, 3 dynamic default, 4 static, 5 default..."),
    Field("is_default", BOOL, "0", doc="v0: value is the default"),
    Field("is_sensitive", BOOL, doc="value is a secret"),
    Field("synonyms", ArrayOf(DESCRIBE_CONFIGS_SYNONYM), "1+", doc="every source, by precedence"),
    Field("config_type", INT8, "3+", default=0, doc="value type (boolean, string, int...)"),
    Field("documentation", STRING, "3+", nullable="0+", doc="the key's documentation"),
)

DESCRIBE_CONFIGS_RESULT = Struct(
    "DescribeConfigsResult",
    Field("error_code", INT16, doc="0 if described"),
    Field("error_message", STRING, nullable="0+", doc="text for error_code"),
    Field("resource_type", INT8, doc="resource type"),
    Field("resource_name", STRING, doc="resource name"),
    Field("configs", ArrayOf(DESCRIBE_CONFIGS_RESOURCE_RESULT), doc="its configs"),
)

RESPONSE = Struct(
    "DescribeConfigsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("results", ArrayOf(DESCRIBE_CONFIGS_RESULT), doc="one result per resource"),
)

API = ApiSpec("DescribeConfigs", key=32, min_version=0, max_version=4, flexible_from=4,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 4))
request = API.request
response = API.response
