"""All the logs of one data directory (Kafka's LogManager).

Layout of the data directory::

    meta.properties                    KRaft: node.id, directory.id, version=1, cluster.id
    recovery-point-offset-checkpoint   written on checkpoint() and clean close
    log-start-offset-checkpoint        only logs whose start is above their first segment;
                                       written on checkpoint(), close and DeleteRecords
    cleaner-offset-checkpoint          first dirty offset of each compacted log
    .kafka_cleanshutdown               {"version":0,"brokerEpoch":N}: present from a clean
                                       close until the next open
    topic-configs.json                 per-topic config overrides (kproto's stand-in for
                                       the KRaft metadata log):
                                       {"version": 0, "topics": {"<topic>": {"<name>": "<value>"}}}
    <topic>-<partition>/               one UnifiedLog each, with Kafka's
                                       partition.metadata ("version: 0", "topic_id: <id>")

Opening loads every partition directory (recovering all of them when the
clean-shutdown marker is missing), removes ``…-delete`` directories left by an
interrupted topic deletion and then removes the marker; ``close`` flushes and
closes every log, writes the checkpoints, then the marker (none if a log could
not close: its disk failed).
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from kproto.common import CLUSTER_METADATA_TOPIC_NAME, InvalidTopicError, now_ms, is_internal, unify_collision_chars, validate_topic_name
from kproto.errors import (
    ErrorCode, InvalidRequestError, KafkaError, OffsetOutOfRangeError, TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kproto.log import checkpoint as ckpt
from kproto.log.cleaner import LogCleaner
from kproto.log.log import Clock, KafkaStorageError, UnifiedLog, parse_topic_partition
from kproto.topic_config import LogConfig

log = logging.getLogger("kproto.log")

TOPIC_CONFIGS_FILE = "topic-configs.json"
PARTITION_METADATA_FILE = "partition.metadata"
# QuorumController.MAX_RECORDS_PER_USER_OP: one topic record, one per partition and
# one per config must fit, else POLICY_VIOLATION (EventHandlerExceptionInfo's text).
MAX_RECORDS_PER_USER_OP = 10000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."
# The leader epoch of every partition: this one node leads them all from their
# creation and no election ever bumps it. Metadata and ListOffsets report it;
# the broker's appends stamp it on every batch (UnifiedLog.appendAsLeader).
LEADER_EPOCH = 0
#: DeleteRecordsRequest.HIGH_WATERMARK: delete every record below the high watermark.
DELETE_TO_HIGH_WATERMARK = -1

TopicPartition = tuple[str, int]


class InconsistentClusterIdError(KafkaError):
    error_code = ErrorCode.INCONSISTENT_CLUSTER_ID


def format_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def parse_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _read_partition_metadata(dir: Path) -> uuid.UUID | None:
    try:
        lines = (dir / PARTITION_METADATA_FILE).read_text().splitlines()
    except FileNotFoundError:
        return None
    fields = dict(line.split(None, 1) for line in lines if len(line.split(None, 1)) == 2)
    try:
        return parse_topic_id(fields["topic_id:"].strip())
    except (KeyError, ValueError):
        raise ckpt.CorruptCheckpointError("no valid topic_id line",
                                          file=str(dir / PARTITION_METADATA_FILE)) from None


class LogManager:
    """Create, load, find, configure, checkpoint and delete the logs of a data dir."""

    def __init__(self, data_dir: Path, *, default_config: LogConfig | None = None, node_id: int = 1,
                 cluster_id: str | None = None, clock: Clock = now_ms,
                 cleaner: LogCleaner | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.default_config = default_config or LogConfig()
        self.clock = clock
        self.cleaner = cleaner or LogCleaner()
        self._lock = threading.RLock()
        self._logs: dict[TopicPartition, UnifiedLog] = {}
        self._partition_counts: dict[str, int] = {}     # kept with _logs: Metadata asks per topic
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._with_metadata: set[TopicPartition] = set()    # partition.metadata known to be on disk
        self._init_meta_properties(node_id, cluster_id)
        self._overrides = self._read_topic_configs()
        self.had_clean_shutdown = ckpt.had_clean_shutdown(self.data_dir)
        self._cleaner_offsets = ckpt.read_offset_checkpoint(self.data_dir / ckpt.CLEANER_OFFSET_CHECKPOINT)
        self._load_logs()
        ckpt.delete_clean_shutdown_file(self.data_dir)
        self._closed = False

    # -- startup -------------------------------------------------------------------------

    def _init_meta_properties(self, node_id: int, cluster_id: str | None) -> None:
        props = ckpt.read_meta_properties(self.data_dir)
        if props is None:
            props = ckpt.write_meta_properties(self.data_dir, cluster_id=cluster_id or ckpt.random_uuid(),
                                               node_id=node_id)
        elif cluster_id is not None and props.get("cluster.id") != cluster_id:
            raise InconsistentClusterIdError(
                f"Invalid cluster.id in: {self.data_dir / ckpt.META_PROPERTIES}. Expected {cluster_id}, "
                f"but read {props.get('cluster.id')}")
        elif props.get("node.id") != str(node_id):
            raise InconsistentClusterIdError(
                f"Stored node id {props.get('node.id')} doesn't match previous node id {node_id} in "
                f"{self.data_dir / ckpt.META_PROPERTIES}")
        self.meta_properties = props
        self.cluster_id = props["cluster.id"]
        self.node_id = int(props["node.id"])

    def _load_logs(self) -> None:
        recovery = ckpt.read_offset_checkpoint(self.data_dir / ckpt.RECOVERY_POINT_CHECKPOINT)
        starts = ckpt.read_offset_checkpoint(self.data_dir / ckpt.LOG_START_OFFSET_CHECKPOINT)
        for d in sorted(p for p in self.data_dir.iterdir() if p.is_dir()):
            if d.name.endswith("-delete"):
                shutil.rmtree(d, ignore_errors=True)      # a deletion a crash interrupted
                continue
            if d.name.endswith(("-future", "-stray")):
                continue
            tp = parse_topic_partition(d.name)
            if tp[0] == CLUSTER_METADATA_TOPIC_NAME:
                continue      # KRaft's metadata log in a dir Kafka wrote: LogManager.loadLogs skips it too
            topic_id = _read_partition_metadata(d)
            if topic_id is not None:
                self._topic_ids.setdefault(tp[0], topic_id)
            self._logs[tp] = UnifiedLog.open(
                d, self.topic_config(tp[0]), recovery_point=recovery.get(tp, 0),
                log_start_offset=starts.get(tp, 0), had_clean_shutdown=self.had_clean_shutdown,
                clock=self.clock)
            self._added(tp[0])

    # -- topic configs ---------------------------------------------------------------------

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        path = self.data_dir / TOPIC_CONFIGS_FILE
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError as e:
            raise ckpt.CorruptCheckpointError(f"invalid JSON: {e.msg}", file=str(path), position=e.pos) from None
        return {t: dict(c) for t, c in doc.get("topics", {}).items()}

    def _write_topic_configs(self) -> None:
        doc = {"version": 0, "topics": self._overrides}
        ckpt.write_atomically(self.data_dir / TOPIC_CONFIGS_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def topic_overrides(self, topic: str) -> dict[str, str]:
        return dict(self._overrides.get(topic, {}))

    def topic_config(self, topic: str) -> LogConfig:
        return LogConfig.from_props(self._overrides.get(topic, {}), base=self.default_config)

    def set_topic_config(self, topic: str, overrides: Mapping[str, Any]) -> LogConfig:
        """Replace ``topic``'s overrides (validated first) and apply them to its logs."""
        config = LogConfig.from_props(overrides, base=self.default_config)
        with self._lock:
            self._overrides[topic] = {k: _as_string(v) for k, v in overrides.items()}
            if not self._overrides[topic]:
                del self._overrides[topic]
            self._write_topic_configs()
            for (t, _), log in self._logs.items():
                if t == topic:
                    log.update_config(config)
        return config

    def set_default_config(self, config: LogConfig) -> None:
        """New broker-level topic defaults (a dynamic broker config changed): every
        log takes them where its topic has no override (DynamicLogConfig.reconfigure)."""
        with self._lock:
            self.default_config = config
            for (topic, _), log in self._logs.items():
                log.update_config(self.topic_config(topic))

    # -- logs ------------------------------------------------------------------------------

    def get_log(self, topic: str, partition: int) -> UnifiedLog | None:
        return self._logs.get((topic, partition))

    def logs(self) -> dict[TopicPartition, UnifiedLog]:
        return dict(self._logs)

    def topics(self) -> set[str]:
        return set(self._partition_counts)

    def has_topic(self, topic: str) -> bool:
        return topic in self._partition_counts

    def partition_count(self, topic: str) -> int:
        return self._partition_counts.get(topic, 0)

    def _added(self, topic: str) -> None:
        self._partition_counts[topic] = self._partition_counts.get(topic, 0) + 1

    def _removed(self, topic: str) -> None:
        left = self._partition_counts.pop(topic, 0) - 1
        if left > 0:
            self._partition_counts[topic] = left

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id (Kafka's TopicId), kept in each partition's partition.metadata."""
        with self._lock:
            return self._topic_ids.setdefault(topic, uuid.uuid4())

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The existing topic whose id is ``topic_id`` (Kafka's MetadataCache.getTopicName), else None."""
        with self._lock:
            return next((t for t, i in self._topic_ids.items() if i == topic_id and t in self._partition_counts),
                        None)

    def adopt_topic(self, topic: str, topic_id: uuid.UUID, overrides: Mapping[str, Any]) -> None:
        """A topic the cluster's controller created (a TopicRecord): its id and configs
        become this node's before any of its replicas' logs is created here."""
        with self._lock:
            self._topic_ids[topic] = topic_id
            self.set_topic_config(topic, overrides)

    def get_or_create_log(self, topic: str, partition: int) -> UnifiedLog:
        with self._lock:
            log = self._logs.get((topic, partition))
            if log is None:         # a new topic's names were checked by create_topic
                log = UnifiedLog.open(self.data_dir / f"{topic}-{partition}", self.topic_config(topic),
                                      clock=self.clock)
                self._logs[(topic, partition)] = log
                self._added(topic)
            if (topic, partition) not in self._with_metadata:   # checked once: coordinators append per request
                if not (log.dir / PARTITION_METADATA_FILE).exists():
                    ckpt.write_atomically(log.dir / PARTITION_METADATA_FILE,
                                          f"version: 0\ntopic_id: {format_topic_id(self.topic_id(topic))}")   # no newline, as Kafka
                self._with_metadata.add((topic, partition))
            return log

    def create_topic(self, topic: str, partitions: int, overrides: Mapping[str, Any] | None = None, *,
                     internal: bool = False, validate_only: bool = False,
                     check_placement: Callable[[], None] | None = None) -> list[UnifiedLog]:
        """Every check a new topic passes, in the KRaft controller's order and
        words (ReplicationControlManager.createTopics): its name (InvalidTopicError),
        not internal unless the broker itself creates it (``internal``), no
        '.'/'_' collision, not existing, its configs (InvalidConfigError), a
        positive partition count; then the caller's ``check_placement``
        (replicas); then the overrides persisted and ``partitions`` empty logs
        created, unless ``validate_only``."""
        validate_topic_name(topic)
        if is_internal(topic) and not internal:
            # Kafka's text for __cluster_metadata (ControllerApis.createTopics): the
            # coordinators size their topics from broker config, never from a client.
            raise InvalidRequestError(f"Creation of internal topic {topic} is prohibited.")
        with self._lock:
            if self.has_topic(topic):
                raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.")
            unified = unify_collision_chars(topic)
            clash = next((t for t in sorted(self._partition_counts) if unify_collision_chars(t) == unified), None)
            if clash is not None:
                raise InvalidTopicError(f"Topic '{topic}' collides with existing topic: {clash}")
            LogConfig.from_props(overrides or {}, base=self.default_config)
            if partitions < 1:
                raise KafkaError("Number of partitions was set to an invalid non-positive value.",
                                 error_code=ErrorCode.INVALID_PARTITIONS)
            if 1 + partitions + len(overrides or {}) > MAX_RECORDS_PER_USER_OP:
                raise KafkaError(EXCESSIVE_BATCH, error_code=ErrorCode.POLICY_VIOLATION)
            if check_placement is not None:
                check_placement()
            if validate_only:
                return []
            self.set_topic_config(topic, overrides or {})
            try:
                return [self.get_or_create_log(topic, p) for p in range(partitions)]
            except OSError as e:     # out of file descriptors or space: this topic fails, the broker serves on
                raise KafkaStorageError(f"Error while creating topic {topic} in dir {self.data_dir}: {e}") from e

    def check_not_internal(self, topic: str, action: str) -> None:
        """Deleting an internal topic or changing its partition count breaks its
        coordinator: refused with TopicCommand's words (Kafka 2.8, which checked
        client side; kproto checks where every client passes)."""
        if not is_internal(topic):
            return
        if action == "delete":
            raise InvalidRequestError(f"Topic {topic} is a kafka internal topic and is not allowed to be "
                                      "marked for deletion.")
        raise InvalidRequestError(f"The number of partitions for the internal topic {topic} cannot be changed.")

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename the directory ``<topic>-<p>.<uuid>-delete`` (so a crash mid-way
        finishes the deletion at the next open), then remove it."""
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            self._with_metadata.discard((topic, partition))
            if log is None:
                raise UnknownTopicOrPartitionError(f"This server does not host {topic}-{partition}.")
            self._removed(topic)
            self._cleaner_offsets.pop((topic, partition), None)
        log.close()
        doomed = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}-delete")
        log.dir.rename(doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def delete_topic(self, topic: str) -> None:
        with self._lock:
            parts = [p for t, p in self._logs if t == topic]
            if not parts:
                raise UnknownTopicOrPartitionError(f"This server does not host topic {topic}.")
            for p in parts:
                self.delete_log(topic, p)
            self._topic_ids.pop(topic, None)
            if self._overrides.pop(topic, None) is not None:
                self._write_topic_configs()

    # -- background work, driven by the caller's scheduler ----------------------------------

    def _each_log(self, action: str, work: Callable[[UnifiedLog], int]) -> tuple[int, int]:
        """``work`` on every log: (its results summed, how many failed). A log
        whose disk failed is logged and passed over, never stopping the others
        (as Kafka's LogManager.flushDirtyLogs)."""
        done = failed = 0
        for tp, plog in self.logs().items():
            try:
                done += work(plog)
            except KafkaStorageError as e:
                log.error("%s %s-%d failed: %s", action, *tp, e)
                failed += 1
        return done, failed

    def flush_dirty_logs(self, now: int | None = None) -> int:
        """Flush every log whose flush.ms has passed; returns how many flushed."""
        return self._each_log("Flushing", lambda plog: plog.flush_if_due(now))[0]

    def cleanup_logs(self, now: int | None = None) -> int:
        """Retention across all logs; returns segments deleted."""
        return self._each_log("Retention of", lambda plog: plog.delete_old_segments(now))[0]

    def clean_logs(self, now: int | None = None, *, force: bool = False) -> int:
        """Compact each compacted log whose dirty ratio reaches min.cleanable.dirty.ratio
        (every one with ``force``); returns logs cleaned."""
        now = self.clock() if now is None else now
        cleaned = 0
        for tp, log in self.logs().items():
            if not log.config.compact:
                continue
            first_dirty = self._cleaner_offsets.get(tp, 0)
            if not force and self.cleaner.dirty_ratio(log, first_dirty, now) < log.config.min_cleanable_dirty_ratio:
                continue
            result = self.cleaner.clean(log, first_dirty_offset=first_dirty, now=now)
            self._cleaner_offsets[tp] = result.end_offset
            cleaned += 1
        ckpt.write_offset_checkpoint(self.data_dir / ckpt.CLEANER_OFFSET_CHECKPOINT, self._cleaner_offsets)
        return cleaned

    def checkpoint(self) -> None:
        """Write the recovery point and log start offset checkpoints."""
        with self._lock:
            ckpt.write_offset_checkpoint(self.data_dir / ckpt.RECOVERY_POINT_CHECKPOINT,
                                         {tp: log.recovery_point for tp, log in sorted(self.logs().items())})
            self.checkpoint_log_start_offsets()

    def checkpoint_log_start_offsets(self) -> None:
        """LogManager.checkpointLogStartOffsets: the logs whose start is above their first segment."""
        with self._lock:     # one writer of the file's .tmp at a time
            ckpt.write_offset_checkpoint(
                self.data_dir / ckpt.LOG_START_OFFSET_CHECKPOINT,
                {tp: log.log_start_offset for tp, log in sorted(self.logs().items())
                 if log.log_start_offset > log.segments[0].base_offset})

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on one partition: move its log start offset to ``offset``
        (-1: the high watermark), drop the segments wholly below it and persist
        it; -> the low watermark (the log start offset). Kafka's checks, in
        ReplicaManager.deleteRecordsOnLocalLog and Partition.deleteRecordsOnLeader
        order: internal topic, unknown partition, cleanup.policy without delete,
        an offset below 0 or above the high watermark.

        Kafka leaves the segments to the next retention pass and the checkpoint
        to the next periodic write (a minute); here both happen at once, so the
        space is freed when the answer says so and a crash cannot bring the
        records back."""
        if is_internal(topic):
            raise InvalidTopicError(f"Cannot delete records of internal topic {topic}")
        log = self.get_log(topic, partition)
        if log is None:
            raise UnknownTopicOrPartitionError(f"This server does not host {topic}-{partition}.")
        if not log.config.delete:
            raise KafkaError(f"Records of partition {topic}-{partition} can not be deleted due to the configured "
                             "policy", error_code=ErrorCode.POLICY_VIOLATION)
        wanted = log.high_watermark if offset == DELETE_TO_HIGH_WATERMARK else offset
        if wanted < 0:
            raise OffsetOutOfRangeError(f"The offset {wanted} for partition {topic}-{partition} is not valid")
        if log.maybe_increment_log_start_offset(wanted):
            log.delete_log_start_offset_breached_segments()
            log.delete_pending_segments()        # those whose file.delete.delay.ms has passed
            self.checkpoint_log_start_offsets()
        return log.log_start_offset

    def close(self, broker_epoch: int = -1) -> None:
        """Clean shutdown: close every log, checkpoint, then write the marker.
        A log that cannot close (its disk failed) keeps its last flushed
        recovery point and leaves no marker, so the next start recovers it."""
        with self._lock:
            if self._closed:
                return
            failed = self._each_log("Closing", lambda plog: plog.close() or 0)[1]
            self.checkpoint()
            ckpt.write_offset_checkpoint(self.data_dir / ckpt.CLEANER_OFFSET_CHECKPOINT, self._cleaner_offsets)
            if not failed:
                ckpt.write_clean_shutdown_file(self.data_dir, broker_epoch)
            self._closed = True


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)
