"""The controller's rules for where replicas go and who leads: no I/O.

Theory of operation:

* **Placement** (``assign_replicas``) is Kafka's rack-unaware round robin
  (AdminUtils.assignReplicasToBrokersRackUnaware): the first replica of
  partition p is broker ``(p + start) mod n``; the others follow it at a shift
  that grows by one every n partitions, so leaders and followers both spread.
  KRaft's controller (StripedReplicaPlacer) shuffles instead; the fixed
  ``start``/``shift`` make kproto's placement reproducible, with Kafka's texts
  for an impossible replication factor.
* **Election** (``elect_leader``, PartitionChangeBuilder.electLeader): the
  first replica, in assignment order, that is alive and in the ISR; with
  ``unclean.leader.election.enable``, else the first alive replica (it may
  lack acknowledged records: that is what "unclean" means); else none, and the
  partition is offline (leader -1).
* **Fencing** (``fence_broker``, ReplicationControlManager.handleBrokerFenced):
  a broker that stopped heartbeating leaves every ISR it was in, except that
  an ISR never becomes empty (its last member stays, so a later clean election
  knows who holds every acknowledged record), and partitions it led elect
  again. Every leader or ISR change bumps the partition epoch; a leader change
  bumps the leader epoch.
* **Preferred election** (``preferred_leader``, ElectLeaders type 0): the
  first replica, when it is alive and in the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kproto.errors import ErrorCode, KafkaError

__all__ = ["NO_LEADER", "PartitionRegistration", "assign_replicas", "elect_leader", "fence_broker",
           "unfence_broker", "preferred_leader"]

#: MetadataResponse's leader of an offline partition (LeaderConstants.NO_LEADER).
NO_LEADER = -1


#: Kafka 4.4's StripedReplicaPlacer (measured; before log directory cordoning: "... are registered.").
TOO_FEW_BROKERS = "only {} broker(s) are registered or some brokers have all their log directories cordoned."


def assign_replicas(partitions: int, replication_factor: int, brokers: list[int], *, start: int = 0,
                    shift: int = 0, first_partition: int = 0) -> dict[int, list[int]]:
    """partition -> replicas (first = preferred leader) over ``brokers`` (sorted ids)."""
    if replication_factor <= 0:
        raise KafkaError("Replication factor must be larger than 0.",
                         error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor > len(brokers):
        # KRaft's text (StripedReplicaPlacer.throwInvalidReplicationFactorIfTooFewBrokers)
        raise KafkaError(f"Unable to replicate the partition {replication_factor} time(s): The target "
                         f"replication factor of {replication_factor} cannot be reached because "
                         f"{TOO_FEW_BROKERS.format(len(brokers))}", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
    n = len(brokers)
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        out[p] = [brokers[first]] + [brokers[(first + 1 + (shift + j) % (n - 1)) % n]
                                     for j in range(replication_factor - 1)]
    return out


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition as the controller records it (PartitionRecord / PartitionChangeRecord)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0

    @classmethod
    def new(cls, replicas: list[int], alive: set[int]) -> "PartitionRegistration":
        isr = tuple(r for r in replicas if r in alive)
        return cls(tuple(replicas), isr, elect_leader(tuple(replicas), isr, alive, unclean=False))

    def change(self, *, isr: tuple[int, ...] | None = None, leader: int | None = None) -> "PartitionRegistration":
        """A new ISR and/or leader; epochs bumped as PartitionChangeBuilder does."""
        isr = self.isr if isr is None else isr
        leader = self.leader if leader is None else leader
        if isr == self.isr and leader == self.leader:
            return self
        return replace(self, isr=isr, leader=leader, partition_epoch=self.partition_epoch + 1,
                       leader_epoch=self.leader_epoch + (leader != self.leader))


def elect_leader(replicas: tuple[int, ...], isr: tuple[int, ...], alive: set[int], *, unclean: bool) -> int:
    for r in replicas:
        if r in isr and r in alive:
            return r
    if unclean:
        for r in replicas:
            if r in alive:
                return r
    return NO_LEADER


def fence_broker(reg: PartitionRegistration, broker: int, alive: set[int], *,
                 unclean: bool) -> PartitionRegistration:
    """``broker`` is gone (``alive`` no longer holds it)."""
    isr = tuple(r for r in reg.isr if r != broker) or reg.isr     # never an empty ISR
    leader = reg.leader
    if leader == broker or leader == NO_LEADER:
        leader = elect_leader(reg.replicas, isr, alive, unclean=unclean)
        if leader != NO_LEADER and leader not in isr:               # an unclean election
            isr = (leader,)
    return reg.change(isr=isr, leader=leader)


def unfence_broker(reg: PartitionRegistration, broker: int, alive: set[int], *,
                   unclean: bool) -> PartitionRegistration:
    """``broker`` is back: an offline partition may elect it. It rejoins the ISR only
    once it caught up (the leader's AlterPartition), never here."""
    if reg.leader != NO_LEADER or broker not in reg.replicas:
        return reg
    leader = elect_leader(reg.replicas, reg.isr, alive, unclean=unclean)
    if leader != NO_LEADER and leader not in reg.isr:
        return reg.change(isr=(leader,), leader=leader)
    return reg.change(leader=leader)


def preferred_leader(reg: PartitionRegistration, alive: set[int]) -> tuple[PartitionRegistration, ErrorCode]:
    """ElectLeaders with election type PREFERRED (0)."""
    preferred = reg.replicas[0]
    if reg.leader == preferred:
        return reg, ErrorCode.ELECTION_NOT_NEEDED
    if preferred not in alive or preferred not in reg.isr:
        return reg, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    return reg.change(leader=preferred), ErrorCode.NONE
