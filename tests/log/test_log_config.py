"""LogConfig: Kafka's topic config names, defaults, typed parsing, validation messages."""

from __future__ import annotations

import pytest

from kproto.errors import ErrorCode, InvalidConfigError
from kproto.topic_config import LONG_MAX, LogConfig


def test_defaults_are_kafkas():
    c = LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.segment_index_bytes, c.index_interval_bytes) == (
        1073741824, 604800000, 10485760, 4096)
    assert (c.flush_messages, c.flush_ms) == (LONG_MAX, LONG_MAX)
    assert (c.retention_ms, c.retention_bytes, c.cleanup_policy, c.delete_retention_ms) == (
        604800000, -1, ("delete",), 86400000)
    assert (c.max_message_bytes, c.message_timestamp_type, c.min_compaction_lag_ms) == (
        1048588, "CreateTime", 0)
    assert c.delete and not c.compact and not c.log_append_time
    props = c.to_props()
    assert props["cleanup.policy"] == "delete" and props["preallocate"] == "false"
    assert props["flush.messages"] == "9223372036854775807"
    assert len(LogConfig.names()) == 36 and "message.timestamp.type" in LogConfig.names()


def test_typed_parsing():
    c = LogConfig.from_props({"segment.bytes": " 2048 ", "cleanup.policy": "compact, delete",
                              "preallocate": "TRUE", "min.cleanable.dirty.ratio": "0.25",
                              "retention.ms": -1, "message.timestamp.type": "LogAppendTime"})
    assert (c.segment_bytes, c.cleanup_policy, c.preallocate, c.min_cleanable_dirty_ratio) == (
        2048, ("compact", "delete"), True, 0.25)
    assert c.retention_ms == -1 and c.log_append_time and c.compact and c.delete
    base = LogConfig.from_props({"segment.bytes": "4096"})
    assert LogConfig.from_props({"retention.ms": "5"}, base=base).segment_bytes == 4096
    assert LogConfig.validate({"flush.ms": "10"}) == {"flush.ms": 10}


@pytest.mark.parametrize("props, message", [
    ({"segment.byte": "1"}, "Unknown topic config name: segment.byte"),
    ({"segment.bytes": "abc"}, "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
    ({"segment.bytes": "2147483648"},
     "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"),
    ({"segment.bytes": "13"}, "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
    ({"retention.ms": "-2"}, "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ({"flush.ms": "1.5"}, "Invalid value 1.5 for configuration flush.ms: Not a number of type LONG"),
    ({"cleanup.policy": "compact,remove"},
     "Invalid value remove for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must "
                                     "be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"preallocate": "yes"}, "Invalid value yes for configuration preallocate: Expected value to be either "
                             "true or false"),
    ({"min.cleanable.dirty.ratio": "1.5"},
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: Value must "
                                      "be between 1 and 9, or -1 (the default level)"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
])
def test_invalid_configs(props, message):
    with pytest.raises(InvalidConfigError) as e:
        LogConfig.from_props(props)
    assert str(e.value) == message
    assert e.value.error_code == ErrorCode.INVALID_CONFIG
