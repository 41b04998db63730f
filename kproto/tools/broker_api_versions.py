"""``kproto broker-api-versions``: kafka-broker-api-versions.sh
(org.apache.kafka.tools.BrokerApiVersionsCommand, Kafka 4.4).

    kproto broker-api-versions --bootstrap-server H:P

For each broker of the cluster's Metadata, its ApiVersions answer as Kafka's
``NodeApiVersions.toString(true)`` prints it: every API in key order as
``Name(key): min to max [usable: N]``, where N is the highest version both the
broker and Kafka 4.4's client speak, and ``Name(key): UNSUPPORTED`` for the
client APIs the broker does not list. The "client" here is Kafka 4.4's
(``KAFKA_CLIENT_APIS``), not kproto's own registry, so the lines diff equal to
Kafka's tool. Brokers are printed in node id order (Kafka's is a HashMap's)."""

from __future__ import annotations

import click

from kproto.tools.main import OneLineCommand, exit_status_help

# Kafka 4.4's org.apache.kafka.common.protocol.ApiKeys: (id, name, oldestVersion(),
# latestVersion() (stable versions only, as the admin client uses), in clientApis()).
# LeaderAndIsr..ControlledShutdown have no version left (latest -1).
KAFKA_CLIENT_APIS: tuple[tuple[int, str, int, int, bool], ...] = (
    (0, "Produce", 3, 13, True),
    (1, "Fetch", 4, 18, True),
    (2, "ListOffsets", 1, 11, True),
    (3, "Metadata", 0, 13, True),
    (4, "LeaderAndIsr", 0, -1, False),
    (5, "StopReplica", 0, -1, False),
    (6, "UpdateMetadata", 0, -1, False),
    (7, "ControlledShutdown", 0, -1, False),
    (8, "OffsetCommit", 2, 10, True),
    (9, "OffsetFetch", 1, 10, True),
    (10, "FindCoordinator", 0, 6, True),
    (11, "JoinGroup", 0, 9, True),
    (12, "Heartbeat", 0, 4, True),
    (13, "LeaveGroup", 0, 5, True),
    (14, "SyncGroup", 0, 5, True),
    (15, "DescribeGroups", 0, 6, True),
    (16, "ListGroups", 0, 5, True),
    (17, "SaslHandshake", 0, 1, True),
    (18, "ApiVersions", 0, 5, True),
    (19, "CreateTopics", 2, 7, True),
    (20, "DeleteTopics", 1, 6, True),
    (21, "DeleteRecords", 0, 2, True),
    (22, "InitProducerId", 0, 5, True),
    (23, "OffsetForLeaderEpoch", 2, 4, True),
    (24, "AddPartitionsToTxn", 0, 5, True),
    (25, "AddOffsetsToTxn", 0, 4, True),
    (26, "EndTxn", 0, 5, True),
    (27, "WriteTxnMarkers", 1, 2, True),
    (28, "TxnOffsetCommit", 0, 6, True),
    (29, "DescribeAcls", 1, 3, True),
    (30, "CreateAcls", 1, 3, True),
    (31, "DeleteAcls", 1, 3, True),
    (32, "DescribeConfigs", 1, 4, True),
    (33, "AlterConfigs", 0, 2, True),
    (34, "AlterReplicaLogDirs", 1, 2, True),
    (35, "DescribeLogDirs", 1, 5, True),
    (36, "SaslAuthenticate", 0, 2, True),
    (37, "CreatePartitions", 0, 3, True),
    (38, "CreateDelegationToken", 1, 3, True),
    (39, "RenewDelegationToken", 1, 2, True),
    (40, "ExpireDelegationToken", 1, 2, True),
    (41, "DescribeDelegationToken", 1, 3, True),
    (42, "DeleteGroups", 0, 3, True),
    (43, "ElectLeaders", 0, 2, True),
    (44, "IncrementalAlterConfigs", 0, 1, True),
    (45, "AlterPartitionReassignments", 0, 1, True),
    (46, "ListPartitionReassignments", 0, 0, True),
    (47, "OffsetDelete", 0, 0, True),
    (48, "DescribeClientQuotas", 0, 1, True),
    (49, "AlterClientQuotas", 0, 1, True),
    (50, "DescribeUserScramCredentials", 0, 0, True),
    (51, "AlterUserScramCredentials", 0, 0, True),
    (52, "Vote", 0, 2, False),
    (53, "BeginQuorumEpoch", 0, 1, False),
    (54, "EndQuorumEpoch", 0, 1, False),
    (55, "DescribeQuorum", 0, 2, True),
    (56, "AlterPartition", 2, 3, False),
    (57, "UpdateFeatures", 0, 2, True),
    (58, "Envelope", 0, 0, False),
    (59, "FetchSnapshot", 0, 1, False),
    (60, "DescribeCluster", 0, 2, True),
    (61, "DescribeProducers", 0, 0, True),
    (62, "BrokerRegistration", 0, 4, False),
    (63, "BrokerHeartbeat", 0, 2, False),
    (64, "UnregisterBroker", 0, 0, True),
    (65, "DescribeTransactions", 0, 0, True),
    (66, "ListTransactions", 0, 2, True),
    (67, "AllocateProducerIds", 0, 0, False),
    (68, "ConsumerGroupHeartbeat", 0, 1, True),
    (69, "ConsumerGroupDescribe", 0, 1, True),
    (70, "ControllerRegistration", 0, 0, False),
    (71, "GetTelemetrySubscriptions", 0, 0, True),
    (72, "PushTelemetry", 0, 0, True),
    (73, "AssignReplicasToDirs", 0, 0, False),
    (74, "ListConfigResources", 0, 1, True),
    (75, "DescribeTopicPartitions", 0, 0, True),
    (76, "ShareGroupHeartbeat", 1, 1, True),
    (77, "ShareGroupDescribe", 1, 1, True),
    (78, "ShareFetch", 1, 2, True),
    (79, "ShareAcknowledge", 1, 2, True),
    (80, "AddRaftVoter", 0, 1, True),
    (81, "RemoveRaftVoter", 0, 0, True),
    (82, "UpdateRaftVoter", 0, 0, False),
    (83, "InitializeShareGroupState", 0, 0, True),
    (84, "ReadShareGroupState", 0, 0, True),
    (85, "WriteShareGroupState", 0, 1, True),
    (86, "DeleteShareGroupState", 0, 0, True),
    (87, "ReadShareGroupStateSummary", 0, 1, True),
    (88, "StreamsGroupHeartbeat", 0, 1, True),
    (89, "StreamsGroupDescribe", 0, 1, True),
    (90, "DescribeShareGroupOffsets", 0, 1, True),
    (91, "AlterShareGroupOffsets", 0, 0, True),
    (92, "DeleteShareGroupOffsets", 0, 0, True),
    (93, "StreamsGroupTopologyDescriptionUpdate", 0, 0, True),
    (94, "UnregisterController", 0, 0, True),
)
_BY_KEY = {k: (name, oldest, latest) for k, name, oldest, latest, _ in KAFKA_CLIENT_APIS}


