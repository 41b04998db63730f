"""StreamsGroupDescribe (key 89): describe Kafka Streams groups (KIP-1071).

Ledger: v0-1 supported; v0+ flexible. kproto decodes and encodes every version
Kafka has defined; its broker answers v0-1 (ApiSpec.served).

    v0   first version
    v1   request + include_topology_description; response + groups.topology_description,
         groups.topology_description.subtopologies,
         groups.topology_description.subtopologies.subtopology_id,
         groups.topology_description.subtopologies.nodes,
         groups.topology_description.subtopologies.nodes.name,
         groups.topology_description.subtopologies.nodes.node_type,
         groups.topology_description.subtopologies.nodes.source_topics,
         groups.topology_description.subtopologies.nodes.sink_topic,
         groups.topology_description.subtopologies.nodes.stores,
         groups.topology_description.subtopologies.nodes.successors,
         groups.topology_description.global_stores,
         groups.topology_description.global_stores.source,
         groups.topology_description.global_stores.source.name,
         groups.topology_description.global_stores.source.node_type,
         groups.topology_description.global_stores.source.source_topics,
         groups.topology_description.global_stores.source.sink_topic,
         groups.topology_description.global_stores.source.stores,
         groups.topology_description.global_stores.source.successors,
         groups.topology_description.global_stores.processor,
         groups.topology_description.global_stores.processor.name,
         groups.topology_description.global_stores.processor.node_type,
         groups.topology_description.global_stores.processor.source_topics,
         groups.topology_description.global_stores.processor.sink_topic,
         groups.topology_description.global_stores.processor.stores,
         groups.topology_description.global_stores.processor.successors,
         groups.topology_description_status, groups.assignor_name
    not supported: nothing else in Kafka's definitions (up to Kafka 4.4.0).

Grammar of the newest supported version (generated from the tables
below by ApiSpec.grammar_block; tests keep it current)::

    StreamsGroupDescribe Request v1 (flexible):
      group_ids COMPACT_ARRAY of COMPACT_STRING
      include_authorized_operations BOOLEAN
      include_topology_description BOOLEAN
      TAG_BUFFER

    StreamsGroupDescribe Response v1 (flexible):
      throttle_time_ms INT32
      groups COMPACT_ARRAY of DescribedGroup
        error_code INT16
        error_message COMPACT_NULLABLE_STRING
        group_id COMPACT_STRING
        group_state COMPACT_STRING
        group_epoch INT32
        assignment_epoch INT32
        topology Topology?
          epoch INT32
          subtopologies COMPACT_NULLABLE_ARRAY of Subtopology
            subtopology_id COMPACT_STRING
            source_topics COMPACT_ARRAY of COMPACT_STRING
            repartition_sink_topics COMPACT_ARRAY of COMPACT_STRING
            state_changelog_topics COMPACT_ARRAY of TopicInfo
              name COMPACT_STRING
              partitions INT32
              replication_factor INT16
              topic_configs COMPACT_ARRAY of KeyValue
                key COMPACT_STRING
                value COMPACT_STRING
                TAG_BUFFER
              TAG_BUFFER
            repartition_source_topics COMPACT_ARRAY of TopicInfo
              name COMPACT_STRING
              partitions INT32
              replication_factor INT16
              topic_configs COMPACT_ARRAY of KeyValue
                key COMPACT_STRING
                value COMPACT_STRING
                TAG_BUFFER
              TAG_BUFFER
            TAG_BUFFER
          TAG_BUFFER
        members COMPACT_ARRAY of Member
          member_id COMPACT_STRING
          member_epoch INT32
          instance_id COMPACT_NULLABLE_STRING
          rack_id COMPACT_NULLABLE_STRING
          client_id COMPACT_STRING
          client_host COMPACT_STRING
          topology_epoch INT32
          process_id COMPACT_STRING
          user_endpoint Endpoint?
            host COMPACT_STRING
            port UINT16
            TAG_BUFFER
          client_tags COMPACT_ARRAY of KeyValue
            key COMPACT_STRING
            value COMPACT_STRING
            TAG_BUFFER
          task_offsets COMPACT_ARRAY of TaskOffset
            subtopology_id COMPACT_STRING
            partition INT32
            offset INT64
            TAG_BUFFER
          task_end_offsets COMPACT_ARRAY of TaskOffset
            subtopology_id COMPACT_STRING
            partition INT32
            offset INT64
            TAG_BUFFER
          assignment Assignment
            active_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            standby_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            warmup_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            TAG_BUFFER
          target_assignment Assignment
            active_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            standby_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            warmup_tasks COMPACT_ARRAY of TaskIds
              subtopology_id COMPACT_STRING
              partitions COMPACT_ARRAY of INT32
              TAG_BUFFER
            TAG_BUFFER
          is_classic BOOLEAN
          TAG_BUFFER
        authorized_operations INT32
        topology_description TopologyDescription?
          subtopologies COMPACT_ARRAY of TopologyDescriptionSubtopology
            subtopology_id COMPACT_STRING
            nodes COMPACT_ARRAY of TopologyDescriptionNode
              name COMPACT_STRING
              node_type INT8
              source_topics COMPACT_ARRAY of COMPACT_STRING
              sink_topic COMPACT_NULLABLE_STRING
              stores COMPACT_ARRAY of COMPACT_STRING
              successors COMPACT_ARRAY of COMPACT_STRING
              TAG_BUFFER
            TAG_BUFFER
          global_stores COMPACT_ARRAY of TopologyDescriptionGlobalStore
            source TopologyDescriptionNode
              name COMPACT_STRING
              node_type INT8
              source_topics COMPACT_ARRAY of COMPACT_STRING
              sink_topic COMPACT_NULLABLE_STRING
              stores COMPACT_ARRAY of COMPACT_STRING
              successors COMPACT_ARRAY of COMPACT_STRING
              TAG_BUFFER
            processor TopologyDescriptionNode
              name COMPACT_STRING
              node_type INT8
              source_topics COMPACT_ARRAY of COMPACT_STRING
              sink_topic COMPACT_NULLABLE_STRING
              stores COMPACT_ARRAY of COMPACT_STRING
              successors COMPACT_ARRAY of COMPACT_STRING
              TAG_BUFFER
            TAG_BUFFER
          TAG_BUFFER
        topology_description_status INT8
        assignor_name COMPACT_NULLABLE_STRING
        TAG_BUFFER
      TAG_BUFFER

doc-ref: clients/src/main/resources/common/message/StreamsGroupDescribe{Request,Response}.json.
Generated by generators.protocol from: kafka-clients-4.4.0.jar.
Do not edit: fix the generator and re-run it.
"""

