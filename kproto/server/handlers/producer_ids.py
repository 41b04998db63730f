"""InitProducerId: ids for idempotent producers; transactional ids go to the
transaction coordinator (epoch bumps, fencing, KIP-360)."""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.server.txn_coordinator import InitProducerIdRequest, fenced_error


async def init_producer_id(broker, header, body) -> dict:
    if body.transactional_id is not None:
        r = await broker.transactions.ask(InitProducerIdRequest(
            transactional_id=body.transactional_id, transaction_timeout_ms=body.transaction_timeout_ms,
            producer_id=body.producer_id, producer_epoch=body.producer_epoch))
        return {"throttle_time_ms": 0,
                "error_code": fenced_error("InitProducerId", header.request_api_version, r.error_code),
                "producer_id": r.producer_id, "producer_epoch": r.producer_epoch}
    if body.producer_id >= 0:      # KIP-360: a known producer bumps its epoch
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": body.producer_id,
                "producer_epoch": (body.producer_epoch + 1) % 32767}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": broker.producer_ids.allocate(),
            "producer_epoch": 0}


# Versions: v0-4; v5 is transactions version 2 (KIP-890 part 2), v6 two-phase commit (KIP-939).
HANDLERS = {P.init_producer_id.API.key: (init_producer_id, 0, 4)}
