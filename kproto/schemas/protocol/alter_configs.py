"""AlterConfigs (key 33): replace the whole config of topics or brokers.

Ledger: v0-2 supported; v2+ flexible.

    v0   resources (type, name, configs), validate_only
    v1   same as v0 (the broker answers before throttling)
    v2   flexible
    not supported: nothing newer exists in Kafka 4.x's definitions.

Keys left out are reset to their defaults; IncrementalAlterConfigs (key 44)
changes single keys instead.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    AlterConfigs Request v2 (flexible):
      resources COMPACT_ARRAY of AlterConfigsResource
        resource_type INT8
        resource_name COMPACT_STRING
        configs COMPACT_ARRAY of AlterableConfig
          name COMPACT_STRING
          value COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      validate_only BOOLEAN
      TAG_BUFFER

    AlterConfigs Response v2 (flexible):
      throttle_time_ms INT32
      responses COMPACT_ARRAY of AlterConfigsResourceResponse
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        resource_type INT8
        resource_name COMPACT_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/AlterConfigs{Request,Response}.json; KIP-133.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

ALTERABLE_CONFIG = Struct(
    "AlterableConfig",
    Field("name", STRING, doc="config key"),
    Field("value", STRING, nullable="0+", doc="new value"),
)

ALTER_CONFIGS_RESOURCE = Struct(
    "AlterConfigsResource",
    Field("resource_type", INT8, doc="2 topic, 4 broker, 8 broker logger"),
    Field("resource_name", STRING, doc="topic name or broker id"),
    Field("configs", ArrayOf(ALTERABLE_CONFIG), doc="the complete new config"),
)

REQUEST = Struct(
    "AlterConfigsRequest",
    Field("resources", ArrayOf(ALTER_CONFIGS_RESOURCE), doc="what to change"),
    Field("validate_only", BOOL, doc="check only, change nothing"),
)

ALTER_CONFIGS_RESOURCE_RESPONSE = Struct(
    "AlterConfigsResourceResponse",
    Field("error_code", INT16, doc="0 if changed"),
    Field("error_message", STRING, nullable="0+", doc="text for error_code"),
    Field("resource_type", INT8, doc="resource type"),
    Field("resource_name", STRING, doc="resource name"),
)

RESPONSE = Struct(
    "AlterConfigsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("responses", ArrayOf(ALTER_CONFIGS_RESOURCE_RESPONSE), doc="one result per resource"),
)

API = ApiSpec("AlterConfigs", key=33, min_version=0, max_version=2, flexible_from=2,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 2))
request = API.request
response = API.response
