"""The exchange of a KIP-848-style heartbeat (ConsumerGroupHeartbeat, StreamsGroupHeartbeat),
one piece of code for both group types: the group's status checked, the request's step run
(validate, then leave or join/heartbeat: records and an answer, or a HeartbeatError), the
records appended, the answer sent once they are (GroupMetadataManager's heartbeat through the
CoordinatorRuntime's write)."""

from __future__ import annotations

from typing import Any, Callable

from kproto.errors import ErrorCode


class HeartbeatError(Exception):
    """A heartbeat refused with ``error`` (and Kafka's ``message``)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def heartbeat_exchange(ctx: Any, handle: Any, group_id: str, api: str, now_ms: int,
                       step: Callable[[], tuple[list, Any]],
                       error_response: Callable[[ErrorCode, str | None], Any]) -> None:
    """Answer ``handle``: ``step()`` -> (records, answer); the answer after the records are
    appended, an append's failure as the runtime maps it (NOT_COORDINATOR for a partition
    this node no longer leads, UNKNOWN_SERVER_ERROR otherwise)."""
    def fail(error: ErrorCode, message: str | None = None) -> None:
        ctx.reply(handle, error_response(error, message))

    error = ctx.validate_group_status(group_id or None, api)
    if error is not None and group_id:
        return fail(error)
    try:
        records, response = step()
    except HeartbeatError as e:
        return fail(e.error, e.message)
    if not records:
        return ctx.reply(handle, response)

    def appended(error: ErrorCode, t: int) -> None:
        if error is not ErrorCode.NONE:
            return fail(ErrorCode.NOT_COORDINATOR if error in (
                ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                else ErrorCode.UNKNOWN_SERVER_ERROR)
        ctx.reply(handle, response)

    ctx.append(ctx.partition_for(group_id), records, now_ms, appended)
