"""``kproto cluster``: N nodes started, named with their PIDs, stopped by Ctrl-C; and
``kproto topics --describe`` on a cluster printing what Kafka's TopicCommand prints."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from click.testing import CliRunner

from kproto.tools.main import cli


def test_kproto_cluster_prints_nodes_and_ctrl_c_stops_them_all(tmp_path, kafka_ref):
    proc = subprocess.Popen([sys.executable, "-m", "kproto.tools.main", "cluster", "--brokers", "3", "--data-dir",
                             str(tmp_path / "c"), "--config", "min.insync.replicas=2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(4)]      # blocks until the cluster is ready
        ready = re.fullmatch(r"kproto cluster ready: bootstrap servers (\S+) \(data (\S+)\)\n", lines[0])
        assert ready is not None, lines
        bootstrap = ready.group(1)
        assert ready.group(2) == str(tmp_path / "c") and len(bootstrap.split(",")) == 3
        nodes = [re.fullmatch(r"node (\d)( \(controller\))?: pid (\d+) on (\S+)\n", line) for line in lines[1:]]
        assert [(m.group(1), bool(m.group(2))) for m in nodes] == [("1", True), ("2", False), ("3", False)]
        assert ",".join(m.group(4) for m in nodes) == bootstrap
        pids = [int(m.group(3)) for m in nodes]
        for pid in pids:
            os.kill(pid, 0)                     # alive
        created = CliRunner().invoke(cli, ["topics", "--bootstrap-server", bootstrap, "--create", "--topic", "demo",
                                           "--partitions", "3", "--replication-factor", "3"])
        assert created.output == "Created topic demo.\n"
        ours = CliRunner().invoke(cli, ["topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "demo"])
        kafka = kafka_ref.run_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                                   "--describe", "--topic", "demo")
        assert kafka.returncode == 0, kafka.stderr
        assert ours.output == kafka.stdout
        assert ours.output.splitlines()[1:] == [
            "\tTopic: demo\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: ",
            "\tTopic: demo\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: ",
            "\tTopic: demo\tPartition: 2\tLeader: 3\tReplicas: 3,1,2\tIsr: 3,1,2\tElr: \tLastKnownElr: "]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    for pid in pids:                            # every node stopped with it
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive, pid


def test_more_controllers_than_brokers_is_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["cluster", "--brokers", "2", "--controllers", "3", "--data-dir",
                                      str(tmp_path / "c")])
    assert result.exit_code == 1
    assert result.output == ("kproto: error: --controllers 3 is more than --brokers 2: every controller is also a "
                             "broker (or --isolated)\n")
    assert not (tmp_path / "c").exists()


def test_kproto_cluster_isolated_starts_controller_only_nodes(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kproto.tools.main", "cluster", "--brokers", "2", "--controllers",
                             "1", "--isolated", "--data-dir", str(tmp_path / "c")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(4)]      # blocks until the cluster is ready
        ready = re.fullmatch(r"kproto cluster ready: bootstrap servers (\S+) \(data \S+\)\n", lines[0])
        assert ready is not None, lines
        nodes = [re.fullmatch(r"node (\d+)( \(controller only\))?: pid (\d+) on (\S+)\n", line) for line in lines[1:]]
        assert [(m.group(1), bool(m.group(2))) for m in nodes] == [("1", False), ("2", False), ("3000", True)]
        # the bootstrap servers are the brokers only
        assert ready.group(1) == ",".join(m.group(4) for m in nodes[:2])
        created = CliRunner().invoke(cli, ["topics", "--bootstrap-server", ready.group(1), "--create", "--topic",
                                           "demo", "--partitions", "1", "--replication-factor", "2"])
        assert created.output == "Created topic demo.\n"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
