"""Producer ids for InitProducerId; the per-partition producer state lives with
the log (kproto.log.producer_state)."""

from __future__ import annotations


class ProducerIdManager:
    """Hands out producer ids for InitProducerId; the next id survives restarts
    through whatever the caller persists (``next_id``)."""

    def __init__(self, next_id: int = 1000) -> None:
        self.next_id = next_id

    def allocate(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid
