"""Producer ids of a node of a cluster, in blocks the controller hands out (Kafka's
RPCProducerIdManager on the broker, ProducerIdControlManager on the controller):
AllocateProducerIds (key 67) with the broker's id and epoch answers the next block
of ``BLOCK_SIZE`` ids, which the controller records as a ProducerIdsRecord, so no
two brokers (and no broker after a restart) ever hand out the same id. The next
block is asked for when 90% of the current one is used; with none left
``allocate`` refuses COORDINATOR_LOAD_IN_PROGRESS (retriable), as Kafka does, and
``ready`` waits for a block."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P

log = logging.getLogger("kproto.server.replication")

__all__ = ["BLOCK_SIZE", "ProducerIdBlocks"]

#: ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
BLOCK_SIZE = 1000
#: RPCProducerIdManager: the next block is fetched once this share of the current one is used
PREFETCH_AT = 0.9


class ProducerIdBlocks:
    """The broker's current and prefetched blocks; ``allocate`` as ProducerIdManager's."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager          # the ReplicaManager: its controller channel and broker epoch
        self.next_id = 0
        self.block_end = 0              # exclusive; no block yet
        self.prefetched: tuple[int, int] | None = None
        self._fetching: asyncio.Task | None = None

    def _available(self) -> bool:
        return self.next_id < self.block_end or self.prefetched is not None

    def allocate(self) -> int:
        if self.next_id >= self.block_end and self.prefetched is not None:
            (self.next_id, self.block_end), self.prefetched = self.prefetched, None
        if self.next_id >= self.block_end:
            self._fetch()
            raise KafkaError("Producer ID block is full. Waiting for next block",
                             error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        pid = self.next_id
        self.next_id += 1
        if self.prefetched is None and self.next_id >= self.block_end - BLOCK_SIZE * (1 - PREFETCH_AT):
            self._fetch()
        return pid

    async def ready(self) -> None:
        """Until an id can be allocated (the first block, or the next one)."""
        while not self._available():
            await asyncio.shield(self._fetch())

    def _fetch(self) -> asyncio.Task:
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.get_running_loop().create_task(self._ask())
        return self._fetching

    async def _ask(self) -> None:
        """AllocateProducerIds until the controller answers a block (retrying, as the
        broker's NodeToControllerChannelManager does, on errors and lost connections)."""
        m = self.manager
        while not m.closing:
            try:
                r = await m.controller.request(P.allocate_producer_ids.API.key, 0,
                                               {"broker_id": m.node_id, "broker_epoch": m.broker_epoch})
            except ConnectionError as e:
                log.info("AllocateProducerIds: %s", e)
            else:
                if r.error_code == ErrorCode.NONE:
                    block = (r.producer_id_start, r.producer_id_start + r.producer_id_len)
                    if self.next_id >= self.block_end:
                        self.next_id, self.block_end = block
                    else:
                        self.prefetched = block
                    log.info("producer id block [%d, %d)", *block)
                    return
                log.info("AllocateProducerIds: %s", ErrorCode(r.error_code).name)
            await asyncio.sleep(0.1)