from kproto.schemas.message import (
    INT8, INT16, INT32, INT64, UINT16, BOOL, STRING, ApiSpec, ArrayOf, Field, Struct,
)

REQUEST = Struct(
    "StreamsGroupDescribeRequest",
    Field("group_ids", ArrayOf(STRING), doc="the ids of the groups to describe"),
    Field("include_authorized_operations", BOOL, doc="whether to include authorized operations"),
    Field("include_topology_description", BOOL, "1+",
          doc="whether to include the full topology description from the topology description "
              "plugin in the response"),
)

KEY_VALUE = Struct(
    "KeyValue",
    Field("key", STRING, doc="key of the config"),
    Field("value", STRING, doc="value of the config"),
)

TOPIC_INFO = Struct(
    "TopicInfo",
    Field("name", STRING, doc="the name of the topic"),
    Field("partitions", INT32,
          doc="the number of partitions in the topic. Can be 0 if no specific number of "
              "partitions is enforced. Always 0 for changelog topics"),
    Field("replication_factor", INT16,
          doc="the replication factor of the topic. Can be 0 if the default replication factor "
              "should be used"),
    Field("topic_configs", ArrayOf(KEY_VALUE), doc="topic-level configurations as key-value pairs"),
)

SUBTOPOLOGY = Struct(
    "Subtopology",
    Field("subtopology_id", STRING, doc="string to uniquely identify the subtopology"),
    Field("source_topics", ArrayOf(STRING), doc="the topics the subtopology reads from"),
    Field("repartition_sink_topics", ArrayOf(STRING),
          doc="the repartition topics the subtopology writes to"),
    Field("state_changelog_topics", ArrayOf(TOPIC_INFO),
          doc="the set of state changelog topics associated with this subtopology. Created "
              "automatically"),
    Field("repartition_source_topics", ArrayOf(TOPIC_INFO),
          doc="the set of source topics that are internally created repartition topics. Created "
              "automatically"),
)

