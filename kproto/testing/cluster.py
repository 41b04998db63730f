"""A cluster of ``kproto serve`` processes on loopback, for tests that kill brokers.

    with kproto.testing.Cluster(brokers=3) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        ...
        c.kill(c.leader("t", 0))          # SIGKILL, as a crash
        c.wait_for_leader("t", 0, not_in={old})

Nodes 1..``controllers`` are the KRaft quorum's voters and brokers
(``process.roles=broker,controller``: combined mode); the others are brokers.
With ``isolated=True`` the voters are controllers only (``process.roles=controller``:
no client listener, never a broker), node ids 3000.. as Kafka's KafkaClusterTestKit
numbers them (TestKitNodes' controller id offset), beside brokers 1..``brokers``,
which all fetch the metadata as the quorum's observers. A single
controller binds port 0 at its first start and the other nodes are given the
port it bound (read from its log), so there is no free-port race; a quorum of
several voters needs every voter's address before any starts, so their
controller ports are picked free up front (loopback) and kept across restarts.
Every node binds its own listener's port again on a restart, as
``Broker.restart`` does. With 3 voters, killing the active controller elects
another (``controller()``, ``wait_for_controller``).

The ``wait_for_*`` helpers poll Metadata until the cluster shows what they
wait for: a test waits on the event itself, the timeout is only a safety net.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Mapping, TypeVar

from kproto.testing import Broker, BrokerStartError, FIXTURE_DEFAULTS

__all__ = ["Cluster", "CLUSTER_DEFAULTS", "MetadataWaits"]

T = TypeVar("T")

#: Settings every node starts with (a test's config overrides them): sessions and lag
#: short enough that a killed broker is fenced and dropped from ISRs within seconds.
CLUSTER_DEFAULTS: Mapping[str, str] = {
    **FIXTURE_DEFAULTS,
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
}
#: isolated mode's first controller id (Kafka's TestKitNodes: controllers from 3000)
CONTROLLER_ID_OFFSET = 3000
#: how long a wait on the cluster's metadata gives up after: a safety net only (each wait ends on its
#: event), sized for a 2-core machine running several clusters and JVMs at once
WAIT_TIMEOUT_S = 120.0
_CONTROLLER = re.compile(r"controller listening on (\S+):(\d+)")


class MetadataWaits:
    """What a cluster says, read by Metadata from its running nodes, and waits on it; for
    any class with ``nodes`` ({id: node with ``running`` and ``bootstrap_servers``}):
    kproto's ``Cluster`` and Apache Kafka's (tests/kafka_ref.py ``KafkaCluster``)."""

    nodes: Mapping[int, object]

    def _answering(self) -> list:
        """The running nodes that serve clients (no controller-only node, none paused)."""
        skip = set(getattr(self, "controller_only", ())) | set(getattr(self, "paused", ()))
        return [b for i, b in self.nodes.items() if b.running and i not in skip]

    def _metadata_of(self, node, topics: Iterable[str] | None):
        from kproto.client.admin import Admin
        from kproto.client.transport import BrokerClient
        with BrokerClient(node.bootstrap_servers, timeout_s=10) as client:
            return Admin(client).metadata(topics)

    def metadata(self, topics: Iterable[str] | None = None):
        """Metadata from the first running node that answers (kproto.client.admin.ClusterMetadata)."""
        errors = []
        for b in self._answering():
            try:
                return self._metadata_of(b, topics)
            except Exception as e:      # this node is going down: ask the next
                errors.append(f"{b.bootstrap_servers}: {e}")
        raise ConnectionError("no running node answered Metadata: " + "; ".join(errors))

    def metadata_everywhere(self, topics: Iterable[str] | None = None) -> list:
        """Metadata from every running node that answers: each broker serves its own copy of
        the metadata image, which follows the controller's commits a moment later (Kafka's
        and kproto's alike), and a client may ask any of them."""
        views = []
        for b in self._answering():
            try:
                views.append(self._metadata_of(b, topics))
            except Exception:           # this node is going down: the others say
                pass
        if not views:
            raise ConnectionError("no running node answered Metadata")
        return views

    def wait_for(self, check: Callable[..., T | None], what: str, timeout: float = WAIT_TIMEOUT_S) -> T:
        """Poll Metadata until ``check(metadata)`` is not None on every running node (a wait on
        one node's view returned while another, the next one asked, had not applied the
        change yet); -> the first node's value."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                views = self.metadata_everywhere()
                last = views[0]
                found = [check(md) for md in views]
                if all(f is not None for f in found):
                    return found[0]
            except (ConnectionError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cluster did not show {what} within {timeout:g}s (last metadata: {last})")
            time.sleep(0.1)

    def controller(self) -> int:
        """The active controller (the quorum's leader) as Metadata says now (-1: none known)."""
        return self.metadata().controller_id

    def wait_for_controller(self, *, not_in: Iterable[int] = (), timeout: float = WAIT_TIMEOUT_S) -> int:
        """Wait until a running node names an active controller outside ``not_in``; -> it."""
        banned = set(not_in)
        return self.wait_for(lambda md: md.controller_id if md.controller_id >= 0 and md.controller_id not in banned
                             else None, f"an active controller outside {sorted(banned)}", timeout)

    def partition(self, topic: str, partition: int, md=None):
        md = md or self.metadata([topic])
        t = md.topics.get(topic)
        return None if t is None else next((p for p in t.partitions if p.partition == partition), None)

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader now (-1: none)."""
        p = self.partition(topic, partition)
        return -1 if p is None else p.leader

    def wait_for_leader(self, topic: str, partition: int, *, not_in: Iterable[int] = (),
                        timeout: float = WAIT_TIMEOUT_S) -> int:
        """Wait until the partition has a leader outside ``not_in``; -> it."""
        banned = set(not_in)
        return self.wait_for(lambda md: (lambda p: p.leader if p is not None and p.leader >= 0
                                         and p.leader not in banned else None)(self.partition(topic, partition, md)),
                             f"a leader of {topic}-{partition} outside {sorted(banned)}", timeout)

    def wait_for_isr(self, topic: str, partition: int, isr: Iterable[int], timeout: float = WAIT_TIMEOUT_S) -> tuple[int, ...]:
        """Wait until the partition's ISR is exactly ``isr`` (any order)."""
        want = set(isr)
        return self.wait_for(lambda md: (lambda p: p.isr if p is not None and set(p.isr) == want else None)(
            self.partition(topic, partition, md)), f"ISR {sorted(want)} for {topic}-{partition}", timeout)



class Cluster(MetadataWaits):
    """``brokers`` nodes, ids 1..N, each with its own data dir under ``data_dir``; with
    ``isolated``, ``controllers`` more nodes, ids 3000.., controllers only."""

    def __init__(self, brokers: int = 3, *, controllers: int = 1, isolated: bool = False,
                 data_dir: str | Path | None = None,
                 config: Mapping[str, object] | None = None, log_level: str = "info",
                 start_timeout: float = 60.0, node_config: Mapping[int, Mapping[str, object]] | None = None) -> None:
        """``node_config``: node id -> settings of that node only (e.g. its ``broker.rack``), as
        Kafka's ClusterConfig.setPerServerProperties."""
        if brokers < 1:
            raise ValueError("a cluster has at least one broker")
        if not 1 <= controllers <= (64 if isolated else brokers):
            raise ValueError(f"controllers must be between 1 and the number of brokers ({brokers})")
        self.controllers = controllers
        #: the voters' node ids, and those of them that are no broker (isolated mode)
        self.voter_ids = [CONTROLLER_ID_OFFSET + i for i in range(controllers)] if isolated else \
            list(range(1, controllers + 1))
        self.controller_only = frozenset(self.voter_ids if isolated else ())
        #: nodes SIGSTOPped (``pause``): they answer nothing until ``resume``
        self.paused: set[int] = set()
        self._tmp = None if data_dir is not None else tempfile.TemporaryDirectory(prefix="kproto-cluster-")
        self.data_dir = Path(data_dir if data_dir is not None else self._tmp.name)
        self.cluster_id = _cluster_id(self.data_dir)
        self.config = {**CLUSTER_DEFAULTS, **{k: str(v) for k, v in (config or {}).items()},
                       "cluster.id": self.cluster_id}
        self.node_overrides = {n: {k: str(v) for k, v in c.items()} for n, c in (node_config or {}).items()}
        self.controller_address: tuple[str, int] | None = None
        self.voter_addresses: dict[int, tuple[str, int]] = (
            {i: ("127.0.0.1", _free_port()) for i in self.voter_ids} if controllers > 1 else {})
        self.nodes: dict[int, Broker] = {
            i: Broker(self.data_dir / f"node-{i}", self._node_config(i), log_level=log_level,
                      start_timeout=start_timeout, control=False)
            for i in sorted({*range(1, brokers + 1), *self.voter_ids})}

    def _node_config(self, node: int) -> dict[str, str]:
        voters = self.voter_addresses or {self.voter_ids[0]: self.controller_address or ("127.0.0.1", 0)}
        roles = "controller" if node in self.controller_only else "broker,controller" if node in voters else "broker"
        return {**self.config, **self.node_overrides.get(node, {}), "node.id": str(node),
                "process.roles": roles,
                "controller.quorum.voters": ",".join(f"{i}@{h}:{p}" for i, (h, p) in sorted(voters.items())),
                "controller.listener.names": "CONTROLLER"}

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, node: int | None = None) -> "Cluster":
        """Start one node, or (None) every node not running, the controllers first (several
        voters at once: a node is ready once unfenced, which needs a quorum)."""
        wanted = [node] if node is not None else sorted(self.nodes, key=lambda i: i not in self.voter_ids)
        if node is None and self.voter_addresses:
            voters = [i for i in wanted if i in self.voter_addresses]
            with ThreadPoolExecutor(len(voters)) as pool:
                for f in [pool.submit(self._start_one, i) for i in voters]:
                    f.result()
            wanted = [i for i in wanted if i not in voters]
        for i in wanted:
            self._start_one(i)
        return self

    def _start_one(self, i: int) -> None:
        b = self.nodes[i]
        if b.running:
            return
        b.config = {k: str(v) for k, v in self._node_config(i).items()}
        since = b.log_size()
        b.start()
        if i == self.voter_ids[0] and self.controller_address is None and not self.voter_addresses:
            m = _CONTROLLER.search(b.log_text(since))
            if m is None:
                raise BrokerStartError(f"node {i} did not log its controller address")
            self.controller_address = (m.group(1), int(m.group(2)))

    def stop(self, node: int | None = None, timeout: float = 30.0) -> None:
        """SIGTERM (controlled shutdown: leaderships move first); None: every node,
        the controllers last so the others can hand their leaderships over."""
        for i in ([node] if node is not None else sorted(self.nodes, key=lambda i: i in self.voter_ids)):
            self.nodes[i].stop(timeout)

    def kill(self, node: int) -> None:
        """SIGKILL: no checkpoints, no controlled shutdown, as a crash."""
        self.nodes[node].kill()

    def pause(self, node: int) -> None:
        """SIGSTOP: the node holds its connections but answers nothing and sends no heartbeat
        (a hung broker), until ``resume``."""
        os.killpg(self.nodes[node].pid, signal.SIGSTOP)
        self.paused.add(node)

    def resume(self, node: int) -> None:
        os.killpg(self.nodes[node].pid, signal.SIGCONT)
        self.paused.discard(node)

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> "Cluster":
        try:
            self.start()
            try:
                self.wait_for(lambda md: len(md.brokers) == len(self.nodes) - len(self.controller_only) or None,
                              "every broker unfenced")
            except TimeoutError as e:
                raise BrokerStartError(str(e)) from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def pids(self) -> dict[int, int | None]:
        return {i: b.pid for i, b in self.nodes.items()}

    @property
    def bootstrap_servers(self) -> str:
        """The running brokers' ``host:port``, comma-separated."""
        return ",".join(b.bootstrap_servers for i, b in self.nodes.items() if b.running and i not in self.controller_only)

    def active_controller(self) -> int:
        """The quorum's leader, by DescribeQuorum through a broker (in isolated mode Metadata's
        controller_id is a random broker, as Kafka's); -1: none known."""
        from kproto.client.admin import Admin
        from kproto.client.transport import BrokerClient
        with BrokerClient(self.bootstrap_servers, timeout_s=10) as client:
            return Admin(client).describe_quorum().topics[0].partitions[0].leader_id

    def wait_for_active_controller(self, *, not_in: Iterable[int] = (), timeout: float = WAIT_TIMEOUT_S) -> int:
        """Wait until DescribeQuorum names a leader outside ``not_in``; -> it."""
        banned = set(not_in)

        def check(md):
            try:
                leader = self.active_controller()
            except Exception:   # no leader yet: the forwarded request fails
                return None
            return leader if leader >= 0 and leader not in banned else None
        return self.wait_for(check, f"an active controller outside {sorted(banned)}", timeout)

def _free_port() -> int:
    """A loopback port free now, for a voter's controller listener (a quorum of several
    voters must know each address before the first starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_id(data_dir: Path) -> str:
    """A cluster id as kafka-storage.sh random-uuid makes one, kept across restarts of the same data dir."""
    from kproto.log.checkpoint import random_uuid
    path = data_dir / "cluster.id"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        cid = random_uuid()
        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(cid)
        return cid
