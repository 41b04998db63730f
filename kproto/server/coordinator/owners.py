"""The members of a KIP-848-style group (consumer groups, streams groups) and, for each
unit of work assigned (a partition, an active task), the epoch of the member that owns it,
kept together as ConsumerGroup and StreamsGroup.updateMember / removeMember do: one piece
of code for both group types."""

from __future__ import annotations

from typing import Any, Hashable


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

    def _release(self, old: Any) -> None:
        # only what it still holds at its epoch: another member may own a unit by now
        for unit in self._owned(old):
            if self.owner_epochs.get(unit) == old.member_epoch:
                del self.owner_epochs[unit]
