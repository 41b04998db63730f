"""ElectLeaders: preferred or unclean leader elections, as a one-node Kafka 4.4 answers them
(KafkaApis.handleElectLeaders, the controller's ReplicationControlManager.electLeaders).

Every partition's only replica is its leader, so no election is ever needed: each named
partition answers ELECTION_NOT_NEEDED, one the topic lacks or of a topic the broker lacks
UNKNOWN_TOPIC_OR_PARTITION, whatever the election type (measured on Kafka 4.4's broker). A
request for all partitions (``topic_partitions`` null) lists every topic with no partitions:
those needing no election are left out. ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
for the request and each named partition. v0-2, as Kafka 4.4.

In a cluster the request goes to the controller (ReplicationControlManager.electLeaders,
kproto/server/cluster/operations.py), which elects as election.py's rules say.
"""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, Access
from kproto.server.handlers import handles

NOT_NEEDED = "Leader election not needed for topic partition."


def _response(error: int, results: dict[str, list[dict]]) -> dict:
    return {"throttle_time_ms": 0, "error_code": error, "replica_election_results": [
        {"topic": t, "partition_result": ps} for t, ps in results.items()]}


def _named(body) -> dict[str, list[int]]:
    """The request's partitions by topic, in request order (a topic named twice: once)."""
    out: dict[str, list[int]] = {}
    for t in body.topic_partitions:
        out.setdefault(t.topic, []).extend(p for p in t.partitions if p not in out.get(t.topic, ()))
    return out


async def _authorize(a: Access, broker, ctx, body, handler) -> dict:
    if a.ok(O.ALTER, R.CLUSTER, CLUSTER_NAME):
        return await handler(broker, ctx, body)
    named = {} if body.topic_partitions is None else _named(body)
    return _response(C_DENIED, {t: [{"partition_id": p, "error_code": C_DENIED, "error_message": None}
                                    for p in ps] for t, ps in named.items()})


@handles(P.elect_leaders, authorize=_authorize)
async def elect_leaders(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        try:
            return await broker.cluster.forward(P.elect_leaders.API.key, ctx.request_api_version, body)
        except ConnectionError:     # the controller unreachable: nothing elected
            return _response(ErrorCode.REQUEST_TIMED_OUT, {})
    logs = broker.logs
    if body.topic_partitions is None:
        return _response(0, {t: [] for t in sorted(logs.topics())})
    results: dict[str, list[dict]] = {}
    for topic, partitions in _named(body).items():
        known = logs.has_topic(topic)
        results[topic] = [
            {"partition_id": p, "error_code": ErrorCode.ELECTION_NOT_NEEDED, "error_message": NOT_NEEDED}
            if known and logs.get_log(topic, p) is not None else
            {"partition_id": p, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             "error_message": f"No such partition as {topic}-{p}" if known else f"No such topic as {topic}"}
            for p in partitions]
    return _response(0, results)
