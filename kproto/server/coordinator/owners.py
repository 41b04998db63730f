"""The members of a KIP-848-style group (consumer groups, streams groups) and, for each
unit of work assigned (a partition, an active task), the epoch of the member that owns it,
kept together as ConsumerGroup and StreamsGroup.updateMember / removeMember do: one piece
of code for both group types, and their replay of the member records they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Hashable

from kproto import schemas
from kproto.errors import ErrorCode
from kproto.schemas import consumer_offsets as CO
from kproto.server.coordinator.consumer_state import MemberState


def replayed_record(groups: dict[str, Any], new_group: Callable[[str], Any], record_type: int, key: bytes,
                    value: bytes | None) -> tuple[Any, Any, Any]:
    """GroupMetadataManager.replay's start for a record of a KIP-848-style group: its key, its
    value (None: a tombstone) and its group, created for a value (None: a tombstone of a group
    not known)."""
    k = schemas.parse(CO.RecordKey, key).data
    v = None if value is None else schemas.parse(CO.value_schema(record_type), value).data
    group = groups.get(k.group_id)
    if group is None and v is not None:
        group = groups[k.group_id] = new_group(k.group_id)
    return k, v, group


class OwnerEpochs:
    """A mixin for a group dataclass with ``members`` (member id -> member with ``member_epoch``
    and ``instance_id``), ``static_members`` (instance id -> member id) and ``owner_epochs``
    ((unit, partition) -> the owner's epoch); the group says what a member owns (``_owned``:
    what it is assigned and what it has still to revoke)."""

    __slots__ = ()
    members: dict[str, Any]
    static_members: dict[str, str]
    owner_epochs: dict[tuple[Hashable, int], int]

    def _owned(self, m: Any) -> list[tuple[Hashable, int]]:
        raise NotImplementedError

    def put_member(self, m: Any) -> None:
        """The member, and the epochs of what it owns (its old entry's epochs dropped first)."""
        old = self.members.get(m.member_id)
        if old is not None:
            self._release(old)
        self.members[m.member_id] = m
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        for unit in self._owned(m):
            self.owner_epochs[unit] = m.member_epoch

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def offset_fetch_error(self, member_id: str | None, member_epoch: int,
                           stale: ErrorCode = ErrorCode.STALE_MEMBER_EPOCH) -> ErrorCode | None:
        """ConsumerGroup / StreamsGroup.validateOffsetFetch: none for a fetch outside the group
        (no member id, a negative epoch), else the member must exist at that epoch (``stale``:
        the error of another epoch)."""
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None if member_epoch == member.member_epoch else stale

    def replay_member_metadata(self, member_id: str, v: Any, new_member: Callable[[str], Any],
                               apply: Callable[[Any, Any], None]) -> None:
        """A member metadata record: the fields both group types keep, then ``apply``'s (a
        tombstone removes the member)."""
        if v is None:
            self.remove_member(member_id)
            return
        m = self.members.get(member_id) or new_member(member_id)
        m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
        m.rebalance_timeout_ms = v.rebalance_timeout_ms
        apply(m, v)
        self.put_member(m)

    def replay_current_assignment(self, member_id: str, v: Any, new_member: Callable[[str], Any],
                                  assignment: Callable[[Any], tuple[dict, dict]]) -> None:
        """A current assignment record: the member's state and epochs, and what ``assignment``
        reads as (assigned, pending revocation); a tombstone leaves the member owning nothing."""
        m = self.members.get(member_id)
        if m is None:
            if v is None:
                return
            m = new_member(member_id)
        if v is None:
            m.state, m.member_epoch, m.previous_member_epoch = MemberState.UNKNOWN, 0, 0
            m.assigned, m.pending_revocation = {}, {}
        else:
            m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
            m.state = MemberState(v.state)
            m.assigned, m.pending_revocation = assignment(v)
        self.put_member(m)

    def _release(self, old: Any) -> None:
        # only what it still holds at its epoch: another member may own a unit by now
        for unit in self._owned(old):
            if self.owner_epochs.get(unit) == old.member_epoch:
                del self.owner_epochs[unit]