TOPOLOGY = Struct(
    "Topology",
    Field("epoch", INT32, doc="the epoch of the currently initialized topology for this group"),
    Field("subtopologies", ArrayOf(SUBTOPOLOGY), nullable="0+", default=None,
          doc="the subtopologies of the streams application. This contains the configured "
              "subtopologies, where the number of partitions are set and any regular expressions "
              "are resolved to actual topics. Null if the group is uninitialized, source topics "
              "are missing or incorrectly partitioned"),
)

ENDPOINT = Struct(
    "Endpoint",
    Field("host", STRING, doc="host of the endpoint"),
    Field("port", UINT16, doc="port of the endpoint"),
)

TASK_OFFSET = Struct(
    "TaskOffset",
    Field("subtopology_id", STRING, doc="the subtopology identifier"),
    Field("partition", INT32, doc="the partition"),
    Field("offset", INT64, doc="the offset"),
)

TASK_IDS = Struct(
    "TaskIds",
    Field("subtopology_id", STRING, doc="the subtopology identifier"),
    Field("partitions", ArrayOf(INT32),
          doc="the partitions of the input topics processed by this member"),
)

ASSIGNMENT = Struct(
    "Assignment",
    Field("active_tasks", ArrayOf(TASK_IDS), doc="active tasks for this client"),
    Field("standby_tasks", ArrayOf(TASK_IDS), doc="standby tasks for this client"),
    Field("warmup_tasks", ArrayOf(TASK_IDS), doc="warm-up tasks for this client"),
)

MEMBER = Struct(
    "Member",
    Field("member_id", STRING, doc="the member ID"),
    Field("member_epoch", INT32, doc="the member epoch"),
    Field("instance_id", STRING, nullable="0+", default=None,
          doc="the member instance ID for static membership"),
    Field("rack_id", STRING, nullable="0+", default=None, doc="the rack ID"),
    Field("client_id", STRING, doc="the client ID"),
    Field("client_host", STRING, doc="the client host"),
    Field("topology_epoch", INT32, doc="the epoch of the topology on the client"),
    Field("process_id", STRING,
          doc="identity of the streams instance that may have multiple clients"),
    Field("user_endpoint", ENDPOINT, nullable="0+", default=None,
          doc="user-defined endpoint for Interactive Queries. Null if not defined for this client"),
    Field("client_tags", ArrayOf(KEY_VALUE), doc="used for rack-aware assignment algorithm"),
    Field("task_offsets", ArrayOf(TASK_OFFSET), doc="cumulative changelog offsets for tasks"),
    Field("task_end_offsets", ArrayOf(TASK_OFFSET),
          doc="cumulative changelog end offsets for tasks"),
    Field("assignment", ASSIGNMENT, doc="the current assignment"),
    Field("target_assignment", ASSIGNMENT, doc="the target assignment"),
    Field("is_classic", BOOL, doc="true for classic members that have not been upgraded yet"),
)

TOPOLOGY_DESCRIPTION_NODE = Struct(
    "TopologyDescriptionNode",
    Field("name", STRING, "1+", doc="the name of this node (e.g., KSTREAM-SOURCE-0000000000)"),
    Field("node_type", INT8, "1+", doc="the type of this node: 1=SOURCE, 2=PROCESSOR, 3=SINK"),
    Field("source_topics", ArrayOf(STRING), "1+",
          doc="the source topics this node reads from. Defined only for source nodes, may be "
              "empty if source topics are dynamically determined"),
    Field("sink_topic", STRING, "1+", nullable="1+", default=None,
          doc="the topic this node writes to. Defined only for sink nodes, may be null if sink "
              "topic is dynamically determined"),
    Field("stores", ArrayOf(STRING), "1+",
          doc="the state store names accessed by this node. Defined only for processor nodes"),
    Field("successors", ArrayOf(STRING), "1+",
          doc="the names of successor nodes in the processing graph. Predecessor relationships "
              "are reconstructed from this field"),
)

