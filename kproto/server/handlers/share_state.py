"""The share-group state APIs (KIP-932): InitializeShareGroupState,
ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary, as Kafka 4.4's share coordinator answers them
(KafkaApis.handle*ShareGroupStateRequest -> ShareCoordinatorService ->
ShareCoordinatorShard).

In Kafka the partition leaders' persister calls these on the share coordinator;
on one node kproto's share partitions and its share coordinator are one object
(``broker.shares.coordinator``), so these are views and commands over the same
store its ShareFetch and ShareAcknowledge write (``ShareCoordinator.states``),
not a second copy. On a node of a cluster the partition leaders call them as
Kafka's do (ShareService.persist), and a key whose ``__share_group_state``
partition another node leads answers NOT_COORDINATOR. Each partition is one ``StateOp``; the answer waits for what
it wrote to reach ``__share_group_state``.

Authorization: CLUSTER_ACTION on the cluster (they are inter-broker APIs), else
every partition CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED
from kproto.server.handlers import handles
from kproto.server.share.coordinator import StateOp, StateRequest
from kproto.server.share.partition import StateBatch

# the fields each API's partition result carries beyond partition / error_code / error_message
_READ = ("state_epoch", "start_offset", "state_batches")
_SUMMARY = ("state_epoch", "leader_epoch", "start_offset", "delivery_complete_count")


# a failed partition's fields keep their schema defaults, as Kafka's error responses do
_DEFAULTS = {"state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "delivery_complete_count": -1,
             "state_batches": []}


def _partition_result(index: int, answer: dict, fields: tuple[str, ...]) -> dict:
    return {"partition": index, "error_code": answer["error_code"], "error_message": answer["error_message"],
            **{f: answer.get(f, _DEFAULTS[f]) for f in fields}}


def _each_partition(body, error: int, message: str | None, fields: tuple[str, ...]) -> dict:
    """Every partition of the request answering ``error`` (the ``getErrorResponse`` of each request)."""
    return {"results": [{"topic_id": t.topic_id, "partitions": [
        _partition_result(p.partition, {"error_code": error, "error_message": message}, fields)
        for p in t.partitions]} for t in body.topics]}


def _cluster_action(fields: tuple[str, ...]):
    async def check(a, broker, ctx, body, handler):
        if not a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME):
            return _each_partition(body, C_DENIED, C_DENIED.description, fields)
        return await handler(broker, ctx, body)
    return check


async def _serve(broker, body, kind: str, op_fields, fields: tuple[str, ...]) -> dict:
    """ShareCoordinatorService: no topics or no group id, an empty answer (it logs
    "Group id must be specified and non-empty"); else one op per partition."""
    if not body.topics or not body.group_id:
        return {"results": []}
    service = broker.shares
    service.ensure_topic()
    pairs = [(t.topic_id, p) for t in body.topics for p in t.partitions]
    answers = await service.ask(StateRequest(tuple(
        StateOp(kind, (body.group_id, topic_id, p.partition), **op_fields(p)) for topic_id, p in pairs)))
    by_topic: dict = {}
    for (topic_id, p), answer in zip(pairs, answers):
        by_topic.setdefault(topic_id, []).append(_partition_result(p.partition, answer, fields))
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()]}


@handles(P.initialize_share_group_state, authorize=_cluster_action(()))
async def initialize_share_group_state(broker, ctx, body) -> dict:
    return await _serve(broker, body, "initialize",
                        lambda p: {"state_epoch": p.state_epoch, "start_offset": p.start_offset}, ())


@handles(P.read_share_group_state, authorize=_cluster_action(_READ))
async def read_share_group_state(broker, ctx, body) -> dict:
    return await _serve(broker, body, "read", lambda p: {"leader_epoch": p.leader_epoch}, _READ)


@handles(P.write_share_group_state, authorize=_cluster_action(()))
async def write_share_group_state(broker, ctx, body) -> dict:
    return await _serve(broker, body, "write", lambda p: {
        "state_epoch": p.state_epoch, "leader_epoch": p.leader_epoch, "start_offset": p.start_offset,
        "delivery_complete_count": p.get("delivery_complete_count", -1),
        "batches": tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                         for b in p.state_batches)}, ())


@handles(P.delete_share_group_state, authorize=_cluster_action(()))
async def delete_share_group_state(broker, ctx, body) -> dict:
    return await _serve(broker, body, "delete", lambda p: {}, ())


@handles(P.read_share_group_state_summary, authorize=_cluster_action(_SUMMARY))
async def read_share_group_state_summary(broker, ctx, body) -> dict:
    return await _serve(broker, body, "summary", lambda p: {"leader_epoch": p.leader_epoch}, _SUMMARY)
