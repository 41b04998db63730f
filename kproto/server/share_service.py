"""Share groups on the broker: ``ShareCoordinator`` (sans-I/O, kproto.server.share)
driven by the shared coordinator shell over ``__share_group_state``. The share
APIs (``kproto.server.handlers.share``) call it; a ShareFetch that found
nothing waits for an append or for records to become available again
(``available``: a lock ran out, a release, a member left).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid

from kproto.common import SHARE_GROUP_STATE_TOPIC_NAME
from kproto.log import LogManager
from kproto.server.runtime.shell import CoordinatorShell
from kproto.server.share.config import share_config
from kproto.server.share.coordinator import ShareCoordinator
from kproto.server.share.group_config import GroupConfigs

log = logging.getLogger("kproto.server.share")


class LogCatalog:
    """The coordinator's view of the broker's topics (share.coordinator.Catalog)."""

    def __init__(self, logs: LogManager) -> None:
        self.logs = logs
        self.group_configs = GroupConfigs(logs.data_dir / "group-configs.json")

    def group_config(self, group_id: str) -> dict[str, str]:
        return self.group_configs.overrides(group_id)

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.logs.topic_id(topic) if self.logs.has_topic(topic) else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.logs.topic_name(topic_id)

    def partition_count(self, topic: str) -> int:
        return self.logs.partition_count(topic) if self.logs.has_topic(topic) else 0

    def log_offsets(self, topic: str, partition: int) -> tuple[int, int]:
        plog = self.logs.get_log(topic, partition)
        return (0, 0) if plog is None else (plog.log_start_offset, plog.log_end_offset)


class ShareService(CoordinatorShell):
    name = "share coordinator"
    loaded_noun = "share partition state(s)"

    def __init__(self, logs: LogManager, values: dict, *, append_lock: threading.Lock | None = None) -> None:
        config = share_config(values)
        self.catalog = LogCatalog(logs)
        self.group_configs = self.catalog.group_configs
        self.available = asyncio.Event()
        self.sessions: dict = {}        # (group id, member id) -> handlers.share.ShareSession
        super().__init__(ShareCoordinator(config, self.catalog), logs, SHARE_GROUP_STATE_TOPIC_NAME,
                         config.state_topic_num_partitions,
                         {"cleanup.policy": "delete", "compression.type": "producer",
                          "segment.bytes": values["share.coordinator.state.topic.segment.bytes"],
                          "retention.ms": -1}, append_lock=append_lock, log=log)

    def drive_more(self) -> bool:
        if self.coordinator.take_released():
            self.available.set()
        return False
