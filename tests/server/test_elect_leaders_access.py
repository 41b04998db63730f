"""ElectLeaders' authorization (KafkaApis.handleElectLeaders): ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED for the request and for each named partition (none for a request
of all partitions), and the handler never runs. Its answers on one node: tests/e2e/test_admin_client_kafka4.py."""

from __future__ import annotations

from construct import Container

from kproto.errors import ErrorCode as E
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from tests.server.helpers import authorized_call as call


def test_elect_leaders_needs_alter_on_the_cluster():
    body = {"election_type": 0, "timeout_ms": 1000, "topic_partitions": [
        Container(topic="t", partitions=[0, 1]), Container(topic="u", partitions=[2])]}
    out, seen = call(P.elect_leaders, 2, dict(body))
    denied = {"partition_id": 0, "error_code": E.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
    assert seen == [] and out == {"throttle_time_ms": 0, "error_code": E.CLUSTER_AUTHORIZATION_FAILED,
                                  "replica_election_results": [
                                      {"topic": "t", "partition_result": [denied, {**denied, "partition_id": 1}]},
                                      {"topic": "u", "partition_result": [{**denied, "partition_id": 2}]}]}
    out, seen = call(P.elect_leaders, 2, {**body, "topic_partitions": None})
    assert seen == [] and out["replica_election_results"] == []
    out, seen = call(P.elect_leaders, 2, dict(body), (O.ALTER, R.CLUSTER, CLUSTER_NAME))
    assert out == {"error_code": 0} and len(seen) == 1
