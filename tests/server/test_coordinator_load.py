"""A coordinator's state partition loads off the event loop when leadership arrives
(kproto/server/runtime/shell.py ``elected``, Kafka's CoordinatorRuntime load
operation): its requests answer COORDINATOR_LOAD_IN_PROGRESS until the load ends,
records appended meanwhile are loaded too, and a resignation before the end voids
the load. A group coordinator over a real ``__consumer_offsets`` log."""

from __future__ import annotations

import asyncio

from kproto.errors import ErrorCode
from kproto.log import LogManager
from kproto.server.config import BrokerConfig
from kproto.server.coordinator import (
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetFetchRequest,
)
from kproto.server.group_service import GroupService
from kproto.server.runtime.state_topic import partition_for

PARTITIONS = 3
VALUES = BrokerConfig.from_props({"offsets.topic.num.partitions": str(PARTITIONS)}).values


def service(logs: LogManager, *, replicated: bool) -> GroupService:
    # any non-None replication makes the coordinator own no partition until elected
    return GroupService(logs, VALUES, node=(1, "127.0.0.1", 9092), replication=object() if replicated else None)


def commit(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, topics=(OffsetCommitRequestTopic(
        name="t", partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=offset),)),))


def committed(r) -> int:
    return r.topics[0].partitions[0].committed_offset


def groups_on(partition: int, n: int) -> list[str]:
    return [g for g in (f"g{i}" for i in range(100)) if partition_for(g, PARTITIONS) == partition][:n]


def test_a_partition_loads_in_the_background_with_what_was_appended_meanwhile(tmp_path):
    async def run() -> None:
        logs = LogManager(tmp_path)
        first, later = groups_on(1, 2)
        writer = service(logs, replicated=False)      # owns every partition: writes the log
        await writer.start()
        writer.ensure_topic()
        assert (await writer.ask(commit(first, 42))).topics[0].partitions[0].error_code == ErrorCode.NONE

        shell = service(logs, replicated=True)
        await shell.start()
        shell.elected(1)
        # the load has not run yet: the group's requests wait for it
        r = await shell.ask(OffsetFetchRequest(group_id=first))
        assert r.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        # appended after the election (past the log end the background read stops at)
        assert (await writer.ask(commit(later, 7))).topics[0].partitions[0].error_code == ErrorCode.NONE
        await asyncio.gather(*shell._replicating)
        assert committed(await shell.ask(OffsetFetchRequest(group_id=first))) == 42
        assert committed(await shell.ask(OffsetFetchRequest(group_id=later))) == 7
        await shell.close()
        await writer.close()
        logs.close()

    asyncio.run(run())


def test_a_resignation_before_the_load_ends_voids_it(tmp_path):
    async def run() -> None:
        logs = LogManager(tmp_path)
        group = groups_on(2, 1)[0]
        writer = service(logs, replicated=False)
        await writer.start()
        writer.ensure_topic()
        await writer.ask(commit(group, 5))
        shell = service(logs, replicated=True)
        await shell.start()
        shell.elected(2)
        shell.resigned(2)
        await asyncio.gather(*shell._replicating)
        assert (await shell.ask(OffsetFetchRequest(group_id=group))).error_code == ErrorCode.NOT_COORDINATOR
        # elected again: that load counts
        shell.elected(2)
        await asyncio.gather(*shell._replicating)
        assert committed(await shell.ask(OffsetFetchRequest(group_id=group))) == 5
        await shell.close()
        await writer.close()
        logs.close()

    asyncio.run(run())
