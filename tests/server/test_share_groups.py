"""KIP-932 share groups, sans I/O: the record-state table swept, a share partition's
rules, ``__share_group_state`` round trips, a cluster node's share coordinator. confluent-kafka's ShareConsumer against the
broker: tests/e2e/test_share_group_clients.py."""

from __future__ import annotations

import uuid

import pytest

from kproto.errors import ErrorCode
from kproto.server.config import BrokerConfig
from kproto.server.runtime.core import Pending
from kproto.server.share import persistence
from kproto.server.share.config import share_config
from kproto.server.share.coordinator import AckBatch, Acknowledge, ShareCoordinator, StateOp, StateRequest
from kproto.server.share.partition import SharePartition, StateBatch
from kproto.server.share.state import TRANSITIONS, RecordEvent, RecordState, transition

S, E = RecordState, RecordEvent
LIMIT = 3


# -- the table ---------------------------------------------------------------------------

EXPECTED = {
    (S.AVAILABLE, E.ACQUIRE): S.ACQUIRED,
    (S.ACQUIRED, E.ACCEPT): S.ACKNOWLEDGED,
    (S.ACQUIRED, E.RELEASE): S.AVAILABLE,
    (S.ACQUIRED, E.REJECT): S.ARCHIVED,
    (S.ACQUIRED, E.RENEW): S.ACQUIRED,
    (S.ACQUIRED, E.GAP): S.ARCHIVED,
    (S.ACQUIRED, E.LOCK_TIMEOUT): S.AVAILABLE,
}


@pytest.mark.parametrize("state", list(S))
@pytest.mark.parametrize("event", list(E))
def test_transition_table_is_total_and_kafkas(state, event):
    assert (state, event) in TRANSITIONS
    assert TRANSITIONS[state, event] is EXPECTED.get((state, event))


@pytest.mark.parametrize("event", [E.RELEASE, E.LOCK_TIMEOUT])
def test_returning_a_record_at_the_delivery_limit_archives_it(event):
    assert transition(S.ACQUIRED, event, LIMIT - 1, LIMIT) is S.AVAILABLE
    assert transition(S.ACQUIRED, event, LIMIT, LIMIT) is S.ARCHIVED
    assert transition(S.ACQUIRED, E.ACCEPT, LIMIT, LIMIT) is S.ACKNOWLEDGED


# -- one share partition -----------------------------------------------------------------

def _sp(start: int = 0) -> SharePartition:
    return SharePartition(start, delivery_count_limit=LIMIT, max_record_locks=100)


def test_acquire_then_accept_moves_the_start_offset():
    sp = _sp()
    assert sp.acquire("m1", [(0, 4)], 10, 0, 1000) == [(0, 4, 1)]
    assert sp.acquire("m2", [(0, 4)], 10, 0, 1000) == []            # all held by m1
    assert sp.acknowledge("m2", 0, 0, [1], 0, 1000) == ErrorCode.INVALID_RECORD_STATE
    assert sp.acknowledge("m1", 0, 2, [1], 0, 1000) == ErrorCode.NONE
    assert sp.start_offset == 3
    assert sp.acknowledge("m1", 3, 4, [1, 3], 0, 1000) == ErrorCode.NONE   # accept 3, reject 4
    assert (sp.start_offset, sp.in_flight) == (5, {})
    assert sp.acknowledge("m1", 3, 3, [1], 0, 1000) == ErrorCode.INVALID_RECORD_STATE


def test_max_records_and_a_bad_acknowledge_type():
    sp = _sp()
    assert sp.acquire("m", [(0, 9)], 4, 0, 1000) == [(0, 3, 1)]
    assert sp.next_fetch_offset() == 4
    assert sp.acknowledge("m", 0, 1, [9], 0, 1000) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("m", 0, 1, [1, 1, 1], 0, 1000) == ErrorCode.INVALID_REQUEST


def test_lock_timeout_redelivers_until_the_limit_then_archives():
    sp = _sp(10)
    now = 0
    for delivery in range(1, LIMIT + 1):
        assert sp.acquire("m", [(10, 10)], 10, now, 1000) == [(10, 10, delivery)]
        assert sp.next_lock_deadline() == now + 1000
        assert not sp.expire_locks(now + 999)
        assert sp.expire_locks(now + 1000)
        now += 1000
    assert (sp.start_offset, sp.in_flight) == (11, {})      # archived at the limit, SPSO past it


def test_release_and_renew():
    sp = _sp()
    sp.acquire("m", [(0, 1)], 10, 0, 1000)
    assert sp.acknowledge("m", 0, 0, [2], 0, 1000) == ErrorCode.NONE        # RELEASE
    assert sp.in_flight[0].state is S.AVAILABLE and sp.next_fetch_offset() == 0
    assert sp.acknowledge("m", 1, 1, [4], 500, 1000) == ErrorCode.NONE      # RENEW
    assert sp.in_flight[1].lock_deadline_ms == 1500
    assert sp.acquire("m", [(0, 1)], 10, 600, 1000) == [(0, 0, 2)]
    assert sp.release_member("m")
    assert [(o, r.state, r.delivery_count) for o, r in sorted(sp.in_flight.items())] == [
        (0, S.AVAILABLE, 2), (1, S.AVAILABLE, 1)]


