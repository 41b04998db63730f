"""Cluster chaos (issue 27): random SIGKILLs and restarts of a three-node kproto cluster
(three voters, each a broker too, so any node may die, the active controller included)
under an idempotent acks=all producer on an RF=3, min.insync.replicas=2 topic. No
acknowledged record is lost or duplicated, and at the end every follower's segments hold
its leader's batches (`kproto dump-log`, per replica dir).

The number of kills is ``SOAK_KILLS`` (3 here in the normal suite; `make soak` runs 50),
the victims' order ``SOAK_SEED`` (random unless set; printed on failure). One node is down
at a time: each kill waits for the events that make the next one safe (a leader outside
the victim for every partition, acknowledged writes while it is down, the full ISR back
after its restart), never on a timer.
"""

from __future__ import annotations

import os
import random
import re
import threading
from collections import Counter

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, Producer, TopicPartition

from kproto.testing import Cluster
from kproto.tools.main import cli
from tests.e2e.test_cluster import create

KILLS = int(os.environ.get("SOAK_KILLS", "3"))
SEED = int(os.environ.get("SOAK_SEED", str(random.SystemRandom().randrange(1 << 32))))
TOPIC = "chaos"
NODES = (1, 2, 3)
#: one partition led by each node, so every kill takes some leadership away
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
PROGRESS = 50           # records acknowledged between two events of the run


@pytest.fixture
def cluster(tmp_path):
    with Cluster(brokers=3, controllers=3, data_dir=tmp_path / "cluster") as c:
        yield c


class Load:
    """An idempotent acks=all producer writing numbered records round the partitions in a
    thread; ``wait_for(n)`` returns once ``n`` records are acknowledged in all."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": 600000, "topic.metadata.refresh.interval.ms": 500})
        self.acked: list[bytes] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-producer")
        self._thread.start()

    def _delivered(self, err, msg) -> None:
        with self._changed:
            if err is None:
                self.acked.append(msg.value())
            else:
                self.errors.append(f"{msg.value()!r}: {err}")
            self._changed.notify_all()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(TOPIC, value=b"%d" % i, partition=i % len(ASSIGNMENT),
                                      on_delivery=self._delivered)
                i += 1
            except BufferError:     # the queue is full while no leader takes writes
                pass
            self.producer.poll(0.001)

    def wait_for(self, count: int, what: str, timeout: float = 300) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self.acked) >= count or self.errors, timeout):
                raise TimeoutError(f"{len(self.acked)} of {count} records acknowledged {what} (seed {SEED})")
            assert self.errors == [], f"seed {SEED}"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        left = self.producer.flush(600)
        self.producer = None        # destroyed: no reconnecting to a cluster that stops
        assert left == 0, f"records left unacknowledged (seed {SEED})"


def read_back(cluster: Cluster) -> list[bytes]:
    """Every record of the topic, from each partition's leader, up to its high watermark."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "chaos-check",
                  "enable.auto.commit": False})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=60)[1] for p in range(len(ASSIGNMENT))}
        c.assign([TopicPartition(TOPIC, p, 0) for p in ends])
        seen = dict.fromkeys(ends, 0)
        out: list[bytes] = []
        while any(seen[p] < ends[p] for p in ends):
            m = c.poll(30)
            assert m is not None, f"no record after {seen} of {ends} (seed {SEED})"
            assert m.error() is None, m.error()
            seen[m.partition()] = m.offset() + 1
            out.append(m.value())
        return out
    finally:
        c.close()


_POSITION = re.compile(r" position: \d+")


def dumped_batches(cluster: Cluster, node: int, partition: int) -> list[str]:
    """`kproto dump-log` of the replica's segments: its batch lines, without the segment
    headers and the byte positions (where a replica rolled its segments is its own)."""
    lines = []
    for segment in sorted((cluster.nodes[node].data_dir / f"{TOPIC}-{partition}").glob("*.log")):
        out = CliRunner().invoke(cli, ["dump-log", "--files", str(segment)])
        assert out.exit_code == 0, out.output
        lines += [_POSITION.sub("", line) for line in out.output.splitlines() if line.startswith("baseOffset:")]
    return lines


def test_random_sigkills_lose_no_acknowledged_record_and_replicas_match(cluster):
    rng = random.Random(SEED)
    create(cluster, TOPIC, ASSIGNMENT, min_insync_replicas=2)
    load = Load(cluster.bootstrap_servers)
    try:
        for kill in range(1, KILLS + 1):
            load.wait_for(len(load.acked) + PROGRESS, "before a kill")
            victim = rng.choice(NODES)
            print(f"kill {kill} of {KILLS} (seed {SEED}): node {victim}, {len(load.acked)} acknowledged")
            cluster.kill(victim)
            for p in range(len(ASSIGNMENT)):
                cluster.wait_for_leader(TOPIC, p, not_in={victim}, timeout=120)
            # two of three in the ISR still take acks=all writes
            load.wait_for(len(load.acked) + PROGRESS, f"with node {victim} down")
            cluster.start(victim)
            for p in range(len(ASSIGNMENT)):
                cluster.wait_for_isr(TOPIC, p, NODES, timeout=180)
        load.wait_for(len(load.acked) + PROGRESS, "after the last restart")
    finally:
        load.stop()
    assert load.errors == [], f"seed {SEED}"
    # every acknowledged record exactly once; nothing written twice (the idempotent
    # producer's retries across leader changes deduplicated by the new leader)
    records = Counter(read_back(cluster))
    assert [r for r, n in records.items() if n > 1] == [], f"duplicates (seed {SEED})"
    assert [r for r in load.acked if r not in records] == [], f"acknowledged records lost (seed {SEED})"
    # the flush's last acks=all writes reached the full ISR, so every replica holds every
    # batch: the followers' segments the leader's batches, one for one
    for p in range(len(ASSIGNMENT)):
        leader = cluster.leader(TOPIC, p)
        batches = dumped_batches(cluster, leader, p)
        assert batches, f"{TOPIC}-{p}: no batch on its leader"
        for follower in set(NODES) - {leader}:
            assert dumped_batches(cluster, follower, p) == batches, f"{TOPIC}-{p} on node {follower} (seed {SEED})"
