"""The controller's operator APIs: ElectLeaders, AlterPartitionReassignments,
ListPartitionReassignments, UnregisterBroker, and the automatic preferred-leader balancing.

Theory of operation (Kafka's ReplicationControlManager.electLeaders /
alterPartitionReassignments / listPartitionReassignments, QuorumController's
maybeBalancePartitionLeaders):

* Each request is one decision: its PartitionChangeRecords go to the metadata
  log as one batch, and the answer says per partition what happened, with
  Kafka's error codes and texts (the rules are election.py's).
* A reassignment that adds replicas is written in two steps: first the
  replicas grow (target + removing) with ``adding``/``removing`` set, so the
  adding brokers become followers and fetch; then, when an AlterPartition from
  the leader brings every replica of the target into the ISR, the controller
  completes it (``complete_reassignment``, called from the AlterPartition path).
* UnregisterBroker (ReplicationControlManager.unregisterBroker) checks only that the
  id is registered: a live, unfenced broker is unregistered too (measured on Kafka
  4.4: it answers NONE and the broker stays out). The broker leaves every ISR and
  the partitions it led elect again, as fencing does (handleBrokerUnregistered),
  then an UnregisterBrokerRecord removes its registration; its replicas stay in
  the partitions' replica lists, offline.
* Balancing: with ``auto.leader.rebalance.enable`` (Kafka's default true), every
  ``leader.imbalance.check.interval.seconds`` the controller runs a preferred
  election for every partition led by another replica than its first. As
  KRaft's QuorumController, it does not read ``leader.imbalance.per.broker.percentage``
  (only the ZooKeeper-era KafkaController did).

Registered on a ``Controller`` by ``install`` (its handler table gains the three
APIs; its task list the balancer).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kproto.errors import ErrorCode, KafkaError
from kproto.schemas import protocol as P
from kproto.server.cluster import image as I
from kproto.server.cluster.election import (
    NO_LEADER, cancel_reassignment, preferred_leader, start_reassignment, unclean_leader,
)

log = logging.getLogger("kproto.server.controller")

__all__ = ["install", "elect_leaders", "alter_partition_reassignments", "list_partition_reassignments",
           "balance_partition_leaders", "validate_assignment", "unregister_broker"]

PREFERRED, UNCLEAN = 0, 1


def install(controller: Any) -> None:
    """Add the operator APIs to ``controller``'s handler table."""
    async def elect(body: Any, version: int) -> dict:
        return elect_leaders(controller, body)

    async def alter(body: Any, version: int) -> dict:
        return alter_partition_reassignments(controller, body)

    async def listing(body: Any, version: int) -> dict:
        return list_partition_reassignments(controller, body)

    async def unregister(body: Any, version: int) -> dict:
        return unregister_broker(controller, body.broker_id)

    controller.handlers.update({
        P.unregister_broker.API.key: (P.unregister_broker.API.served, unregister),
        P.elect_leaders.API.key: (P.elect_leaders.API.served, elect),
        P.alter_partition_reassignments.API.key: (P.alter_partition_reassignments.API.served, alter),
        P.list_partition_reassignments.API.key: (P.list_partition_reassignments.API.served, listing),
    })


async def run_balancer(controller: Any) -> None:
    """QuorumController.maybeScheduleNextBalancePartitionLeaders, as a loop on the interval."""
    cfg = controller.config
    if not cfg["auto.leader.rebalance.enable"]:
        return
    interval = max(cfg["leader.imbalance.check.interval.seconds"], 1)
    while True:
        await asyncio.sleep(interval)
        if controller.active:       # the quorum leader whose epoch start is committed
            balance_partition_leaders(controller)


# -- ElectLeaders -------------------------------------------------------------------------------

def _elect(controller: Any, topic: str, partition: int, election_type: int,
           records: list) -> tuple[ErrorCode, str | None]:
    """ReplicationControlManager.electLeader."""
    image = controller.image
    t = image.topics.get(topic)
    if t is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    reg = t.partitions.get(partition)
    if reg is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    alive = image.alive()
    new, error = (preferred_leader if election_type == PREFERRED else unclean_leader)(reg, alive)
    if error == ErrorCode.NONE:
        records += controller._change(topic, partition, new)
    return error, None


def elect_leaders(controller: Any, body: Any) -> dict:
    election_type = body.get("election_type", PREFERRED)
    if election_type not in (PREFERRED, UNCLEAN):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                "replica_election_results": []}
    records: list = []
    results = []
    if body.topic_partitions is None:
        # every partition; those needing no election are left out of the answer
        for name, t in list(controller.image.topics.items()):
            parts = []
            for p in sorted(t.partitions):
                error, message = _elect(controller, name, p, election_type, records)
                if error != ErrorCode.ELECTION_NOT_NEEDED:
                    parts.append({"partition_id": p, "error_code": error, "error_message": message})
            results.append({"topic": name, "partition_result": parts})
    else:
        for t in body.topic_partitions:
            parts = []
            for p in t.partitions:
                error, message = _elect(controller, t.topic, p, election_type, records)
                parts.append({"partition_id": p, "error_code": error, "error_message": message})
            results.append({"topic": t.topic, "partition_result": parts})
    controller.write(records)
    return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": results}


