"""kproto's one error hierarchy.

Two layers, as Kafka has them:

* local errors (``KprotoError`` and below) say what went wrong while reading
  bytes, files or flags, and where: ``file @ byte N: field.path: reason``;
* wire errors (``KafkaError`` and below) carry an ``ErrorCode``, the number a
  broker puts on the wire. A bare exception never crosses the wire: the server
  turns everything it raises into one of these codes.
"""

from __future__ import annotations

import re
from enum import IntEnum


class ErrorCode(IntEnum):
    """Kafka's error codes (org.apache.kafka.common.protocol.Errors).

    ``retriable`` and ``description`` are attached below, from Kafka's table.
    """

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        return self in _RETRIABLE

    @property
    def description(self) -> str:
        return _DESCRIPTIONS.get(self, self.name.replace("_", " ").capitalize() + ".")


# Kafka marks these exceptions RetriableException (Errors.java).
_RETRIABLE = frozenset({
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.NOT_CONTROLLER, ErrorCode.CONCURRENT_TRANSACTIONS,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
    ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.LISTENER_NOT_FOUND,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.OFFSET_NOT_AVAILABLE, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ErrorCode.UNSTABLE_OFFSET_COMMIT,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.INCONSISTENT_TOPIC_ID, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE, ErrorCode.UNKNOWN_CONTROLLER_ID,
    ErrorCode.REBALANCE_IN_PROGRESS,
})

_DESCRIPTIONS = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.OFFSET_OUT_OF_RANGE: "The requested offset is not within the range of offsets maintained by the server.",
    ErrorCode.CORRUPT_MESSAGE: "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.MESSAGE_TOO_LARGE: "The request included a message larger than the max message size the server will accept.",
    ErrorCode.TOPIC_ALREADY_EXISTS: "Topic already exists.",
    ErrorCode.INVALID_PARTITIONS: "Number of partitions is below 1.",
    ErrorCode.INVALID_REPLICATION_FACTOR: "Replication factor is below 1 or larger than the number of available brokers.",
    ErrorCode.INVALID_CONFIG: "Configuration is invalid.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
    ErrorCode.UNSUPPORTED_VERSION: "The version of API is not supported.",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "The broker received an out of order sequence number.",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "The broker received a duplicate sequence number.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.ILLEGAL_GENERATION: "Specified group generation id is not valid.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator is not aware of this member.",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing, so a rejoin is needed.",
    ErrorCode.MEMBER_ID_REQUIRED: "The group member needs to have a valid member id before actually entering a consumer group.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.INVALID_GROUP_ID: "The group id is invalid.",
    ErrorCode.FENCED_LEADER_EPOCH: "The leader epoch in the request is older than the epoch on the broker.",
    ErrorCode.FENCED_STATE_EPOCH: "The coordinator rejected the request because the state epoch did not match.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.INVALID_RECORD: "This record has failed the validation on broker and hence will be rejected.",
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: "The requesting client does not support the compression type of given partition.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    ErrorCode.POLICY_VIOLATION: "Request parameters do not satisfy the configured policy.",
    ErrorCode.KAFKA_STORAGE_ERROR: "Disk error when trying to access log file on the disk.",
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: "The throttling quota has been exceeded.",
}

#: The Java exception Kafka's clients raise for an error code, where the
#: class name is not the code's name in CamelCase + "Exception".
_JAVA_EXCEPTIONS = {
    "NON_EMPTY_GROUP": "GroupNotEmptyException", "GROUP_AUTHORIZATION_FAILED": "GroupAuthorizationException",
    "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException", "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "NOT_LEADER_OR_FOLLOWER": "NotLeaderOrFollowerException", "INVALID_TOPIC_EXCEPTION": "InvalidTopicException",
    "INVALID_CONFIG": "InvalidConfigurationException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
}


def java_exception_class(code: int) -> str:
    """The simple name of the exception class Kafka's clients raise for ``code``."""
    error = ErrorCode(code)
    return _JAVA_EXCEPTIONS.get(error.name) or (
        "".join(w.capitalize() for w in re.sub(r"_(EXCEPTION|ERROR)$", "", error.name).split("_")) + "Exception")


def java_exception(code: int, message: str | None = None) -> str:
    """``Throwable.toString()`` of the exception Kafka's Admin raises for ``code``
    (``Errors.exception()``: the default message unless one is given)."""
    return f"org.apache.kafka.common.errors.{java_exception_class(code)}: {message or ErrorCode(code).description}"


# --- local errors ----------------------------------------------------------

class KprotoError(Exception):
    """Root of every error kproto raises on purpose."""


class DecodeError(KprotoError):
    """Bytes that do not decode. Carries where: file, byte position, field path.

    ``str()`` gives the one line users see:
    ``00000000000000000000.log @ byte 4711: record_batch.crc: crc mismatch``.
    """

    def __init__(self, reason: str, *, position: int | None = None,
                 path: str | None = None, file: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position
        self.path = path
        self.file = file

    def at(self, *, position: int | None = None, file: str | None = None,
           base: int = 0) -> "DecodeError":
        """Return this error relocated: ``base`` added to the position, ``file`` set."""
        if position is not None:
            self.position = position
        elif self.position is not None:
            self.position += base
        elif base:
            self.position = base
        if file is not None:
            self.file = file
        return self

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.position is not None:
            where.append(f"@ byte {self.position}")
        head = " ".join(where)
        body = f"{self.path}: {self.reason}" if self.path else self.reason
        return f"{head}: {body}" if head else body


class CorruptRecordError(DecodeError):
    """A batch or message that is present in full but invalid (CRC, sizes, fields)."""


class IncompleteBatchError(DecodeError):
    """A batch cut short by the end of the buffer: not corruption, like Kafka's
    partial trailing batch in a fetch response."""


class MalformedMessageError(DecodeError):
    """A request/response frame or an internal-topic record whose bytes do not
    fit the schema of its version: cut short, a bad length or count, bytes left over."""


class DecompressionError(CorruptRecordError):
    """Compressed data that fails to decompress or exceeds the size cap."""


class UsageError(KprotoError):
    """A command line or configuration that cannot be acted on."""


# --- wire errors -----------------------------------------------------------

class KafkaError(KprotoError):
    """An error with a Kafka error code: what the broker answers, what the
    client receives."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str | None = None, *,
                 error_code: ErrorCode | int | None = None) -> None:
        if error_code is not None:
            self.error_code = ErrorCode(error_code)
        super().__init__(message or self.error_code.description)

    @property
    def retriable(self) -> bool:
        return self.error_code.retriable


class InvalidRequestError(KafkaError):
    error_code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(KafkaError):
    error_code = ErrorCode.UNSUPPORTED_VERSION


class CorruptMessageError(KafkaError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(KafkaError):
    error_code = ErrorCode.INVALID_RECORD


class OffsetOutOfRangeError(KafkaError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class UnknownTopicOrPartitionError(KafkaError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class MessageTooLargeError(KafkaError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidConfigError(KafkaError):
    error_code = ErrorCode.INVALID_CONFIG


class TopicAlreadyExistsError(KafkaError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


def error_for(code: int, message: str | None = None) -> KafkaError:
    """The exception for a code received on the wire."""
    for cls in KafkaError.__subclasses__():
        if cls.error_code == code:
            return cls(message)
    return KafkaError(message, error_code=code)
