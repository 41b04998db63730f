"""Kafka's ground-floor facts, stated once: the internal topics and topic-name
rules (``org.apache.kafka.common.internals.Topic``) and the wall clock
(``Time.milliseconds``). Everything else imports these; this module imports
only ``kproto.errors``.
"""

from __future__ import annotations

import re
import time

from kproto.errors import ErrorCode, KafkaError

__all__ = [
    "GROUP_METADATA_TOPIC_NAME", "TRANSACTION_STATE_TOPIC_NAME", "SHARE_GROUP_STATE_TOPIC_NAME",
    "CLUSTER_METADATA_TOPIC_NAME", "INTERNAL_TOPICS", "MAX_TOPIC_NAME_LENGTH", "InvalidTopicError",
    "is_internal", "topic_name_problem", "validate_topic_name", "unify_collision_chars", "now_ms",
]

# -- topics (Topic) ------------------------------------------------------------------

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
#: KRaft's metadata log (its directory is ``__cluster_metadata-0``); not a topic clients see.
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"

#: Topic.INTERNAL_TOPICS: written by the broker's coordinators only.
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME,
                             SHARE_GROUP_STATE_TOPIC_NAME})
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


class InvalidTopicError(KafkaError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


def is_internal(topic: str) -> bool:
    """Topic.isInternal."""
    return topic in INTERNAL_TOPICS


def topic_name_problem(topic: str) -> str | None:
    """Why ``topic`` is not a legal name, in Topic.detectInvalidTopic's words; None if it is."""
    if not topic:
        return "the empty string is not allowed"
    if topic in (".", ".."):
        return f"'{topic}' is not allowed"
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        return f"the length of '{topic}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    if not _LEGAL_TOPIC.fullmatch(topic):
        return f"'{topic}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


def validate_topic_name(topic: str) -> None:
    """Topic.validate."""
    problem = topic_name_problem(topic)
    if problem is not None:
        raise InvalidTopicError(f"Topic name is invalid: {problem}")


def unify_collision_chars(topic: str) -> str:
    """Topic.unifyCollisionChars: '.' and '_' clash in metric names."""
    return topic.replace(".", "_")


# -- the clock (Time) ----------------------------------------------------------------

def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (Time.SYSTEM.milliseconds): record
    timestamps, deadlines, retention."""
    return time.time_ns() // 1_000_000
