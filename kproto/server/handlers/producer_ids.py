"""InitProducerId: ids for idempotent producers (transactions are not supported)."""

from __future__ import annotations

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P


async def init_producer_id(broker, header, body) -> dict:
    if body.transactional_id is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    if body.producer_id >= 0:      # KIP-360: a known producer bumps its epoch
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": body.producer_id,
                "producer_epoch": (body.producer_epoch + 1) % 32767}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": broker.producer_ids.allocate(),
            "producer_epoch": 0}


# Versions: every one the registry speaks (v0-4; v5-6 are transactional, see its schema).
HANDLERS = {P.init_producer_id.API.key: (init_producer_id, 0, 4)}
