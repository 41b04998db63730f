"""kproto.log: Kafka's on-disk log, byte-compatible.

    file_pool   the bound on open segment files (LRU, pinned while a fetch sends)
    index       OffsetIndex / TimeIndex (.index, .timeindex) and their pure lookups
    validator   sans-I/O validation and offset assignment of appended batches
    segment     FileRecords, LogSegment, FetchSlice (a sendfile-able file region)
    loader      opening a partition directory: cleanup, sanity checks, recovery
    log         UnifiedLog: append, read, offsets by time, roll, flush, retention
    cleaner     LogCleaner: compaction
    checkpoint  checkpoint files, meta.properties, the clean-shutdown marker
    manager     LogManager: the logs of a data directory

Topic configs (LogConfig: Kafka names, defaults, typed validation) live in
kproto.topic_config, outside this package, so the tools read them without
importing the log; LogConfig is re-exported here as the log's own settings.
"""

from kproto.log.cleaner import LogCleaner
from kproto.topic_config import LogConfig
from kproto.log.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from kproto.log.log import LogAppendInfo, LogOffsetMetadata, UnifiedLog
from kproto.log.manager import LogManager
from kproto.log.segment import FetchSlice, FileRecords, LogSegment
from kproto.log.validator import AppendOrigin

__all__ = [
    "AppendOrigin", "FetchSlice", "FileRecords", "LogAppendInfo", "LogCleaner", "LogConfig",
    "LogManager", "LogOffsetMetadata", "LogSegment", "OffsetIndex", "OffsetPosition", "TimeIndex",
    "TimestampOffset", "UnifiedLog",
]
