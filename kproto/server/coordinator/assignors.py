"""The server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``
(Kafka's UniformAssignor and RangeAssignor, group-coordinator/.../assignor).

An assignor is a pure function: the members (id -> subscribed topic ids, current target
assignment) and the subscribed topics (id -> partition count) in, each member's new target
out. Both are sticky: a member keeps what it had as long as it stays within its share,
so a rebalance moves as few partitions as it can.

``uniform`` spreads every partition of every topic so member counts differ by at most one
among members subscribed to the same topics (the homogeneous case exactly; for members with
different subscriptions, one partition at a time to the least-loaded subscribed member, a
simpler rule than Kafka's UniformHeterogeneousAssignmentBuilder: counts may differ from
Kafka's there). ``range`` gives each topic's members, sorted by member id, consecutive
ranges of partitions, the first ``partitions % members`` one more (co-partitioning).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

__all__ = ["ASSIGNORS", "AssignmentSpec", "uniform", "range_assign"]

#: member id -> (subscribed topic ids, current target: topic id -> partitions)
AssignmentSpec = Mapping[str, tuple[frozenset[Hashable], Mapping[Hashable, frozenset[int]]]]
Result = dict[str, dict[Hashable, frozenset[int]]]


def _freeze(out: dict[str, dict[Hashable, set[int]]]) -> Result:
    return {m: {t: frozenset(ps) for t, ps in topics.items() if ps} for m, topics in out.items()}


def uniform(members: AssignmentSpec, topics: Mapping[Hashable, int]) -> Result:
    """UniformAssignor: balanced and sticky."""
    out: dict[str, dict[Hashable, set[int]]] = {m: {} for m in members}
    if not members:
        return {}
    subs = {m: frozenset(t for t in s if t in topics) for m, (s, _) in members.items()}
    load = dict.fromkeys(members, 0)
    # every partition's subscribers; groups of members with the same subscription share quotas
    total_by_sub: dict[frozenset, int] = {}
    for m, s in subs.items():
        total_by_sub.setdefault(s, 0)
    for s in total_by_sub:
        total_by_sub[s] = sum(topics[t] for t in s)
    homogeneous = len(total_by_sub) == 1
    quota: dict[str, int] = {}
    if homogeneous:
        n = len(members)
        total = next(iter(total_by_sub.values()))
        base, extra = divmod(total, n)
        # the members that keep the most get the extra slots first (stickiness)
        kept = sorted(members, key=lambda m: (-sum(len(p) for t, p in members[m][1].items() if t in topics), m))
        for i, m in enumerate(kept):
            quota[m] = base + (1 if i < extra else 0)
    taken: set[tuple[Hashable, int]] = set()
    # 1. stickiness: keep what is still subscribed, within the quota
    for m in sorted(members):
        for t, parts in sorted(members[m][1].items(), key=lambda kv: str(kv[0])):
            if t not in subs[m]:
                continue
            for p in sorted(parts):
                if p >= topics[t] or (t, p) in taken:
                    continue
                if homogeneous and load[m] >= quota[m]:
                    break
                out[m].setdefault(t, set()).add(p)
                taken.add((t, p))
                load[m] += 1
    # 2. the rest, one at a time to the least loaded subscriber with room
    for t in sorted(topics, key=str):
        candidates = sorted(m for m in members if t in subs[m])
        if not candidates:
            continue
        for p in range(topics[t]):
            if (t, p) in taken:
                continue
            room = [m for m in candidates if not homogeneous or load[m] < quota[m]] or candidates
            m = min(room, key=lambda x: (load[x], x))
            out[m].setdefault(t, set()).add(p)
            taken.add((t, p))
            load[m] += 1
    return _freeze(out)


def range_assign(members: AssignmentSpec, topics: Mapping[Hashable, int]) -> Result:
    """RangeAssignor: per topic, consecutive ranges over the members sorted by id."""
    out: dict[str, dict[Hashable, set[int]]] = {m: {} for m in members}
    for t, n in topics.items():
        subscribers = sorted(m for m, (s, _) in members.items() if t in s)
        if not subscribers:
            continue
        base, extra = divmod(n, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = base + (1 if i < extra else 0)
            out[m][t] = set(range(start, start + size))
            start += size
    return _freeze(out)


#: group.consumer.assignors names -> the assignor
ASSIGNORS = {"uniform": uniform, "range": range_assign}
