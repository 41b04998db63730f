"""KRaft cluster settings (kproto.server.cluster.settings) and ``kproto serve``'s refusal."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kproto.errors import InvalidConfigError
from kproto.server.cluster.settings import cluster_settings, parse_voters
from kproto.server.config import BrokerConfig


def settings(**props):
    return cluster_settings(BrokerConfig.from_props({k.replace("_", "."): v for k, v in props.items()}).values)


def test_a_node_without_process_roles_is_standalone():
    assert cluster_settings(BrokerConfig.from_props().values) is None
    assert BrokerConfig.from_props()["replica.lag.time.max.ms"] == 30000


def test_voters():
    s = settings(process_roles="broker,controller", node_id="2",
                 controller_quorum_voters="3@127.0.0.1:9095, 1@127.0.0.1:9093,2@[::1]:9094",
                 controller_listener_names="CONTROLLER", replica_lag_time_max_ms="500")
    assert s.roles == {"broker", "controller"} and s.node_id == 2
    assert s.voters == {3: ("127.0.0.1", 9095), 1: ("127.0.0.1", 9093), 2: ("::1", 9094)}
    assert s.controller_listener_names == ("CONTROLLER",) and s.replica_lag_time_max_ms == 500
    assert s.inter_broker_listener_name is None


@pytest.mark.parametrize("props,text", [
    ({"process.roles": "broker,zookeeper", "controller.quorum.voters": "1@h:1"},
     "Invalid value broker,zookeeper for configuration process.roles: unknown role 'zookeeper' "
     "(roles are broker and controller)"),
    ({"process.roles": "broker"},
     "controller.quorum.voters must name the controllers (id@host:port,...) when process.roles is set"),
    ({"process.roles": "broker", "controller.quorum.voters": "1@h"},
     "Invalid value 1@h for configuration controller.quorum.voters: '1@h' is not of the form id@host:port"),
    ({"process.roles": "broker", "controller.quorum.voters": "1@h:1,1@h:2"},
     "Invalid value 1@h:1,1@h:2 for configuration controller.quorum.voters: node 1 is named twice"),
    ({"process.roles": "controller", "node.id": "4", "controller.quorum.voters": "1@h:1,2@h:2",
      "controller.listener.names": "C"},
     "If process.roles contains the 'controller' role, the node id 4 must be included in the set of voters "
     "controller.quorum.voters=Set(1, 2)"),
    ({"process.roles": "controller", "controller.quorum.voters": "1@h:1"},
     "controller.listener.names must be set when process.roles has controller"),
])
def test_bad_settings_are_one_clear_error(props, text):
    with pytest.raises(InvalidConfigError) as e:
        cluster_settings(BrokerConfig.from_props(props).values)
    assert str(e.value) == text


#: KafkaConfig's checks of a node's roles: props -> the message Kafka 4.4 and kproto refuse them with
ROLE_CHECKS = [
    ({"process.roles": "controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
      "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"},
     "The listeners config must only contain KRaft controller listeners from controller.listener.names when "
     "process.roles=controller"),
    ({"process.roles": "controller", "node.id": "4", "controller.quorum.voters": "1@127.0.0.1:9093",
      "controller.listener.names": "CONTROLLER", "listeners": "CONTROLLER://127.0.0.1:9093"},
     "If process.roles contains the 'controller' role, the node id 4 must be included in the set of voters "
     "controller.quorum.voters=Set(1)"),
    ({"process.roles": "broker", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
      "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:9092"},
     "If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of voters "
     "controller.quorum.voters=Set(1)"),
]
CONTROLLER_ONLY = {"process.roles": "controller", "node.id": "3000", "controller.listener.names": "CONTROLLER",
                   "controller.quorum.voters": "3000@127.0.0.1:9093,3001@127.0.0.1:9094,3002@127.0.0.1:9095",
                   "listeners": "CONTROLLER://127.0.0.1:9093"}


def test_a_controller_only_node_is_accepted_with_its_controller_listener_only():
    s = cluster_settings(BrokerConfig.from_props(CONTROLLER_ONLY).values)
    assert s.roles == {"controller"} and s.node_id == 3000 and sorted(s.voters) == [3000, 3001, 3002]
    without = {k: v for k, v in CONTROLLER_ONLY.items() if k != "listeners"}     # kproto's default: none
    assert cluster_settings(BrokerConfig.from_props(without).values).roles == {"controller"}


@pytest.mark.parametrize("props,text", ROLE_CHECKS)
def test_roles_are_checked_as_kafkas_config(props, text):
    with pytest.raises(InvalidConfigError) as e:
        cluster_settings(BrokerConfig.from_props(props).values)
    assert str(e.value) == text


def test_kafka_refuses_and_accepts_the_same_roles(kafka_ref, tmp_path):
    """Kafka's StorageTool format validates the node's KafkaConfig: its message is kproto's."""
    for i, (props, text) in enumerate([*ROLE_CHECKS, (CONTROLLER_ONLY, None)]):
        path = tmp_path / f"{i}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in {**props, "log.dirs": tmp_path / f"d{i}"}.items()))
        r = kafka_ref.run_tool("kafka.tools.StorageTool", "format", "-t", "MkU3OEVBNTcwNTJENDM2Qg", "-c", str(path))
        if text is None:
            assert r.returncode == 0, r.stdout + r.stderr
        else:
            assert r.returncode != 0 and f"IllegalArgumentException: requirement failed: {text}\n" in r.stderr


