"""UnregisterBroker (64) and ``kproto cluster-tool`` (kafka-cluster.sh) on kproto's 3-node
cluster and on Apache Kafka 4.4's (tests/conftest.py ``peer_cluster``), and on a standalone node.

Each scenario runs on both clusters with literal expectations, and on each cluster kproto's
tool and Kafka's ClusterTool (and TopicCommand) print the same. Every wait is on the event
(Metadata, DescribeCluster, a broker's log line); timeouts are safety nets.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kproto.client.admin import Admin
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from tests.helpers import create_in_cluster as create, describe_on_both, until

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
HEADER = "ID         HOST      PORT       RACK       STATE      ENDPOINT_TYPE  "


def ours(bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    """``kproto cluster-tool ARGS --bootstrap-server bootstrap`` in its own process."""
    return subprocess.run([sys.executable, "-m", "kproto.tools.main", "cluster-tool", *args,
                           "--bootstrap-server", bootstrap], capture_output=True, text=True, timeout=120)


def both(kafka_ref, bootstrap: str, *args: str) -> str:
    """kproto's tool and Kafka's ClusterTool on one broker: exit 0 and the same output (-> it)."""
    mine = ours(bootstrap, *args)
    theirs = kafka_ref.run_tool(CLUSTER_TOOL, *args, "--bootstrap-server", bootstrap)
    assert (mine.returncode, mine.stderr) == (0, ""), mine.stderr
    assert (theirs.returncode, theirs.stdout) == (0, mine.stdout), theirs.stderr
    return mine.stdout


def endpoints(cluster, ids_states: dict[int, str]) -> str:
    """ClusterTool's list-endpoints table for these brokers of ``cluster``."""
    rows = [HEADER]
    for i, state in sorted(ids_states.items()):
        host, port = cluster.nodes[i].bootstrap_servers.rsplit(":", 1)
        rows.append(f"{i:<10} {host:<9} {port:<10} {'null':<10} {state:<10} {'broker':<15}")
    return "".join(r + "\n" for r in rows)


def registered(cluster) -> dict[int, bool]:
    """DescribeCluster v2 with fenced brokers: id -> fenced, from node 1."""
    with BrokerClient(cluster.nodes[1].bootstrap_servers, timeout_s=10) as c:
        body = Admin(c).describe_cluster(include_fenced_brokers=True)
    return {b.broker_id: b.is_fenced for b in body.brokers}


def test_unregister_a_stopped_broker_drops_it_and_leaves_its_replica_offline(peer_cluster, kafka_ref):
    c = peer_cluster
    create(c, "unreg-stopped", [[3, 1]])
    bootstrap = c.nodes[1].bootstrap_servers
    assert both(kafka_ref, bootstrap, "cluster-id") == f"Cluster ID: {c.metadata().cluster_id}\n"
    c.stop(3)
    until(lambda: registered(c) == {1: False, 2: False, 3: True}, timeout=60)
    assert both(kafka_ref, bootstrap, "list-endpoints", "--include-fenced-brokers") == \
        endpoints(c, {1: "unfenced", 2: "unfenced", 3: "fenced"})
    assert both(kafka_ref, bootstrap, "list-endpoints") == endpoints(c, {1: "unfenced", 2: "unfenced"})

    done = ours(bootstrap, "unregister", "--id", "3")
    assert (done.returncode, done.stdout, done.stderr) == (0, "Broker 3 is no longer registered.\n", "")
    until(lambda: registered(c) == {1: False, 2: False}, timeout=60)
    assert both(kafka_ref, bootstrap, "list-endpoints", "--include-fenced-brokers") == \
        endpoints(c, {1: "unfenced", 2: "unfenced"})
    assert sorted(b.node_id for b in c.metadata().brokers) == [1, 2]
    # its replica stays in the replica list, offline, out of the ISR (TopicCommand prints the same);
    # either tool may ask node 2, whose image follows the controller's on its own: wait for every node
    c.wait_for(lambda md: (lambda p: p if p is not None and tuple(p.isr) == (1,) and tuple(p.offline_replicas) == (3,)
                           else None)(c.partition("unreg-stopped", 0, md)), "unreg-stopped-0 with 3 offline")
    assert describe_on_both(kafka_ref, c, "--topic", "unreg-stopped").splitlines()[1] == \
        "\tTopic: unreg-stopped\tPartition: 0\tLeader: 1\tReplicas: 3,1\tIsr: 1\tElr: \tLastKnownElr: "
    p = c.partition("unreg-stopped", 0)
    assert (p.replicas, p.isr, p.offline_replicas) == ((3, 1), (1,), (3,))

    again = ours(bootstrap, "unregister", "--id", "3")
    assert (again.returncode, again.stdout, again.stderr) == (
        1, "", "kproto: error: Broker ID 3 is not currently registered\n")
    theirs = kafka_ref.run_tool(CLUSTER_TOOL, "unregister", "--id", "3", "--bootstrap-server", bootstrap)
    assert (theirs.returncode, theirs.stdout) == (1, "")
    assert "BrokerIdNotRegisteredException: Broker ID 3 is not currently registered" in theirs.stderr
    # the peer_cluster fixture starts node 3 again: a new incarnation registers afresh


def test_unregister_a_live_broker_is_answered_and_it_stays_out(peer_cluster, kafka_ref):
    """Kafka 4.4 unregisters a live broker too (ReplicationControlManager.unregisterBroker checks
    only that it is registered); that broker's heartbeats are refused from then on and it does
    not register again until it restarts."""
    c = peer_cluster
    bootstrap = c.nodes[1].bootstrap_servers
    since = len(c.nodes[2].log_text())
    done = ours(bootstrap, "unregister", "--id", "2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "Broker 2 is no longer registered.\n", "")
    refused = re.compile(r"Broker 2 sent a heartbeat request but received error STALE_BROKER_EPOCH\.")
    until(lambda: refused.search(c.nodes[2].log_text()[since:]), timeout=60)
    assert registered(c) == {1: False, 3: False}
    assert both(kafka_ref, bootstrap, "list-endpoints") == endpoints(c, {1: "unfenced", 3: "unfenced"})
    c.kill(2)       # the fixture starts it again: registered anew


@pytest.mark.brokers("kproto", "kafka")
def test_a_standalone_node_refuses_an_unknown_id_as_kafkas_one_node_cluster(broker, kafka_ref):
    with BrokerClient(broker.bootstrap, timeout_s=10) as client:
        body = client.request(P.unregister_broker.API.key, {"broker_id": 99})
    assert (body.error_code, body.error_message) == (ErrorCode.BROKER_ID_NOT_REGISTERED,
                                                     "Broker ID 99 is not currently registered")
    mine = ours(broker.bootstrap, "unregister", "--id", "99")
    theirs = kafka_ref.run_tool(CLUSTER_TOOL, "unregister", "--id", "99", "--bootstrap-server", broker.bootstrap)
    assert (mine.returncode, mine.stdout, theirs.returncode, theirs.stdout) == (1, "", 1, "")
    assert mine.stderr == "kproto: error: Broker ID 99 is not currently registered\n"
    assert both(kafka_ref, broker.bootstrap, "cluster-id").startswith("Cluster ID: ")