TOPOLOGY_DESCRIPTION_SUBTOPOLOGY = Struct(
    "TopologyDescriptionSubtopology",
    Field("subtopology_id", STRING, "1+",
          doc="the subtopology identifier, unique within the topology"),
    Field("nodes", ArrayOf(TOPOLOGY_DESCRIPTION_NODE), "1+",
          doc="the processing nodes in this subtopology"),
)

TOPOLOGY_DESCRIPTION_GLOBAL_STORE = Struct(
    "TopologyDescriptionGlobalStore",
    Field("source", TOPOLOGY_DESCRIPTION_NODE, "1+",
          doc="the source node providing data to the global store"),
    Field("processor", TOPOLOGY_DESCRIPTION_NODE, "1+",
          doc="the processor node that populates the global store"),
)

TOPOLOGY_DESCRIPTION = Struct(
    "TopologyDescription",
    Field("subtopologies", ArrayOf(TOPOLOGY_DESCRIPTION_SUBTOPOLOGY), "1+",
          doc="the subtopologies that make up this topology"),
    Field("global_stores", ArrayOf(TOPOLOGY_DESCRIPTION_GLOBAL_STORE), "1+",
          doc="global state stores used by this topology"),
)

DESCRIBED_GROUP = Struct(
    "DescribedGroup",
    Field("error_code", INT16, doc="the describe error, or 0 if there was no error"),
    Field("error_message", STRING, nullable="0+", default=None,
          doc="the top-level error message, or null if there was no error"),
    Field("group_id", STRING, doc="the group ID string"),
    Field("group_state", STRING, doc="the group state string, or the empty string"),
    Field("group_epoch", INT32, doc="the group epoch"),
    Field("assignment_epoch", INT32, doc="the assignment epoch"),
    Field("topology", TOPOLOGY, nullable="0+", default=None,
          doc="the topology metadata currently initialized for the streams application. Can be "
              "null in case of a describe error"),
    Field("members", ArrayOf(MEMBER), doc="the members"),
    Field("authorized_operations", INT32, default=-2147483648,
          doc="32-bit bitfield to represent authorized operations for this group"),
    Field("topology_description", TOPOLOGY_DESCRIPTION, "1+", nullable="1+", default=None,
          doc="the full topology description for this group. Non-null if and only if "
              "TopologyDescriptionStatus is AVAILABLE (3); null otherwise"),
    Field("topology_description_status", INT8, "1+",
          doc="the status of the topology description for this group, paired with "
              "TopologyDescription: 0=NOT_REQUESTED (client did not set "
              "IncludeTopologyDescription; TopologyDescription is null); 1=NOT_STORED (no "
              "description recorded for this group; TopologyDescription is null); 2=ERROR (broker"
              " failed to fetch the description, see broker logs; TopologyDescription is null); "
              "3=AVAILABLE (TopologyDescription is non-null and carries the description)"),
    Field("assignor_name", STRING, "1+", nullable="1+", default=None,
          doc="the task assignor that the group coordinator will use for the next assignment "
              "computation. This may differ from the assignor that computed the current "
              "assignment, because changing the assignor configuration does not trigger a "
              "rebalance. Null in case of a describe error"),
)

RESPONSE = Struct(
    "StreamsGroupDescribeResponse",
    Field("throttle_time_ms", INT32,
          doc="the duration in milliseconds for which the request was throttled due to a quota "
              "violation, or zero if the request did not violate any quota"),
    Field("groups", ArrayOf(DESCRIBED_GROUP), doc="each described group"),
)

API = ApiSpec("StreamsGroupDescribe", key=89, min_version=0, max_version=1, flexible_from=0,
              request_schema=REQUEST, response_schema=RESPONSE, served=(0, 1))
request = API.request
response = API.response