def test_parse_voters_skips_empty_items():
    assert parse_voters("") == {} and parse_voters("5@a:1,") == {5: ("a", 1)}


@pytest.mark.parametrize("configs, text", [
    (["process.roles=controller", "node.id=1", "controller.quorum.voters=1@127.0.0.1:9093",
      "controller.listener.names=C", "listeners=PLAINTEXT://127.0.0.1:0"],
     "The listeners config must only contain KRaft controller listeners from controller.listener.names when "
     "process.roles=controller"),
    (["process.roles=broker", "node.id=1", "controller.quorum.voters=1@127.0.0.1:9093"],
     "If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of voters "
     "controller.quorum.voters=Set(1)"),
    (["process.roles=broker", "node.id=2", "controller.quorum.voters=1@127.0.0.1:9093",
      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL"],
     "listener.security.protocol.map: brokers of a kproto cluster talk PLAINTEXT to each other and the "
     "controller; TLS/SASL listeners are not served in a cluster yet"),
])
def test_serve_refuses_what_no_cluster_serves_yet_in_one_line(tmp_path, configs, text):
    from kproto.tools.main import cli
    args = ["serve", "--data-dir", str(tmp_path / "d")]
    for c in configs:
        args += ["--config", c]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert result.output.strip() == f"kproto: error: {text}"
    assert not (tmp_path / "d").exists()
    bad = CliRunner().invoke(cli, ["serve", "--data-dir", str(tmp_path / "d"), "--config", "process.roles=broker"])
    assert bad.exit_code != 0 and "controller.quorum.voters must name the controllers" in bad.output


def test_a_controller_may_name_bootstrap_servers_instead_of_voters():
    """KIP-853: the voters are the metadata log's; the bootstrap servers stand in under ids
    -2, -3, ... (Kafka's RequestManager) and the controller binds its listeners entry."""
    s = settings(process_roles="controller", node_id="3001", controller_listener_names="CONTROLLER",
                 listeners="CONTROLLER://127.0.0.1:9095", listener_security_protocol_map="CONTROLLER:PLAINTEXT",
                 controller_quorum_bootstrap_servers="127.0.0.1:9093, [::1]:9094")
    assert (s.dynamic_voters, s.voters, s.controller_address) == (
        True, {-2: ("127.0.0.1", 9093), -3: ("::1", 9094)}, ("127.0.0.1", 9095))
    static = settings(process_roles="controller", node_id="1", controller_listener_names="CONTROLLER",
                      controller_quorum_voters="1@127.0.0.1:9093")
    assert (static.dynamic_voters, static.controller_address) == (False, ("127.0.0.1", 9093))
    with pytest.raises(InvalidConfigError, match="served on controllers only"):
        settings(process_roles="broker", node_id="1", controller_quorum_bootstrap_servers="127.0.0.1:9093")
    with pytest.raises(InvalidConfigError, match="listeners must hold a controller listener"):
        settings(process_roles="controller", node_id="3001", controller_listener_names="CONTROLLER",
                 controller_quorum_bootstrap_servers="127.0.0.1:9093")
