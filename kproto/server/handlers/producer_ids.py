"""InitProducerId: ids for idempotent producers; transactional ids go to the
transaction coordinator (epoch bumps, fencing, KIP-360)."""

from __future__ import annotations

import asyncio

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import C_DENIED, TXN_DENIED, Access
from kproto.server.handlers import handles
from kproto.server.txn_coordinator import InitProducerIdRequest, fenced_error


#: how long InitProducerId waits for a block of ids on a node of a cluster
BLOCK_WAIT_S = 5.0


async def _init_producer_id(a: Access, broker, ctx, body, handler):
    """KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id; without one,
    IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    txn = body.transactional_id
    if txn is not None:
        ok, err = a.ok(O.WRITE, R.TRANSACTIONAL_ID, txn), TXN_DENIED
    else:
        ok = (a.ok(O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME, False) or a.ok_any(O.WRITE, R.TOPIC)
              or a.ok(O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME))      # False, logged once
        err = C_DENIED
    if not ok:
        return {"error_code": err, "producer_id": -1, "producer_epoch": -1}
    return await handler(broker, ctx, body)


@handles(P.init_producer_id, authorize=_init_producer_id)
async def init_producer_id(broker, ctx, body) -> dict:
    if broker.cluster is not None:
        # a node of a cluster hands out ids of its block from the controller: without one (the
        # controller unreachable), COORDINATOR_LOAD_IN_PROGRESS, which clients retry (as
        # RPCProducerIdManager.generateProducerId)
        try:
            await asyncio.wait_for(broker.cluster.producer_ids.ready(), BLOCK_WAIT_S)
        except asyncio.TimeoutError:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    "producer_id": -1, "producer_epoch": -1}
    if body.transactional_id is not None:
        r = await broker.transactions.ask(InitProducerIdRequest(
            transactional_id=body.transactional_id, transaction_timeout_ms=body.transaction_timeout_ms,
            producer_id=body.producer_id, producer_epoch=body.producer_epoch))
        return {"throttle_time_ms": 0,
                "error_code": fenced_error("InitProducerId", ctx.request_api_version, r.error_code),
                "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
    if body.producer_id >= 0:      # KIP-360: a known producer bumps its epoch
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": body.producer_id,
                "producer_epoch": (body.producer_epoch + 1) % 32767}
    try:
        pid = broker.producer_ids.allocate()
    except KafkaError as e:     # a node of a cluster between blocks: COORDINATOR_LOAD_IN_PROGRESS, retriable
        return {"throttle_time_ms": 0, "error_code": e.error_code, "producer_id": -1, "producer_epoch": -1}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": 0}
