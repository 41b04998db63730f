"""The KRaft settings that make a node part of a cluster, parsed and checked: no I/O.

A node without ``process.roles`` is kproto's standalone broker (it leads every
partition of its own logs, as it always has); ``cluster_settings`` answers None
for it, so nothing about it changes. With ``process.roles`` the node belongs to
the cluster ``controller.quorum.voters`` names (``id@host:port`` each, as
Kafka's QuorumConfig.parseVoterConnections reads them).

``kproto serve`` serves what is built (docs/cluster.md): a KRaft quorum of
voters, 1 or 3 of them (or any odd number), each either a broker too
(``process.roles=broker,controller``: combined mode) or a controller only
(``process.roles=controller``: isolated mode, the node opens its controller
listener and nothing else), and brokers (``process.roles=broker``);
``check_served`` refuses the rest in one line.

A controller-only node may name ``controller.quorum.bootstrap.servers`` instead of
``controller.quorum.voters`` (KIP-853, kraft.version 1): its voters are then the
VotersRecord of its metadata log (the bootstrap checkpoint ``format --standalone``
or ``--initial-controllers`` writes, or what it fetches as an observer); the
bootstrap servers stand in the voters under ids -2, -3, ... until it knows the
leader (as Kafka's RequestManager numbers them). Its controller listener is its
``listeners`` entry named in ``controller.listener.names``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from kproto.errors import InvalidConfigError

__all__ = ["ROLES", "ClusterSettings", "parse_voters", "cluster_settings", "check_served"]

ROLES = ("broker", "controller")


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``1@host:9093,2@host:9094`` -> {1: (host, 9093), 2: (host, 9094)}."""
    voters: dict[int, tuple[str, int]] = {}
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        node, at, address = item.partition("@")
        host, colon, port = address.rpartition(":")
        try:
            if not (at and colon and host):
                raise ValueError
            node_id, port_number = int(node), int(port)
        except ValueError:
            raise InvalidConfigError(f"Invalid value {text} for configuration controller.quorum.voters: "
                                     f"{item!r} is not of the form id@host:port") from None
        if node_id in voters:
            raise InvalidConfigError(f"Invalid value {text} for configuration controller.quorum.voters: "
                                     f"node {node_id} is named twice")
        voters[node_id] = (host.strip("[]"), port_number)
    return voters


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    roles: frozenset[str]
    node_id: int
    voters: dict[int, tuple[str, int]]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str | None
    replica_lag_time_max_ms: int
    #: where this node's controller listener binds (None: no controller)
    controller_address: tuple[str, int] | None = None
    #: the voters are the metadata log's (controller.quorum.bootstrap.servers, kraft.version 1)
    dynamic_voters: bool = False


def cluster_settings(values: Mapping[str, Any]) -> ClusterSettings | None:
    """None for a standalone node (no ``process.roles``); else the checked settings."""
    raw_roles = [r.strip() for r in str(values.get("process.roles") or "").split(",") if r.strip()]
    if not raw_roles:
        return None
    unknown = [r for r in raw_roles if r not in ROLES]
    if unknown:
        raise InvalidConfigError(f"Invalid value {values['process.roles']} for configuration process.roles: "
                                 f"unknown role {unknown[0]!r} (roles are broker and controller)")
    voters = parse_voters(str(values.get("controller.quorum.voters") or ""))
    bootstrap = str(values.get("controller.quorum.bootstrap.servers") or "")
    dynamic = not voters and bool(bootstrap.strip())
    if dynamic:
        if raw_roles != ["controller"]:
            raise InvalidConfigError("controller.quorum.bootstrap.servers without controller.quorum.voters is served "
                                     "on controllers only (process.roles=controller) in kproto")
        voters = {-2 - i: address for i, address in enumerate(parse_voters(
            ",".join(f"{i}@{s.strip()}" for i, s in enumerate(bootstrap.split(",")) if s.strip())).values())}
    if not voters:
        raise InvalidConfigError("controller.quorum.voters must name the controllers (id@host:port,...) "
                                 "when process.roles is set")
    node_id = int(values["node.id"])
    roles = frozenset(raw_roles)
    # KafkaConfig's validateValues, Kafka's texts (a Scala Set of the voter ids)
    voter_set = f"Set({', '.join(map(str, sorted(voters)))})"
    if "controller" in roles and node_id not in voters and not dynamic:
        raise InvalidConfigError(f"If process.roles contains the 'controller' role, the node id {node_id} must "
                                 f"be included in the set of voters controller.quorum.voters={voter_set}")
    if roles == {"broker"} and node_id in voters:
        raise InvalidConfigError(f"If process.roles contains just the 'broker' role, the node id {node_id} must "
                                 f"not be included in the set of voters controller.quorum.voters={voter_set}")
    names = tuple(n.strip() for n in str(values.get("controller.listener.names") or "").split(",") if n.strip())
    if "controller" in roles and not names:
        raise InvalidConfigError("controller.listener.names must be set when process.roles has controller")
    if roles == {"controller"}:
        _check_controller_only(values, names)
    address = voters.get(node_id) if not dynamic else _listener_address(values, names)
    return ClusterSettings(roles, node_id, voters, names, values.get("inter.broker.listener.name") or None,
                           int(values.get("replica.lag.time.max.ms", 30000)), address, dynamic)


def _listener_address(values: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, int]:
    """The first controller listener's host and port from ``listeners``."""
    for item in str(values.get("listeners") or "").split(","):
        name, _, address = item.strip().partition("://")
        host, colon, port = address.rpartition(":")
        if name.upper() in {n.upper() for n in names} and colon and port.isdigit():
            return host.strip("[]") or "0.0.0.0", int(port)
    raise InvalidConfigError("listeners must hold a controller listener (controller.listener.names) when "
                             "controller.quorum.bootstrap.servers names the quorum")


def _check_controller_only(values: Mapping[str, Any], names: tuple[str, ...]) -> None:
    """A controller-only node opens no client listener (KafkaConfig's validateValues for
    process.roles=controller, Kafka's text)."""
    listeners = [item.partition("://")[0].strip().upper()
                 for item in str(values.get("listeners") or "").split(",") if item.strip()]
    if any(name not in {n.upper() for n in names} for name in listeners):
        raise InvalidConfigError("The listeners config must only contain KRaft controller listeners from "
                                 "controller.listener.names when process.roles=controller")


def check_served(settings: ClusterSettings, values: Mapping[str, Any]) -> None:
    """What kproto serves of a cluster today (a KRaft quorum of voters, brokers or
    controllers only; brokers over PLAINTEXT between them): anything else is one line."""
    protocols = str(values.get("listener.security.protocol.map") or "")
    if any(not p.strip().endswith(":PLAINTEXT") for p in protocols.split(",") if p.strip()):
        raise InvalidConfigError("listener.security.protocol.map: brokers of a kproto cluster talk PLAINTEXT "
                                 "to each other and the controller; TLS/SASL listeners are not served in a cluster yet")
