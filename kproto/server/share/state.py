"""A share partition's record states and the table of what each event does to them.

Kafka's ``RecordState`` (AVAILABLE 0, ACQUIRED 1, ACKNOWLEDGED 2, ARCHIVED 4;
``validateTransition``) and the rules SharePartition applies around it:

* a fetch acquires an AVAILABLE record for one member and counts a delivery;
* ACCEPT acknowledges it, REJECT archives it (never redelivered);
* RELEASE, and the acquisition lock running out, make it AVAILABLE again --
  unless it has been delivered ``group.share.delivery.count.limit`` times,
  then it is ARCHIVED (SharePartition.releaseAcquiredRecords / the timer task);
* RENEW (KIP-1222) keeps it ACQUIRED with a fresh lock;
* GAP (acknowledge type 0: offsets the client found no record at) archives it.

``TRANSITIONS`` is total over (state, event): an entry is the state after the
event, or None when Kafka refuses it (INVALID_RECORD_STATE for an
acknowledgement). ``transition`` applies the delivery-count rule on top.
"""

from __future__ import annotations

from enum import Enum, IntEnum

__all__ = ["RecordState", "AckType", "RecordEvent", "TRANSITIONS", "transition", "ack_event"]


class RecordState(IntEnum):
    """The value is Kafka's id, the ``delivery_state`` of persisted state batches."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AckType(IntEnum):
    """ShareFetch/ShareAcknowledge ``acknowledge_types`` (AcknowledgeType.java)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class RecordEvent(Enum):
    ACQUIRE = "a fetch acquires the record for a member"
    ACCEPT = "the member accepts it"
    RELEASE = "the member releases it"
    REJECT = "the member rejects it"
    RENEW = "the member renews its lock"
    GAP = "the member reports no record at the offset"
    LOCK_TIMEOUT = "the acquisition lock ran out"


def ack_event(ack: int) -> RecordEvent:
    """The event an acknowledge type is; a ValueError for a type Kafka does not define."""
    return {AckType.GAP: RecordEvent.GAP, AckType.ACCEPT: RecordEvent.ACCEPT,
            AckType.RELEASE: RecordEvent.RELEASE, AckType.REJECT: RecordEvent.REJECT,
            AckType.RENEW: RecordEvent.RENEW}[AckType(ack)]


def _table() -> dict[tuple[RecordState, RecordEvent], RecordState | None]:
    S, E = RecordState, RecordEvent
    table: dict[tuple[RecordState, RecordEvent], RecordState | None] = {}
    for state in S:
        for event in E:
            table[state, event] = None
    table[S.AVAILABLE, E.ACQUIRE] = S.ACQUIRED
    table[S.ACQUIRED, E.ACCEPT] = S.ACKNOWLEDGED
    table[S.ACQUIRED, E.RELEASE] = S.AVAILABLE
    table[S.ACQUIRED, E.REJECT] = S.ARCHIVED
    table[S.ACQUIRED, E.RENEW] = S.ACQUIRED
    table[S.ACQUIRED, E.GAP] = S.ARCHIVED
    table[S.ACQUIRED, E.LOCK_TIMEOUT] = S.AVAILABLE
    # RecordState.validateTransition: ACKNOWLEDGED and ARCHIVED are terminal
    return table


TRANSITIONS: dict[tuple[RecordState, RecordEvent], RecordState | None] = _table()

#: Events after which a record that reached the delivery limit is archived, not made available.
_RETURNS = frozenset({RecordEvent.RELEASE, RecordEvent.LOCK_TIMEOUT})


def transition(state: RecordState, event: RecordEvent, delivery_count: int,
               delivery_count_limit: int) -> RecordState | None:
    """The state after ``event``; None: refused. ``delivery_count`` counts the
    delivery in progress (it was raised on acquisition)."""
    target = TRANSITIONS[state, event]
    if target is RecordState.AVAILABLE and event in _RETURNS and delivery_count >= delivery_count_limit:
        return RecordState.ARCHIVED
    return target