def balance_partition_leaders(controller: Any) -> int:
    """ReplicationControlManager.maybeBalancePartitionLeaders: a preferred election for every
    imbalanced partition (its leader not its first replica); -> how many moved."""
    records: list = []
    alive = controller.image.alive()
    for name, t in list(controller.image.topics.items()):
        for p, reg in sorted(t.partitions.items()):
            if reg.leader != reg.replicas[0]:
                new, error = preferred_leader(reg, alive)
                if error == ErrorCode.NONE:
                    records += controller._change(name, p, new)
    if records:
        log.info("maybeBalancePartitionLeaders: %d preferred leader(s) elected", len(records))
        controller.write(records)
    return len(records)


# -- UnregisterBroker ---------------------------------------------------------------------------

def not_registered(broker_id: int) -> str:
    """BrokerIdNotRegisteredException's text in ReplicationControlManager.unregisterBroker."""
    return f"Broker ID {broker_id} is not currently registered"


def unregister_broker(controller: Any, broker_id: int) -> dict:
    """ReplicationControlManager.unregisterBroker + handleBrokerUnregistered: the broker out of
    every ISR, ELR and leadership, then its UnregisterBrokerRecord, in one batch."""
    image = controller.image
    info = image.brokers.get(broker_id)
    if info is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.BROKER_ID_NOT_REGISTERED,
                "error_message": not_registered(broker_id)}
    # out of every ISR and ELR, as a new incarnation's unclean shutdown takes it out
    records = controller._unclean_shutdown(broker_id)
    records.append((I.UNREGISTER_BROKER, {"broker_id": broker_id, "broker_epoch": info.epoch}))
    log.info("unregistering broker %d (epoch %d)", broker_id, info.epoch)
    controller.write(records)
    controller.sessions.pop(broker_id, None)    # BrokerHeartbeatManager.remove on replay
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None}


# -- reassignments ------------------------------------------------------------------------------

def validate_assignment(replicas: list[int], registered: Any) -> None:
    """ReplicationControlManager.validateManualPartitionAssignment (texts measured on Kafka 4.4)."""
    if not replicas:
        raise KafkaError("The manual partition assignment includes an empty replica list.",
                         error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    seen: set[int] = set()
    for r in replicas:
        if r in seen:
            raise KafkaError(f"The manual partition assignment includes the broker {r} more than once.",
                             error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        seen.add(r)
        if r not in registered:
            raise KafkaError(f"The manual partition assignment includes broker {r}, but no such broker is "
                             "registered.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)


def _reassign(controller: Any, topic: str, partition: int, replicas: list[int] | None) -> list:
    """alterPartitionReassignment: the records for one partition, or KafkaError."""
    image = controller.image
    t = image.topics.get(topic)
    if t is None:
        raise KafkaError(f"Unable to find a topic named {topic}.", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    reg = t.partitions.get(partition)
    if reg is None:
        raise KafkaError(f"Unable to find partition {topic}:{partition}.",
                         error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    alive = image.alive()
    if replicas is None:
        if not reg.reassigning:
            raise KafkaError(None, error_code=ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        new = cancel_reassignment(reg, alive, unclean=controller._unclean(topic), where=f"{topic}:{partition}")
    else:
        validate_assignment(replicas, image.brokers)
        new = start_reassignment(reg, list(replicas), alive)
    return controller._change(topic, partition, new)


def alter_partition_reassignments(controller: Any, body: Any) -> dict:
    """ReplicationControlManager.alterPartitionReassignments: one batch for the whole request.
    ``allow_replication_factor_change`` false (v1, KIP-860) is echoed but not enforced yet:
    Kafka 4.4 refuses a change of replication factor then, in a text not measured here (a
    one-broker Kafka cannot show it: the other broker is refused first)."""
    records: list = []
    responses = []
    for t in body.topics:
        parts = []
        for p in t.partitions:
            out = {"partition_index": p.partition_index, "error_code": 0, "error_message": None}
            try:
                records += _reassign(controller, t.name, p.partition_index, p.replicas)
            except KafkaError as e:
                # ApiError.fromThrowable: no message when it is the error's generic one
                message = str(e)
                out.update(error_code=e.error_code,
                           error_message=None if message == e.error_code.description else message)
            parts.append(out)
        responses.append({"name": t.name, "partitions": parts})
    if records:
        log.info("altered %d partition reassignment(s)", len(records))
        controller.write(records)
    return {"throttle_time_ms": 0, "allow_replication_factor_change": body.get("allow_replication_factor_change", True),
            "error_code": 0, "error_message": None, "responses": responses}


def list_partition_reassignments(controller: Any, body: Any) -> dict:
    """listPartitionReassignments: every ongoing one (``topics`` null), or those named; unknown
    topics and partitions are left out, not refused."""
    image = controller.image
    if body.topics is None:
        wanted = [(name, sorted(t.partitions)) for name, t in image.topics.items()]
    else:
        wanted = [(t.name, list(t.partition_indexes)) for t in body.topics]
    topics = []
    for name, indexes in wanted:
        t = image.topics.get(name)
        if t is None:
            continue
        parts = [{"partition_index": p, "replicas": list(reg.replicas), "adding_replicas": list(reg.adding),
                  "removing_replicas": list(reg.removing)}
                 for p in indexes for reg in [t.partitions.get(p)] if reg is not None and reg.reassigning]
        if parts:
            topics.append({"name": name, "partitions": parts})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics}


__all__ += ["run_balancer", "NO_LEADER"]
