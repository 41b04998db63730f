"""Share-group membership and assignment (GroupMetadataManager.shareGroupHeartbeat,
ShareGroup, SimpleAssignor), sans-I/O.

A member joins with epoch 0 and the member id it generated (ShareGroupHeartbeat
v1, KIP-1082), heartbeats with the epoch it was given, leaves with -1. Any
change of membership or subscriptions bumps the group epoch and recomputes the
assignment; share groups have no revocation step, so a member moves to the new
epoch and its new partitions at its next heartbeat. States: Empty (no
members), Stable (ShareGroup.ShareGroupState; Dead when deleted).

The simple assignor, per topic among the members subscribed to it: with no
more members than partitions each partition goes to one member round-robin,
with more members each member gets one partition, shared round-robin
(SimpleAssignor's homogeneous rule, topic by topic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ShareMember", "ShareGroup", "simple_assign"]

Assignment = dict[str, tuple[int, ...]]      # topic name -> partitions


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


def simple_assign(members: dict[str, tuple[str, ...]], partitions: dict[str, int]) -> dict[str, Assignment]:
    """member id -> its subscriptions, topic -> partition count (missing topics are
    skipped) => member id -> its assignment."""
    out: dict[str, Assignment] = {m: {} for m in members}
    for topic in sorted({t for subs in members.values() for t in subs}):
        n = partitions.get(topic, 0)
        subscribers = sorted(m for m, subs in members.items() if topic in subs)
        if n <= 0 or not subscribers:
            continue
        per: dict[str, list[int]] = {m: [] for m in subscribers}
        if len(subscribers) <= n:
            for p in range(n):
                per[subscribers[p % len(subscribers)]].append(p)
        else:
            for i, m in enumerate(subscribers):
                per[m].append(i % n)
        for m, ps in per.items():
            if ps:
                out[m][topic] = tuple(ps)
    return out
