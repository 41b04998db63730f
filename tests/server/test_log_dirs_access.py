"""Authorization of AlterReplicaLogDirs (KafkaApis.handleAlterReplicaLogDirsRequest): ALTER
on the cluster, else every partition named answers CLUSTER_AUTHORIZATION_FAILED and the
request never reaches the handler."""

from __future__ import annotations

from construct import Container

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from tests.server.helpers import authorized_call


def test_alter_replica_log_dirs_needs_alter_on_the_cluster():
    dirs = [Container(path="/a", topics=[Container(name="t", partitions=[0, 1])]),
            Container(path="/b", topics=[Container(name="u", partitions=[2])])]
    out, seen = authorized_call(P.alter_replica_log_dirs, 2, {"dirs": dirs}, (O.DESCRIBE, R.CLUSTER, CLUSTER_NAME))
    denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert seen == [] and out == {"throttle_time_ms": 0, "results": [
        {"topic_name": "t", "partitions": [{"partition_index": 0, "error_code": denied},
                                           {"partition_index": 1, "error_code": denied}]},
        {"topic_name": "u", "partitions": [{"partition_index": 2, "error_code": denied}]}]}
    out, seen = authorized_call(P.alter_replica_log_dirs, 2, {"dirs": dirs}, (O.ALTER, R.CLUSTER, CLUSTER_NAME))
    assert out == {"error_code": 0} and len(seen) == 1
