"""A failed append to ``__consumer_offsets`` as the group APIs answer it
(GroupMetadataManager's error translations)."""

from __future__ import annotations

from kproto.errors import ErrorCode

__all__ = ["commit_error", "store_group_error"]


def store_group_error(error: ErrorCode) -> ErrorCode:
    """A failed GroupMetadata append as the SyncGroup/JoinGroup error (GroupMetadataManager.storeGroup)."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error is ErrorCode.REQUEST_TIMED_OUT:
        return ErrorCode.REBALANCE_IN_PROGRESS
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


def commit_error(error: ErrorCode) -> ErrorCode:
    """A failed OffsetCommit append or TxnOffsetCommit verification as the partition's error
    (maybeConvertOffsetCommitError)."""
    if error is ErrorCode.NETWORK_EXCEPTION:     # retried by every client, without a coordinator lookup
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return error
