"""The fault plane's rules (server/faults.py) against a model, over arbitrary sequences of
adding rules, removing them and deciding requests.

The model keeps, per rule, its match, its count window (once, N times, from the N-th
match on) and, for a seeded probability, its own ``random.Random(seed)`` drawn only
when the window admits the match; it predicts each decision's error and delay and
every rule's matches and hits. Invariants: hits never exceed the count (nor the
matches), ``on_hit`` fires once per hit, and a removed rule's counters never move.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kproto.server.faults import Facts, FaultPlan, Rule, rule_from_json

API = {"Produce": 0, "Fetch": 1, "Heartbeat": 12}
GROUPS = ["g", "h"]


@dataclass
class Model:
    """What one rule should have done so far."""

    rule: Rule
    apis: frozenset[int] | None
    group_id: str | None
    error: int | None
    delay_ms: int
    times: int | None
    after: int
    draw: random.Random | None
    probability: float | None
    matches: int = 0
    hits: int = 0
    history: list[bool] = field(default_factory=list)    # admitted or not, per match

    def matches_facts(self, api: int, group: str | None) -> bool:
        return (self.apis is None or api in self.apis) and (self.group_id is None or self.group_id == group)

    def admits(self) -> bool:
        """After counting this match: whether the rule acts on it."""
        if self.matches < self.after or (self.times is not None and self.hits >= self.times):
            return False
        return self.draw is None or self.draw.random() < self.probability


counts = st.sampled_from([None, "once", 0, 1, 2, 3])
probabilities = st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 1.0]))


class FaultRules(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.plan = FaultPlan()
        self.hit_calls: Counter[int] = Counter()
        self.plan.on_hit = lambda r: self.hit_calls.update([r.id])
        self.live: list[Model] = []
        self.removed: list[tuple[Model, int, int]] = []     # with its counters when removed

    @rule(apis=st.one_of(st.none(), st.sets(st.sampled_from(sorted(API)), min_size=1, max_size=2)),
          group=st.one_of(st.none(), st.sampled_from(GROUPS)), count=counts, after=st.integers(1, 4),
          probability=probabilities, seed=st.integers(0, 2**32), error=st.sampled_from([None, 6, 15, 16]),
          delay_ms=st.sampled_from([0, 5, 20]))
    def add(self, apis, group, count, after, probability, seed, error, delay_ms):
        doc = {"after": after}
        if apis is not None:
            doc["api"] = sorted(apis)
        if group is not None:
            doc["group_id"] = group
        if count is not None:
            doc["count"] = count
        if probability is not None:
            doc.update(probability=probability, seed=seed)
        if error is not None:
            doc["error"] = error
        doc["delay_ms"] = delay_ms if delay_ms or error is not None else 1     # a rule needs an action
        r = self.plan.add(rule_from_json(doc, API))
        assert r.id not in {m.rule.id for m in self.live + [m for m, _, _ in self.removed]}
        self.live.append(Model(r, None if apis is None else frozenset(API[a] for a in apis), group, error,
                               doc["delay_ms"], 1 if count == "once" else count, after,
                               None if probability is None else random.Random(seed), probability))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def remove(self, data):
        m = data.draw(st.sampled_from(self.live))
        assert self.plan.remove(m.rule.id)
        assert not self.plan.remove(m.rule.id)          # gone: a second removal finds nothing
        assert self.plan.get(m.rule.id) is None
        self.live.remove(m)
        self.removed.append((m, m.rule.matches, m.rule.hits))

    @rule(api=st.sampled_from(sorted(API.values())), group=st.one_of(st.none(), st.sampled_from(GROUPS)))
    def decide(self, api, group):
        error, delay, acted = None, 0, False
        for m in self.live:
            if m.error is not None and error is not None:
                continue            # the first error decides; a later error rule does not even count the match
            if not m.matches_facts(api, group):
                continue
            m.matches += 1
            admitted = m.admits()
            m.history.append(admitted)
            if not admitted:
                continue
            m.hits += 1
            acted = True
            if m.error is not None:
                error = m.error
            delay += m.delay_ms
        d = self.plan.decide(Facts(api, 4, group_id=group))
        assert bool(d) == acted
        assert (d.error, d.delay_ms) == (error, delay)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def same_seed_same_sequence(self, data):
        """A copy of a rule in a fresh plan, fed the same matches, acts on the same ones."""
        m = data.draw(st.sampled_from(self.live))
        if not m.history:
            return
        again = FaultPlan()
        copy = again.add(rule_from_json(dict(m.rule.source), API))
        facts = Facts(next(iter(m.apis)) if m.apis else 0, 4, group_id=m.group_id)
        replay = []
        for _ in m.history:
            before = copy.hits
            again.decide(facts)
            replay.append(copy.hits > before)
        assert replay == m.history

    @invariant()
    def counters_follow_the_model(self):
        for m in self.live:
            assert (m.rule.matches, m.rule.hits) == (m.matches, m.hits)
            assert m.rule.hits <= m.rule.matches
            if m.times is not None:
                assert m.rule.hits <= m.times
            assert m.rule.hits <= max(0, m.rule.matches - m.after + 1)
            if m.probability == 0.0:
                assert m.rule.hits == 0
            assert self.hit_calls[m.rule.id] == m.rule.hits
        assert [r.id for r in self.plan.rules] == [m.rule.id for m in self.live]

    @invariant()
    def removed_rules_stop_hitting(self):
        for m, matches, hits in self.removed:
            assert (m.rule.matches, m.rule.hits) == (matches, hits)
            assert self.hit_calls[m.rule.id] == hits


TestFaultRules = FaultRules.TestCase
TestFaultRules.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)
