"""IncrementalAlterConfigs (key 44): set, delete, append or subtract single config keys.

Ledger: v0-1 supported; v1+ flexible.

    v0   resources (type, name, configs with an operation), validate_only
    v1   flexible
    not supported: nothing newer exists in Kafka 4.x's definitions.

Operations: 0 set, 1 delete, 2 append (list values), 3 subtract.

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    IncrementalAlterConfigs Request v1 (flexible):
      resources COMPACT_ARRAY of AlterConfigsResource
        resource_type INT8
        resource_name COMPACT_STRING
        configs COMPACT_ARRAY of AlterableConfig
          name COMPACT_STRING
          config_operation INT8
          value COMPACT_NULLABLE_STRING
          TAG_BUFFER
        TAG_BUFFER
      validate_only BOOLEAN
      TAG_BUFFER

    IncrementalAlterConfigs Response v1 (flexible):
      throttle_time_ms INT32
      responses COMPACT_ARRAY of AlterConfigsResourceResponse
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        resource_type INT8
        resource_name COMPACT_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/IncrementalAlterConfigs{Request,Response}.json;
KIP-339.
"""

from kproto.schemas.message import (
    BOOL, INT8, INT16, INT32, STRING, ApiSpec, ArrayOf, Field, Struct,
)

ALTERABLE_CONFIG = Struct(
    "AlterableConfig",
    Field("name", STRING, doc="config key"),
    Field("config_operation", INT8, doc="0 set, 1 delete, 2 append, 3 subtract"),
    Field("value", STRING, nullable="0+", doc="operand, null for delete"),
)

ALTER_CONFIGS_RESOURCE = Struct(
    "AlterConfigsResource",
    Field("resource_type", INT8, doc="2 topic, 4 broker, 8 broker logger"),
    Field("resource_name", STRING, doc="topic name or broker id"),
    Field("configs", ArrayOf(ALTERABLE_CONFIG), doc="keys to change"),
)

REQUEST = Struct(
    "IncrementalAlterConfigsRequest",
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
    "IncrementalAlterConfigsResponse",
    Field("throttle_time_ms", INT32, doc="quota throttle applied, in ms"),
    Field("responses", ArrayOf(ALTER_CONFIGS_RESOURCE_RESPONSE), doc="one result per resource"),
)

API = ApiSpec("IncrementalAlterConfigs", key=44, min_version=0, max_version=1, flexible_from=1,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 1))
request = API.request
response = API.response
