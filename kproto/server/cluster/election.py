"""The controller's rules for where replicas go and who leads: no I/O.

Theory of operation:

* **Placement** (``assign_replicas``) is Kafka's rack-unaware round robin
  (AdminUtils.assignReplicasToBrokersRackUnaware): the first replica of
  partition p is broker ``(p + start) mod n``; the others follow it at a shift
  that grows by one every n partitions, so leaders and followers both spread.
  KRaft's controller (StripedReplicaPlacer) shuffles instead; the fixed
  ``start``/``shift`` make kproto's placement reproducible, with Kafka's texts
  for an impossible replication factor. Where brokers name a ``broker.rack``,
  ``assign_replicas_rack_aware`` is StripedReplicaPlacer's rack-aware round
  robin: racks in name order, each partition's first replica from the next
  rack in turn, the others one per rack after it, so a partition spans
  min(RF, racks) racks and leaders and replicas spread evenly. Kafka starts
  the rack and broker lists at random offsets and shuffles them after a full
  round; kproto starts at 0 and does not shuffle (reproducible placement).
* **Election** (``elect_leader``, PartitionChangeBuilder.electLeader): the
  first replica, in assignment order, that is alive and in the ISR; with
  ``unclean.leader.election.enable``, else the first alive replica (it may
  lack acknowledged records: that is what "unclean" means); else none, and the
  partition is offline (leader -1).
* **Fencing** (``fence_broker``, ReplicationControlManager.handleBrokerFenced):
  a broker that stopped heartbeating leaves every ISR it was in, and
  partitions it led elect again. Every leader or ISR change bumps the
  partition epoch; a leader change bumps the leader epoch.
* **Eligible leader replicas** (KIP-966, ``rebuild``, PartitionChangeBuilder
  with eligible.leader.replicas.version 1, Kafka 4's default; ``min_isr`` given):
  when the ISR shrinks below the topic's ``min.insync.replicas`` (at most the
  replication factor) the members it loses join the ELR: they held every
  record acknowledged while the ISR was at the minimum. The ISR may become
  empty; an empty ISR elects from the ELR (the leader alone becomes the ISR).
  The first time a partition loses its last ISR member, its leader is kept as
  LastKnownElr, elected when ISR and ELR are both empty (balanced recovery,
  useLastKnownLeaderInBalancedRecovery); a broker's new incarnation
  (``unclean_shutdown``, handleBrokerUncleanShutdown) leaves every ISR and ELR,
  as its log may lack what it acknowledged. An ISR back at the minimum clears
  the ELR. Without ``min_isr`` (ELR off, Kafka 3.x) an ISR never becomes empty:
  its last member stays.
* **Preferred election** (``preferred_leader``, ElectLeaders type 0): the
  first replica, when it is alive and in the ISR. **Unclean election**
  (``unclean_leader``, type 1) only where the partition has no leader.
* **Reassignment** (``start_reassignment``, ``complete_reassignment``,
  ``cancel_reassignment``; ReplicationControlManager.changePartitionReassignment,
  PartitionReassignmentReplicas, PartitionReassignmentRevert): the replicas
  become target + removing, with ``adding``/``removing`` recorded; once the
  ISR holds every replica of the target, the removing ones leave the replicas
  and the ISR and a leader outside the target is replaced. A cancel drops the
  adding replicas (from replicas and ISR) and clears both lists.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kproto.errors import ErrorCode, KafkaError

__all__ = ["NO_LEADER", "PartitionRegistration", "assign_replicas", "assign_replicas_rack_aware", "elect_leader", "fence_broker",
           "unfence_broker", "unclean_shutdown", "rebuild", "preferred_leader", "unclean_leader", "start_reassignment",
           "complete_reassignment", "cancel_reassignment"]

#: MetadataResponse's leader of an offline partition (LeaderConstants.NO_LEADER).
NO_LEADER = -1


#: Kafka 4.4's StripedReplicaPlacer (measured; before log directory cordoning: "... are registered.").
TOO_FEW_BROKERS = "only {} broker(s) are registered or some brokers have all their log directories cordoned."


def _check_replication_factor(replication_factor: int, brokers: int) -> None:
    if replication_factor <= 0:
        raise KafkaError("Replication factor must be larger than 0.",
                         error_code=ErrorCode.INVALID_REPLICATION_FACTOR)
    if replication_factor > brokers:
        # KRaft's text (StripedReplicaPlacer.throwInvalidReplicationFactorIfTooFewBrokers)
        raise KafkaError(f"Unable to replicate the partition {replication_factor} time(s): The target "
                         f"replication factor of {replication_factor} cannot be reached because "
                         f"{TOO_FEW_BROKERS.format(brokers)}", error_code=ErrorCode.INVALID_REPLICATION_FACTOR)


def assign_replicas(partitions: int, replication_factor: int, brokers: list[int], *, start: int = 0,
                    shift: int = 0, first_partition: int = 0) -> dict[int, list[int]]:
    """partition -> replicas (first = preferred leader) over ``brokers`` (sorted ids)."""
    _check_replication_factor(replication_factor, len(brokers))
    n = len(brokers)
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        out[p] = [brokers[first]] + [brokers[(first + 1 + (shift + j) % (n - 1)) % n]
                                     for j in range(replication_factor - 1)]
    return out


class _Rack:
    """StripedReplicaPlacer.BrokerList: a rack's brokers, walked once per placement (epoch),
    each placement starting one further."""

    def __init__(self, brokers: list[int]) -> None:
        self.brokers, self.index, self.offset, self.epoch = sorted(brokers), 0, 0, 0

    def next(self, epoch: int) -> int:
        if self.epoch != epoch:
            self.epoch, self.index, self.offset = epoch, 0, (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        self.index += 1
        return self.brokers[(self.index - 1 + self.offset) % len(self.brokers)]


def assign_replicas_rack_aware(partitions: int, replication_factor: int, racks: dict[int, str | None], *,
                               first_partition: int = 0) -> dict[int, list[int]]:
    """partition -> replicas over the brokers of ``racks`` (broker -> its rack, None for none:
    a rack of its own, first), as StripedReplicaPlacer.RackList.place does."""
    _check_replication_factor(replication_factor, len(racks))
    names = sorted(set(racks.values()), key=lambda r: (r is not None, r or ""))
    lists = [_Rack([b for b, r in racks.items() if r == name]) for name in names]
    epoch = offset = 0
    out: dict[int, list[int]] = {}
    for p in range(first_partition, first_partition + partitions):
        if epoch == len(racks) and len(racks) > 1:
            epoch = 0                               # Kafka shuffles racks and brokers here
        offset %= len(lists)
        first = offset
        while (leader := lists[first].next(epoch)) < 0:
            first = (first + 1) % len(lists)
        replicas, at = [leader], offset
        for _ in range(replication_factor - 1):     # one per rack from the offset on, the leader's skipped once
            result = -1
            while result < 0:
                if at == first:
                    first = -1
                else:
                    result = lists[at].next(epoch)
                at = (at + 1) % len(lists)
            replicas.append(result)
        out[p] = replicas
        epoch += 1
        offset += 1
    return out


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition as the controller records it (PartitionRecord / PartitionChangeRecord)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: tuple[int, ...] = ()      # a reassignment's replicas not yet caught up
    removing: tuple[int, ...] = ()    # a reassignment's replicas to drop once it completes
    elr: tuple[int, ...] = ()         # eligible leader replicas (KIP-966)
    last_known_elr: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        """PartitionReassignmentReplicas.isReassignmentInProgress."""
        return bool(self.adding or self.removing)

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

    def reassign(self, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, adding: tuple[int, ...],
                 removing: tuple[int, ...]) -> "PartitionRegistration":
        """A change of the replica set; a replica leaving it bumps the leader epoch even when the
        leader stays (PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded)."""
        new = replace(self, replicas=replicas, isr=isr, leader=leader, adding=adding, removing=removing)
        if new == self:
            return self
        bump = leader != self.leader or not set(self.replicas) <= set(replicas)
        return replace(new, partition_epoch=self.partition_epoch + 1, leader_epoch=self.leader_epoch + bump)


def elect_leader(replicas: tuple[int, ...], isr: tuple[int, ...], alive: set[int], *, unclean: bool) -> int:
    for r in replicas:
        if r in isr and r in alive:
            return r
    if unclean:
        for r in replicas:
            if r in alive:
                return r
    return NO_LEADER


def rebuild(reg: PartitionRegistration, isr: tuple[int, ...], alive: set[int], *, min_isr: int, unclean: bool,
            unclean_shutdown: int | None = None) -> PartitionRegistration:
    """PartitionChangeBuilder.build with the ELR on, for a target ``isr``: the ELR tracked
    (maybePopulateTargetElr), a leader elected (electAnyLeader, tryElection), the LastKnownElr
    kept (maybeUpdateLastKnownLeader). ``alive``: the acceptable leaders."""
    elr = reg.elr
    if len(isr) >= min_isr:
        elr = ()
    else:   # the ELR and the old ISR, less the new ISR and a broker that shut down uncleanly
        elr = tuple(sorted(r for r in set(reg.elr) | set(reg.isr) if r not in isr and r != unclean_shutdown))

    def valid(r: int) -> bool:      # isValidNewLeader
        return (r in isr or (not isr and r in elr)) and r in alive

    was_unclean = False
    if valid(reg.leader):
        leader = reg.leader
    else:
        leader = next((r for r in reg.replicas if valid(r)), NO_LEADER)
        if leader == NO_LEADER and not isr and not elr and len(reg.last_known_elr) == 1:
            # canElectLastKnownLeader: elected as an unclean leader (Kafka checks nothing more)
            leader, was_unclean = reg.last_known_elr[0], True
        elif leader == NO_LEADER and unclean:
            leader = next((r for r in reg.replicas if r in alive), NO_LEADER)
            was_unclean = leader != NO_LEADER
    if leader != reg.leader and leader in elr:          # elected from the ELR: it alone is the ISR
        isr, elr = (leader,), tuple(r for r in elr if r != leader)
    if was_unclean:                 # the ISR forced to the new leader; no ELR after an unclean election
        isr, elr = (leader,), ()
    last_known = reg.last_known_elr
    if not isr and isr != reg.isr and last_known != (reg.leader,):
        last_known = (reg.leader,)  # the first time the partition becomes leaderless
    elif leader != NO_LEADER:
        last_known = ()
    new = reg.change(isr=isr, leader=leader)
    if (elr, last_known) != (reg.elr, reg.last_known_elr):
        new = replace(new, elr=elr, last_known_elr=last_known,
                      partition_epoch=reg.partition_epoch + 1)
    return new


def unclean_shutdown(reg: PartitionRegistration, broker: int, alive: set[int], *, min_isr: int,
                     unclean: bool) -> PartitionRegistration:
    """A new incarnation of ``broker`` registered (ReplicationControlManager.handleBrokerUncleanShutdown):
    it leaves the ISR and the ELR, and leads nothing until a later election."""
    if broker not in reg.isr and broker not in reg.elr:
        return reg
    return rebuild(reg, tuple(r for r in reg.isr if r != broker), alive - {broker}, min_isr=min_isr,
                   unclean=unclean, unclean_shutdown=broker)


def fence_broker(reg: PartitionRegistration, broker: int, alive: set[int], *,
                 unclean: bool, min_isr: int | None = None) -> PartitionRegistration:
    """``broker`` is gone (``alive`` no longer holds it); ``min_isr`` (the topic's
    effective min.insync.replicas) turns the ELR on."""
    if min_isr is not None:
        return rebuild(reg, tuple(r for r in reg.isr if r != broker), alive - {broker}, min_isr=min_isr,
                       unclean=unclean)
    isr = tuple(r for r in reg.isr if r != broker) or reg.isr     # never an empty ISR
    leader = reg.leader
    if leader == broker or leader == NO_LEADER:
        leader = elect_leader(reg.replicas, isr, alive, unclean=unclean)
        if leader != NO_LEADER and leader not in isr:               # an unclean election
            isr = (leader,)
    return reg.change(isr=isr, leader=leader)


def unfence_broker(reg: PartitionRegistration, broker: int, alive: set[int], *,
                   unclean: bool, min_isr: int | None = None) -> PartitionRegistration:
    """``broker`` is back: an offline partition may elect it. It rejoins the ISR only
    once it caught up (the leader's AlterPartition), never here."""
    if reg.leader != NO_LEADER or broker not in reg.replicas:
        return reg
    if min_isr is not None:
        return rebuild(reg, reg.isr, alive, min_isr=min_isr, unclean=unclean)
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


def unclean_leader(reg: PartitionRegistration, alive: set[int]) -> tuple[PartitionRegistration, ErrorCode]:
    """ElectLeaders with election type UNCLEAN (1): only a partition with no leader elects, first
    from its ISR, else any alive replica (which becomes the ISR); none: ELIGIBLE_LEADERS_NOT_AVAILABLE
    (ReplicationControlManager.electLeader)."""
    if reg.leader != NO_LEADER:
        return reg, ErrorCode.ELECTION_NOT_NEEDED
    leader = elect_leader(reg.replicas, reg.isr, alive, unclean=True)
    if leader == NO_LEADER:
        return reg, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    return reg.change(leader=leader, isr=reg.isr if leader in reg.isr else (leader,)), ErrorCode.NONE


def _completed(replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...],
               removing: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """PartitionReassignmentReplicas.maybeCompleteReassignment: (replicas, ISR) once the ISR
    without the removing replicas is not empty and holds every replica left, else None."""
    if not adding and not removing:
        return None
    isr = tuple(r for r in isr if r not in removing)
    replicas = tuple(r for r in replicas if r not in removing)
    if not isr or not replicas or not set(replicas) <= set(isr):
        return None
    return replicas, isr


def _build(reg: PartitionRegistration, replicas: tuple[int, ...], isr: tuple[int, ...], adding: tuple[int, ...],
           removing: tuple[int, ...], alive: set[int]) -> PartitionRegistration:
    """PartitionChangeBuilder.build for a reassignment: complete it if the ISR allows, then
    replace a leader no longer in the ISR (the first of the replicas in it); one record."""
    done = _completed(replicas, isr, adding, removing)
    if done is not None:
        (replicas, isr), adding, removing = done, (), ()
    leader = reg.leader
    if leader not in isr or leader not in replicas or leader not in alive:
        leader = elect_leader(replicas, isr, alive, unclean=False)
    return reg.reassign(replicas, isr, leader, adding, removing)


def complete_reassignment(reg: PartitionRegistration, alive: set[int], *,
                          isr: tuple[int, ...] | None = None) -> PartitionRegistration:
    """``reg`` with the ISR ``isr`` (an AlterPartition's; default its own), the reassignment
    completed if that ISR holds its target."""
    isr = reg.isr if isr is None else isr
    if not reg.reassigning:
        return reg.change(isr=isr)
    return _build(reg, reg.replicas, isr, reg.adding, reg.removing, alive)


def start_reassignment(reg: PartitionRegistration, target: list[int], alive: set[int]) -> PartitionRegistration:
    """changePartitionReassignment: replicas = target then the removing ones (both difference
    sets sorted, as Kafka's TreeSets), completed at once when the ISR already allows it."""
    removing = tuple(sorted(set(reg.replicas) - set(target)))
    adding = tuple(sorted(set(target) - set(reg.replicas)))
    return _build(reg, tuple(target) + removing, reg.isr, adding, removing, alive)


def cancel_reassignment(reg: PartitionRegistration, alive: set[int], *, unclean: bool,
                        where: str) -> PartitionRegistration:
    """PartitionReassignmentRevert: the original replicas back (the adding ones leave replicas
    and ISR); an ISR left empty keeps the first original replica, which needs unclean election
    (KafkaError INVALID_REPLICA_ASSIGNMENT when the topic does not allow it); ``where`` is
    ``topic:partition`` for that message."""
    replicas = tuple(r for r in reg.replicas if r not in reg.adding)
    isr = tuple(r for r in reg.isr if r not in reg.adding)
    if not isr:
        if not unclean:
            raise KafkaError(f"Unable to revert partition assignment for {where} because it would require "
                             "an unclean leader election.", error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
        isr = replicas[:1]
    leader = reg.leader
    if leader not in isr or leader not in alive:
        leader = elect_leader(replicas, isr, alive, unclean=unclean)
    return reg.reassign(replicas, isr, leader, (), ())
