"""kproto.log: Kafka's on-disk log, byte-compatible.

    config      LogConfig: topic configs, Kafka names/defaults, typed validation
    index       OffsetIndex / TimeIndex (.index, .timeindex) and their pure lookups
    validator   sans-I/O validation and offset assignment of appended batches
    segment     FileRecords, LogSegment, FetchSlice (a sendfile-able file region)
    loader      opening a partition directory: cleanup, sanity checks, recovery
    log         UnifiedLog: append, read, offsets by time, roll, flush, retention
    cleaner     LogCleaner: compaction
    checkpoint  checkpoint files, meta.properties, the clean-shutdown marker
    manager     LogManager: the logs of a data directory
"""

from kproto.log.cleaner import LogCleaner
from kproto.log.config import LogConfig
from kproto.log.index import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset
from kproto.log.log import LogAppendInfo, LogOffsetMetadata, UnifiedLog
from kproto.log.manager import LogManager
from kproto.log.segment import FetchSlice, FileRecords, LogSegment
from kproto.log.validator import AppendOrigin

Log = UnifiedLog

__all__ = [
    "AppendOrigin", "FetchSlice", "FileRecords", "Log", "LogAppendInfo", "LogCleaner", "LogConfig",
    "LogManager", "LogOffsetMetadata", "LogSegment", "OffsetIndex", "OffsetPosition", "TimeIndex",
    "TimestampOffset", "UnifiedLog",
]