def test_state_batches_write_acquired_as_available_and_reload():
    sp = _sp()
    sp.acquire("m", [(0, 5)], 10, 0, 1000)
    sp.acknowledge("m", 1, 2, [1], 0, 1000)
    sp.acknowledge("m", 3, 3, [3], 0, 1000)
    batches = sp.state_batches()
    assert batches == [StateBatch(0, 0, 0, 1), StateBatch(1, 2, 2, 1), StateBatch(3, 3, 4, 1),
                       StateBatch(4, 5, 0, 1)]
    again = SharePartition(sp.start_offset, batches, delivery_count_limit=LIMIT)
    assert again.acquire("n", [(0, 5)], 10, 0, 1000) == [(0, 0, 2), (4, 5, 2)]


def test_share_group_state_records_round_trip():
    key = ("g", uuid.UUID(int=7), 3)
    snap = persistence.snapshot_record(key, persistence.ShareState(0, 1, -1, 5, (StateBatch(5, 9, 0, 1),),
                                                                   create_timestamp=1700000000000, write_timestamp=1700000000500))
    upd = persistence.update_record(key, 0, -1, 7, [StateBatch(7, 7, 2, 1), StateBatch(10, 11, 4, 2)])
    assert snap[0][:2] == b"\x00\x00" and upd[0][:2] == b"\x00\x01"       # key version = record type
    state = persistence.replay([snap, upd]).states[key]
    assert (state.state_epoch, state.start_offset, state.updates_since_snapshot) == (1, 7, 1)
    assert state.create_timestamp == 1700000000000          # kept from the snapshot
    assert state.state_batches == (StateBatch(7, 7, 2, 1), StateBatch(8, 9, 0, 1), StateBatch(10, 11, 4, 2))
    assert persistence.replay([snap, persistence.tombstone(key)]).states == {}
    bad = persistence.replay([(b"\x00\x09junk", b"")])
    assert bad.states == {} and "unknown key version 9" in bad.skipped[0]
    assert persistence.coordinator_key(key) == "g:AAAAAAAAAAAAAAAAAAAABw:3"


# -- a node of a cluster's share coordinator (sans I/O) ----------------------------------

class _Catalog:
    """One topic "t" of two partitions, its log at [0, 10)."""

    TOPIC_ID = uuid.UUID(int=7)

    def topic_id(self, topic):
        return self.TOPIC_ID if topic == "t" else None

    def topic_name(self, topic_id):
        return "t" if topic_id == self.TOPIC_ID else None

    def partition_count(self, topic):
        return 2 if topic == "t" else 0

    def log_offsets(self, topic, partition):
        return 0, 10

    def group_config(self, group_id):
        return {}


def _clustered():
    values = BrokerConfig.from_props({"share.coordinator.state.topic.num.partitions": "3"}).values
    return ShareCoordinator(share_config(values), _Catalog(), clustered=True)


def test_a_clustered_leader_writes_its_share_partitions_to_the_share_coordinator_and_answers_after():
    c = _clustered()
    key = ("g", _Catalog.TOPIC_ID, 0)
    assert c.share_partition("g", "t", 0, 0) is None        # nothing until read from the share coordinator
    c.install(key, 1, 4, 0, [StateBatch(0, 1, int(S.ACKNOWLEDGED), 1)])
    assert c.acquire("g", "m", "t", 0, [(0, 4)], 10, 0) == [(2, 4, 1)]
    pending = c.handle(Acknowledge("g", "m", (AckBatch(key[1], 0, 2, 2, (1,)),)), 0)
    assert isinstance(pending, Pending) and c.take_appends() == []      # nothing in this node's store
    [(append_id, op)] = c.take_state_writes()
    assert (op.kind, op.key, op.state_epoch, op.leader_epoch, op.start_offset) == ("write", key, 1, 4, 3)
    assert op.batches == (StateBatch(3, 4, int(S.AVAILABLE), 1),)       # acquired ones written AVAILABLE
    assert c.poll(0) == []
    c.append_done(append_id, 0)
    assert c.poll(0) == [(pending, {(key[1], 0): ErrorCode.NONE})]
    assert c.states == {}


def test_a_clustered_share_coordinator_serves_only_the_state_partitions_it_leads():
    c = _clustered()
    key = ("g", _Catalog.TOPIC_ID, 1)
    home = persistence.partition_for_key(key, 3)
    init = StateRequest((StateOp("initialize", key, state_epoch=0, start_offset=5),))
    assert c.handle(init, 0)[0]["error_code"] == ErrorCode.NOT_COORDINATOR
    c.load_partition(home, [], 0)
    pending = c.handle(init, 0)
    [append] = c.take_appends()
    assert append.partition == home
    c.append_done(append.id, 0)
    assert c.poll(0) == [(pending, [{"error_code": ErrorCode.NONE, "error_message": None}])]
    assert c.states[key].start_offset == 5
    c.unload_partition(home, 0)
    assert c.states == {}
    assert c.handle(init, 0)[0]["error_code"] == ErrorCode.NOT_COORDINATOR
