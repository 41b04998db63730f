"""DescribeLogDirs: the one log directory, its disk space and each partition's size
(KafkaApis.handleDescribeLogDirsRequest, ReplicaManager.describeLogDirs); AlterReplicaLogDirs
(ReplicaManager.alterReplicaLogDirs) as Kafka answers it on a broker with one log dir.

A single node has one directory, so no future logs: moving a replica to the directory
it is in is a successful no-op, and every replica is the leader, so each partition's
offset lag (high watermark minus log end offset, at least 0) is 0 and ``is_future_key``
false. v1+, as Kafka 4 (KIP-896 removed v0).
"""

from __future__ import annotations

import shutil
import os

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.handlers import handles


def _log_dir(broker, wanted: set[tuple[str, int]] | None) -> dict:
    path = broker.logs.data_dir.resolve()
    try:
        usage = shutil.disk_usage(path)     # FileStore.getTotalSpace / getUsableSpace
    except OSError:
        return {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(path), "topics": []}
    topics: dict[str, list[dict]] = {}
    for (topic, partition), log in sorted(broker.logs.logs().items()):
        if wanted is None or (topic, partition) in wanted:
            topics.setdefault(topic, []).append({
                "partition_index": partition, "partition_size": log.size,
                "offset_lag": max(log.high_watermark - log.log_end_offset, 0), "is_future_key": False})
    return {"error_code": 0, "log_dir": str(path), "total_bytes": usage.total, "usable_bytes": usage.free,
            "is_cordoned": False,
            "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    """DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED and no directory."""
    if not a.ok(O.DESCRIBE, R.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "error_code": C_DENIED, "results": []}
    return await handler(broker, ctx, body)


@handles(P.describe_log_dirs, authorize=_authorize)
async def describe_log_dirs(broker, ctx, body) -> dict:
    wanted = None if body.topics is None else {(t.topic, p) for t in body.topics for p in t.partitions}
    return {"throttle_time_ms": 0, "error_code": 0, "results": [_log_dir(broker, wanted)]}


async def _alter_authorize(a: Access, broker, ctx, body, handler) -> dict:
    """KafkaApis.handleAlterReplicaLogDirsRequest: ALTER on the cluster, else every partition
    named answers CLUSTER_AUTHORIZATION_FAILED (AlterReplicaLogDirsRequest.getErrorResponse)."""
    if not a.ok(O.ALTER, R.CLUSTER, CLUSTER_NAME):
        return {"throttle_time_ms": 0, "results": [
            {"topic_name": t.name, "partitions": [{"partition_index": p, "error_code": C_DENIED} for p in t.partitions]}
            for d in body.dirs for t in d.topics]}
    return await handler(broker, ctx, body)


def _move(broker, topic: str, partition: int, path: str) -> int:
    """ReplicaManager.alterReplicaLogDirs for one partition, in its order of checks."""
    # UnifiedLog.logFutureDirName: "<topic>-<partition>.<32 hex>-future" must fit a file name
    if len(f"{topic}-{partition}") + 1 + 32 + len("-future") > 255:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    # LogManager.isLogDirOnline: the path must be a log dir's absolute path (else LOG_DIR_NOT_FOUND)
    if path not in {os.path.abspath(broker.logs.data_dir), str(broker.logs.data_dir.resolve())}:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if broker.logs.get_log(topic, partition) is None:       # getPartitionOrException
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return 0            # already there: no future replica to create


@handles(P.alter_replica_log_dirs, authorize=_alter_authorize)
async def alter_replica_log_dirs(broker, ctx, body) -> dict:
    # AlterReplicaLogDirsRequest.partitionDirs: one destination per partition, the last named
    wanted: dict[tuple[str, int], str] = {}
    for d in body.dirs:
        for t in d.topics:
            for p in t.partitions:
                wanted[(t.name, p)] = d.path
    results: dict[str, list[dict]] = {}
    for (topic, partition), path in wanted.items():
        results.setdefault(topic, []).append({"partition_index": partition,
                                              "error_code": _move(broker, topic, partition, path)})
    return {"throttle_time_ms": 0,
            "results": [{"topic_name": t, "partitions": parts} for t, parts in results.items()]}