def api_version_text(key: int, min_version: int, max_version: int) -> str:
    """One API as NodeApiVersions.apiVersionToText writes it."""
    known = _BY_KEY.get(key)
    versions = f"{min_version}" if min_version == max_version else f"{min_version} to {max_version}"
    if known is None:
        return f"UNKNOWN({key}): {versions}"
    name, oldest, latest = known
    if latest < min_version:
        usable = "[unusable: node too new]"
    elif max_version < oldest:
        usable = "[unusable: node too old]"
    else:
        usable = f"[usable: {min(latest, max_version)}]"
    return f"{name}({key}): {versions} {usable}"


def node_api_versions_text(versions: dict[int, tuple[int, int]]) -> str:
    """NodeApiVersions.toString(true): the broker's APIs and the client APIs it lacks, in key order."""
    lines = {k: api_version_text(k, lo, hi) for k, (lo, hi) in versions.items()}
    for key, name, _, _, client_api in KAFKA_CLIENT_APIS:
        if client_api and key not in lines:
            lines[key] = f"{name}({key}): UNSUPPORTED"
    return "(\n\t" + ",\n\t".join(lines[k] for k in sorted(lines)) + "\n)"


@click.command("broker-api-versions", cls=OneLineCommand, context_settings={"help_option_names": ["-h", "--help"]},
               epilog=exit_status_help("the cluster could not be reached (one line on stderr); a broker that "
                                       "does not answer is a `-> ERROR: ...` line, as Kafka's"))
@click.option("--bootstrap-server", required=True, metavar="HOST:PORT", help="REQUIRED: The server to connect to.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="A property file containing configs to be passed to Admin Client.")
def broker_api_versions(bootstrap_server: str, command_config: str | None) -> None:
    """Print each broker's API versions like kafka-broker-api-versions.sh."""
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import KprotoError
    config = load_client_properties(command_config) if command_config else None
    with BrokerClient(bootstrap_server, config=config) as client:
        brokers = Admin(client).metadata([]).brokers
        for b in sorted(brokers, key=lambda b: b.node_id):
            node = f"{b.host}:{b.port} (id: {b.node_id} rack: {b.rack or 'null'} isFenced: false)"
            try:
                other = client.connect_to(b.host, b.port)
                try:
                    text = node_api_versions_text(other.conn.broker_versions)
                finally:
                    if other is not client:
                        other.close()
            except KprotoError as e:
                text = f"ERROR: {e}"
            click.echo(f"{node} -> {text}")
