"""``__share_group_state`` records (KIP-932, Kafka's share coordinator): key version
0 ShareSnapshot, 1 ShareUpdate, each value version 0 (CoordinatorRecordSerde over
group_records.SHARE_STATE_TYPES). Read by the share coordinator's replay and by
``dump-log --share-group-state-decoder``."""

from __future__ import annotations

from construct import Construct

from kproto.schemas.group_records import SHARE_STATE_TYPES
from kproto.schemas.message import Message, versioned

__all__ = ["SNAPSHOT", "UPDATE", "KEY_TYPES", "RecordKey", "SnapshotValue", "UpdateValue", "value_schema",
           "value_message"]

SNAPSHOT, UPDATE = 0, 1          # key versions: the record type

KEY_TYPES = {t: name for t, (name, _, _) in SHARE_STATE_TYPES.items()}
RecordKey = versioned(*((key, (t,)) for t, (_, key, _) in SHARE_STATE_TYPES.items()))
_VALUES = {t: versioned((value, None)) for t, (_, _, value) in SHARE_STATE_TYPES.items()}
SnapshotValue, UpdateValue = _VALUES[SNAPSHOT], _VALUES[UPDATE]


def value_message(key_version: int) -> Message | None:
    entry = SHARE_STATE_TYPES.get(key_version)
    return None if entry is None else entry[2]


def value_schema(key_version: int) -> Construct | None:
    return _VALUES.get(key_version)
