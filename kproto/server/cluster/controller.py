"""The controller: a voter of ``controller.quorum.voters``, on its own listener as
Kafka's ControllerApis is; the KRaft quorum's leader is the active controller.

Theory of operation (Kafka's QuorumController, ClusterControlManager,
ReplicationControlManager, BrokerHeartbeatManager):

* The voters replicate ``<data dir>/__cluster_metadata-0`` by Raft (quorum.py,
  raft.py). The one that leads, once its epoch's LeaderChange record is
  committed, replays the whole log into its ``MetadataImage`` and becomes the
  active controller (QuorumController's QuorumMetaLogListener.handleLeaderChange
  after catching up); the others answer any other request NOT_CONTROLLER (the
  broker asks the leader it learns next).
* Every decision is one batch of ``__cluster_metadata`` records proposed to the
  quorum (``write``), applied to the active controller's image at once (as
  QuorumController replays on append) and answered once committed (the high
  watermark passed it). Brokers fetch that log from the quorum's leader (Fetch
  with their id as ``replica_id``) and apply committed records only, so their
  image is the controller's, a little later.
* **BrokerRegistration** writes a fenced RegisterBrokerRecord; the broker epoch
  is that record's offset (ClusterControlManager.registerBroker). Another
  incarnation of a broker whose session is alive is DUPLICATE_BROKER_REGISTRATION
  (a broker that crashed retries until its old session expired); a new
  incarnation of one unfenced but expired is fenced first
  (ReplicationControlManager.handleBrokerUncleanShutdown).
* **BrokerHeartbeat** keeps the session (``broker.session.timeout.ms``); a
  fenced broker that has fetched the metadata up to its registration is
  unfenced (BrokerHeartbeatManager.calculateNextBrokerState) and elected
  where a partition has no leader; ``want_shut_down`` (controlled shutdown)
  fences it at once. A session that expires fences the broker: it leaves every
  ISR and the partitions it led elect again (election.fence_broker).
* **AlterPartition** from a partition's leader changes its ISR, checked as
  ReplicationControlManager.alterPartition does: the leader and its epoch, the
  partition epoch, replicas only, unfenced only.
* **CreateTopics** places replicas on the unfenced brokers (election.assign_replicas)
  and writes TopicRecord, ConfigRecords and PartitionRecords.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any, Callable

from kproto import protocol
from kproto.common import CLUSTER_METADATA_TOPIC_NAME, now_ms, validate_topic_name
from kproto.errors import DecodeError, ErrorCode, KafkaError
from kproto.features import FRESH_CLUSTER, KRAFT_VERSION, METADATA_VERSION
from kproto.schemas import protocol as P
from kproto.security.scram import BY_TYPE, ScramCredential
from kproto.server import quotas
from kproto.server.cluster import acl_control, config_control
from kproto.server.handlers import quotas as quota_handlers, scram as scram_handlers
from kproto.server.cluster.producer_ids import BLOCK_SIZE as PRODUCER_ID_BLOCK_SIZE
from kproto.server.cluster import image as I
from kproto.server.cluster import operations
from kproto.server.cluster.quorum import RAFT_VOTE_VERSION, Quorum
from kproto.server.cluster import snapshot as snapshots
from kproto.server.cluster.election import (
    PartitionRegistration, assign_replicas, assign_replicas_rack_aware, complete_reassignment, elect_leader, fence_broker, rebuild,
    unclean_shutdown, unfence_broker,
)
from kproto.server.fault_hook import error_response
from kproto.server.network import BrokerServer, CloseConnection, ConnectionInfo, Limits
from kproto.topic_config import LogConfig

log = logging.getLogger("kproto.server.controller")

METADATA_LOG_DIR = "__cluster_metadata-0"
#: The quorum's requests, answered by every voter whether it leads or not.
QUORUM_APIS = (P.vote.API.key, P.begin_quorum_epoch.API.key, P.end_quorum_epoch.API.key, P.fetch.API.key,
               P.fetch_snapshot.API.key)


#: KIP-853's voter changes, answered by the quorum's leader (KafkaRaftClient), active or not yet
VOTER_APIS = (P.add_raft_voter.API.key, P.remove_raft_voter.API.key)


async def _refused(body: Any) -> None:
    raise AssertionError("every controller API has an error_code to answer NOT_CONTROLLER in")


class Controller:
    """A voter: its seat in the quorum; when active, the image, broker sessions and decisions."""

    def __init__(self, data_dir: str | Path, config: Any, cluster_id: str, *, node_id: int,
                 voters: dict[int, tuple[str, int]]) -> None:
        self.config = config
        self.cluster_id = cluster_id
        self.session_timeout_ms = config["broker.session.timeout.ms"]
        self.quorum = Quorum(Path(data_dir), node_id, voters, segment_bytes=config["metadata.log.segment.bytes"])
        self.quorum.on_step = self._follow_quorum
        self.log = self.quorum.log.log
        self.snapshots = snapshots.Snapshotter(self.log.dir, self.log, snapshots.SnapshotPolicy.from_config(config),
                                               now_ms(), self.quorum.log.control_records_at)
        self.image = I.MetadataImage()
        self.active = False
        self.sessions: dict[int, int] = {}
        self._written = -1          # the last offset a request's decision wrote
        self._tasks: list[asyncio.Task] = []
        self.server = BrokerServer(self.handle, limits=Limits.from_config(config))
        self.handlers: dict[int, tuple[tuple[int, int], Callable]] = {
            P.broker_registration.API.key: ((0, 4), self.broker_registration),
            P.broker_heartbeat.API.key: ((0, 2), self.broker_heartbeat),
            P.alter_partition.API.key: ((0, 1), self.alter_partition),
            P.create_topics.API.key: (P.create_topics.API.served, self.create_topics),
            P.delete_topics.API.key: ((6, P.delete_topics.API.served[1]), self.delete_topics),
            P.create_partitions.API.key: ((3, 3), self.create_partitions),
            P.alter_configs.API.key: (P.alter_configs.API.served, self.alter_configs),
            P.incremental_alter_configs.API.key: (P.incremental_alter_configs.API.served,
                                                  self.incremental_alter_configs),
            P.create_acls.API.key: (P.create_acls.API.served, self.create_acls),
            P.delete_acls.API.key: (P.delete_acls.API.served, self.delete_acls),
            P.allocate_producer_ids.API.key: ((0, 0), self.allocate_producer_ids),
            P.alter_client_quotas.API.key: (P.alter_client_quotas.API.served, self.alter_client_quotas),
            P.alter_user_scram_credentials.API.key: (P.alter_user_scram_credentials.API.served,
                                                     self.alter_user_scram_credentials),
            P.describe_quorum.API.key: (P.describe_quorum.API.served, self.describe_quorum),
        }
        self.quorum_versions = {P.vote.API.key: (0, RAFT_VOTE_VERSION), P.begin_quorum_epoch.API.key: (0, 0),
                                P.end_quorum_epoch.API.key: (0, 0), P.fetch.API.key: (4, 12),
                                P.fetch_snapshot.API.key: (0, 0), P.add_raft_voter.API.key: (0, 1),
                                P.remove_raft_voter.API.key: (0, 0)}
        operations.install(self)    # ElectLeaders, reassignments

    def _read_all(self) -> bytes:
        out, offset = bytearray(), self.log.log_start_offset
        while offset < self.log.log_end_offset:
            found = self.log.read(offset, 1 << 20)
            if not found.length:
                break
            data = found.read()
            out += data
            offset = I.batches_below(data, self.log.log_end_offset)[1]
        return bytes(out)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        bound = await self.server.start(host, port)
        self.quorum.addresses[self.quorum.node_id] = bound
        self.quorum.start()
        self._tasks.append(asyncio.create_task(self._expire_sessions()))
        self._tasks.append(asyncio.create_task(operations.run_balancer(self)))
        log.info("controller listening on %s:%d, metadata log at offset %d", *bound, self.log.log_end_offset)
        return bound

    async def close(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.quorum.resign()
        await self.server.close()
        await self.quorum.close()

    # -- the quorum --------------------------------------------------------------------------

    def _follow_quorum(self) -> None:
        """After every Raft step: the leader whose epoch start is committed becomes active
        (replaying the log: every record in it is committed now); one that lost the lead stops."""
        node = self.quorum.node
        sid = self.snapshots.advance(node.high_watermark, now_ms())     # every voter snapshots
        if sid is not None:
            log.info("wrote metadata snapshot %s", snapshots.snapshot_file_name(sid))
        if node.is_leader and not self.active and node.high_watermark > node.state.epoch_start_offset:
            self.image = snapshots.load_image(self.log.dir, self.log)[0]
            now = now_ms()
            # a controller taking over gives every registered broker a fresh session
            self.sessions = {b: now + self.session_timeout_ms for b in self.image.brokers}
            self.active = True
            log.info("active controller at epoch %d, metadata log at offset %d", node.epoch, self.log.log_end_offset)
            if METADATA_VERSION not in self.image.features:
                # ActivationRecordsGenerator.recordsForEmptyLog (also for a log kproto wrote
                # before it had them): the bootstrap feature levels, one metadata transaction
                self.write(bootstrap_records(FRESH_CLUSTER))
        elif self.active and not node.is_leader:
            self.active = False
            log.info("no longer the active controller (epoch %d, leader %d)", node.epoch, node.leader_id)

    def write(self, records: list[tuple[int, dict]]) -> int:
        """Propose one decision and apply it; -> the offset of its first record (answered
        once committed: ``handle`` waits)."""
        if not records:
            return self.image.end_offset
        batch = I.records_batch(records, leader_epoch=self.quorum.node.epoch)
        first = self.quorum.propose(batch)
        # from the batch, not the log: a snapshot of the commit may have moved the log start past it
        for offset, record_type, r in I.iter_records(batch):
            self.image.apply(record_type, r, first + offset)
        self.image.end_offset = self.log.log_end_offset
        self._written = self.log.log_end_offset - 1
        return first

    def _change(self, topic: str, partition: int, new: PartitionRegistration) -> list[tuple[int, dict]]:
        t = self.image.topics[topic]
        old = t.partitions[partition]
        return [] if new == old else [I.change_record(t.topic_id, partition, old, new)]

    def _unclean(self, topic: str) -> bool:
        return LogConfig.from_props(self.image.topics[topic].configs,
                                    base=self.config.log_defaults).unclean_leader_election_enable

    def _min_isr(self, topic: str) -> int:
        """ReplicationControlManager.getTopicEffectiveMinIsr: min.insync.replicas, at most the
        replication factor; the ELR (KIP-966) keeps what a shrink below it drops."""
        t = self.image.topics[topic]
        configured = LogConfig.from_props(t.configs, base=self.config.log_defaults).min_insync_replicas
        return min(configured, len(t.partitions[0].replicas))

    def _place(self, partitions: int, replication_factor: int, *, first_partition: int = 0) -> dict[int, list[int]]:
        """Replicas over the unfenced brokers: rack-aware (StripedReplicaPlacer) once a broker
        names its ``broker.rack``, else election.assign_replicas."""
        alive = sorted(self.image.alive())
        racks = {b: self.image.brokers[b].rack for b in alive}
        if any(r is not None for r in racks.values()):
            return assign_replicas_rack_aware(partitions, replication_factor, racks, first_partition=first_partition)
        return {first_partition + p: r for p, r in assign_replicas(partitions, replication_factor, alive).items()}

    # -- fencing (ReplicationControlManager.handleBrokerFenced / handleBrokerUnfenced) ----------

    def fence(self, broker: int, why: str) -> None:
        info = self.image.brokers[broker]
        alive = self.image.alive() - {broker}
        records: list[tuple[int, dict]] = [(I.FENCE_BROKER, {"id": broker, "epoch": info.epoch})]
        for name, t in self.image.topics.items():
            for p, reg in t.partitions.items():
                if broker in reg.isr or reg.leader == broker:
                    records += self._change(name, p, fence_broker(reg, broker, alive, unclean=self._unclean(name),
                                                                  min_isr=self._min_isr(name)))
        log.info("fencing broker %d (%s)", broker, why)
        self.write(records)

    def unfence(self, broker: int) -> None:
        info = self.image.brokers[broker]
        alive = self.image.alive() | {broker}
        records: list[tuple[int, dict]] = [(I.UNFENCE_BROKER, {"id": broker, "epoch": info.epoch})]
        for name, t in self.image.topics.items():
            for p, reg in t.partitions.items():
                records += self._change(name, p, unfence_broker(reg, broker, alive, unclean=self._unclean(name),
                                                                min_isr=self._min_isr(name)))
        log.info("unfencing broker %d", broker)
        self.write(records)

    def fence_stale(self, now: int) -> list[int]:
        """Fence the unfenced brokers whose session expired (QuorumController.maybeFenceStaleBroker
        over BrokerHeartbeatManager.findOneStaleBroker); -> their ids."""
        stale = [b for b, info in sorted(self.image.brokers.items())
                 if not info.fenced and now > self.sessions.get(b, 0)]
        for b in stale:
            self.fence(b, f"no heartbeat for {self.session_timeout_ms} ms")
        return stale

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(max(self.session_timeout_ms / 8, 50) / 1000)
            if self.active:
                self.fence_stale(now_ms())

    # -- dispatch (ControllerApis) --------------------------------------------------------------

    async def handle(self, frame: bytes, conn: ConnectionInfo) -> list | None:
        try:
            header, offset = protocol.decode_request_header(frame)
        except DecodeError as e:
            raise CloseConnection(f"unreadable request header: {e}") from None
        key, version = header.request_api_key, header.request_api_version
        entry = self.handlers.get(key)
        versions = self.quorum_versions.get(key) or (entry[0] if entry else None)
        if versions is None or not versions[0] <= version <= versions[1]:
            raise CloseConnection(f"the controller does not answer API key {key} v{version}")
        try:
            body = protocol.decode_request_body(header, frame, offset, allow_trailing=True)
        except DecodeError as e:
            raise CloseConnection(f"malformed request: {e}") from None
        if key not in QUORUM_APIS + VOTER_APIS and not self.active:
            # ControllerApis on a controller that is not active: NOT_CONTROLLER (NotControllerException
            # as the API's error response); the broker asks the quorum's leader next
            response = await error_response(key, version, body, None, ErrorCode.NOT_CONTROLLER, _refused)
        elif key in QUORUM_APIS:
            response = await self.quorum.handle(key, body)
        elif key in VOTER_APIS:
            response = await self.quorum.change_voters(key, body)
        else:
            before = self._written
            response = await entry[1](body, version)
            # the decision is answered once the quorum committed it (QuorumController's
            # ControllerWriteEvent completes at the high watermark)
            if self._written > before and not await self.quorum.wait_committed(self._written, 30):
                raise CloseConnection(f"the decision at offset {self._written} was not committed")
        return [protocol.encode_response(key, version, header.correlation_id, response)]

    async def broker_registration(self, body: Any, version: int) -> dict:
        out = {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": -1}
        if body.cluster_id != self.cluster_id:
            out["error_code"] = ErrorCode.INCONSISTENT_CLUSTER_ID
            return out
        b = body.broker_id
        old = self.image.brokers.get(b)
        if old is not None and old.incarnation_id == body.incarnation_id:
            out["broker_epoch"] = old.epoch         # a retried registration: the epoch stays
            return out
        if old is not None and not old.fenced:
            if now_ms() <= self.sessions.get(b, 0):
                # BrokerHeartbeatManager.hasValidSession: another incarnation is alive (or a
                # crashed one's session has not expired yet: the broker retries until it has)
                out["error_code"] = ErrorCode.DUPLICATE_BROKER_REGISTRATION
                return out
            # the old incarnation is gone (handleBrokerUncleanShutdown): out of every ISR first
            self.fence(b, "registered again by a new incarnation")
        shutdown = self._unclean_shutdown(b)
        record = {"broker_id": b, "incarnation_id": body.incarnation_id,
                  "broker_epoch": self.image.end_offset + len(shutdown),
                  "end_points": [{"name": e.name, "host": e.host, "port": e.port,
                                  "security_protocol": e.security_protocol} for e in body.listeners],
                  "features": [], "rack": body.rack, "fenced": True, "in_controlled_shutdown": False}
        epoch = self.write(shutdown + [(I.REGISTER_BROKER, record)]) + len(shutdown)
        self.sessions[b] = now_ms() + self.session_timeout_ms
        out["broker_epoch"] = epoch
        log.info("registered broker %d at epoch %d", b, epoch)
        return out

    def _unclean_shutdown(self, broker: int) -> list[tuple[int, dict]]:
        """A new incarnation (ClusterControlManager.registerBroker ->
        ReplicationControlManager.handleBrokerUncleanShutdown): out of every ISR and ELR."""
        alive = self.image.alive() - {broker}
        return [c for name, t in self.image.topics.items() for p, reg in t.partitions.items()
                for c in self._change(name, p, unclean_shutdown(reg, broker, alive, min_isr=self._min_isr(name),
                                                                unclean=self._unclean(name)))]

    async def broker_heartbeat(self, body: Any, version: int) -> dict:
        out = {"throttle_time_ms": 0, "error_code": 0, "is_caught_up": False, "is_fenced": True,
               "should_shut_down": False}
        info = self.image.brokers.get(body.broker_id)
        if info is None or info.epoch != body.broker_epoch:
            # ClusterControlManager.checkBrokerEpoch: no registration is a stale epoch too (measured:
            # an unregistered live broker of Kafka 4.4 is answered STALE_BROKER_EPOCH)
            out["error_code"] = ErrorCode.STALE_BROKER_EPOCH
            return out
        self.sessions[body.broker_id] = now_ms() + self.session_timeout_ms
        caught_up = body.current_metadata_offset >= info.epoch
        if body.want_shut_down:
            if not info.fenced:
                self.fence(body.broker_id, "controlled shutdown")
            out.update(is_caught_up=caught_up, should_shut_down=True)
            return out
        if info.fenced and caught_up and not body.want_fence:
            self.unfence(body.broker_id)
        out.update(is_caught_up=caught_up, is_fenced=self.image.brokers[body.broker_id].fenced)
        return out

    async def alter_partition(self, body: Any, version: int) -> dict:
        info = self.image.brokers.get(body.broker_id)
        if info is None or info.epoch != body.broker_epoch:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.STALE_BROKER_EPOCH, "topics": []}
        alive = self.image.alive()
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                reg = self.image.partition(t.topic_name, p.partition_index)
                out = {"partition_index": p.partition_index, "error_code": 0, "leader_id": 0, "leader_epoch": 0,
                       "isr": [], "leader_recovery_state": 0, "partition_epoch": 0}
                parts.append(out)
                if reg is None:
                    out["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                new_isr = tuple(p.new_isr)
                # ReplicationControlManager.validateAlterPartitionData, in its order
                if p.leader_epoch > reg.leader_epoch or p.partition_epoch > reg.partition_epoch:
                    error = ErrorCode.NOT_CONTROLLER
                elif p.leader_epoch < reg.leader_epoch:
                    error = ErrorCode.FENCED_LEADER_EPOCH
                elif reg.leader != body.broker_id:
                    error = ErrorCode.INVALID_REQUEST
                elif p.partition_epoch < reg.partition_epoch:
                    error = ErrorCode.INVALID_UPDATE_VERSION
                elif any(r not in reg.replicas for r in new_isr) or len(set(new_isr)) != len(new_isr) \
                        or reg.leader not in new_isr:
                    error = ErrorCode.INVALID_REQUEST
                elif any(r not in alive for r in new_isr):
                    # fenced or unknown brokers (v0-1 say OPERATION_NOT_ATTEMPTED, v2+ INELIGIBLE_REPLICA)
                    error = ErrorCode.INELIGIBLE_REPLICA if version > 1 else ErrorCode.OPERATION_NOT_ATTEMPTED
                else:
                    error = ErrorCode.NONE
                    # a reassignment completes once its target is in the ISR (PartitionChangeBuilder.build);
                    # otherwise the ELR follows the ISR
                    new = complete_reassignment(reg, alive, isr=new_isr) if reg.reassigning else \
                        rebuild(reg, new_isr, alive, min_isr=self._min_isr(t.topic_name),
                                unclean=self._unclean(t.topic_name))
                    self.write(self._change(t.topic_name, p.partition_index, new))
                    reg = self.image.partition(t.topic_name, p.partition_index)
                if error:
                    out["error_code"] = error
                    continue
                out.update(leader_id=reg.leader, leader_epoch=reg.leader_epoch, isr=list(reg.isr),
                           partition_epoch=reg.partition_epoch)
            topics.append({"topic_name": t.topic_name, "partitions": parts})
        return {"throttle_time_ms": 0, "error_code": 0, "topics": topics}

    async def create_topics(self, body: Any, version: int) -> dict:
        return {"throttle_time_ms": 0, "topics": [self._create(t, body.validate_only) for t in body.topics]}

    def _create(self, t: Any, validate_only: bool) -> dict:
        """ReplicationControlManager.createTopic: name, existing, configs, placement."""
        out = {"name": t.name, "topic_id": uuid.UUID(int=0), "error_code": 0, "error_message": None,
               "num_partitions": -1, "replication_factor": -1, "configs": None}
        try:
            validate_topic_name(t.name)
            if t.name in self.image.topics:
                raise KafkaError(f"Topic '{t.name}' already exists.", error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
            overrides = {c.name: c.value for c in t.configs if c.value is not None}
            LogConfig.from_props(overrides, base=self.config.log_defaults)
            alive = sorted(self.image.alive())
            if t.assignments:
                placement = {a.partition_index: list(a.broker_ids) for a in t.assignments}
                for replicas in placement.values():
                    unknown = [r for r in replicas if r not in self.image.brokers]
                    if unknown or len(set(replicas)) != len(replicas) or not replicas:
                        raise KafkaError(f"Replica assignment {replicas} is invalid: unknown or repeated brokers",
                                         error_code=ErrorCode.INVALID_REPLICA_ASSIGNMENT)
            else:
                n = self.config["num.partitions"] if t.num_partitions == -1 else t.num_partitions
                rf = self.config["default.replication.factor"] if t.replication_factor == -1 else t.replication_factor
                if n < 1:
                    raise KafkaError("Number of partitions was set to an invalid non-positive value.",
                                     error_code=ErrorCode.INVALID_PARTITIONS)
                placement = self._place(n, rf)
            out.update(num_partitions=len(placement), replication_factor=len(next(iter(placement.values()))))
            if validate_only:
                return out
            topic_id = uuid.uuid4()
            records: list[tuple[int, dict]] = [(I.TOPIC, {"name": t.name, "topic_id": topic_id})]
            records += [(I.CONFIG, {"resource_type": I.TOPIC_RESOURCE, "resource_name": t.name, "name": k,
                                    "value": v}) for k, v in overrides.items()]
            for p, replicas in sorted(placement.items()):
                isr = tuple(r for r in replicas if r in alive)
                reg = PartitionRegistration(tuple(replicas), isr or tuple(replicas),
                                            elect_leader(tuple(replicas), isr, set(alive), unclean=False))
                records.append(I.partition_record(topic_id, p, reg))
            self.write(records)
            out.update(topic_id=topic_id, configs=[])
        except KafkaError as e:
            out.update(error_code=e.error_code, error_message=str(e))
        return out

    async def delete_topics(self, body: Any, version: int) -> dict:
        """ReplicationControlManager.deleteTopics: a RemoveTopicRecord per topic, by name or id."""
        out = []
        for t in body.topics:
            name = t.name if t.name is not None else self.image.names.get(t.topic_id)
            topic = self.image.topics.get(name) if name is not None else None
            answer = {"name": name, "topic_id": topic.topic_id if topic else t.topic_id, "error_code": 0,
                      "error_message": None}
            if topic is None:
                answer.update(error_code=ErrorCode.UNKNOWN_TOPIC_ID if t.name is None
                              else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              error_message="This server does not host this topic ID." if t.name is None
                              else "This server does not host this topic-partition.")
            else:
                self.write([(I.REMOVE_TOPIC, {"topic_id": topic.topic_id})])
            out.append(answer)
        return {"throttle_time_ms": 0, "responses": out}

    async def create_partitions(self, body: Any, version: int) -> dict:
        """ReplicationControlManager.createPartitions, for requests the broker checked: a
        PartitionRecord per new partition, placed as given or over the unfenced brokers with
        the topic's replication factor (its first partition's), leader elected as at creation."""
        out = []
        for t in body.topics:
            answer = {"name": t.name, "error_code": 0, "error_message": None}
            topic = self.image.topics.get(t.name)
            try:
                if topic is None:
                    raise KafkaError(f"The topic '{t.name}' does not exist.",
                                     error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                current = len(topic.partitions)
                if t.count <= current:
                    raise KafkaError(f"Topic already has {current} partition(s).",
                                     error_code=ErrorCode.INVALID_PARTITIONS)
                alive = sorted(self.image.alive())
                if t.assignments is not None:
                    placement = {current + i: list(a.broker_ids) for i, a in enumerate(t.assignments)}
                else:
                    rf = len(topic.partitions[0].replicas)
                    placement = self._place(t.count - current, rf, first_partition=current)
                records = []
                for p, replicas in sorted(placement.items()):
                    isr = tuple(r for r in replicas if r in alive)
                    reg = PartitionRegistration(tuple(replicas), isr or tuple(replicas),
                                                elect_leader(tuple(replicas), isr, set(alive), unclean=False))
                    records.append(I.partition_record(topic.topic_id, p, reg))
                self.write(records)
            except KafkaError as e:
                answer.update(error_code=e.error_code, error_message=str(e))
            out.append(answer)
        return {"throttle_time_ms": 0, "results": out}

    async def alter_configs(self, body: Any, version: int) -> dict:
        return self._alter_configs(body, incremental=False)

    async def incremental_alter_configs(self, body: Any, version: int) -> dict:
        return self._alter_configs(body, incremental=True)

    def _alter_configs(self, body: Any, *, incremental: bool) -> dict:
        """ConfigurationControlManager: the configs checked, then one batch of ConfigRecords."""
        answers, records = config_control.alter_configs(self.image, self.config.log_defaults, body.resources,
                                                        incremental=incremental)
        if not body.validate_only:
            self.write(records)
        return {"throttle_time_ms": 0, "responses": answers}

    async def create_acls(self, body: Any, version: int) -> dict:
        results, records = acl_control.create_acls(self.image, body.creations)
        self.write(records)
        return {"throttle_time_ms": 0, "results": results}

    async def delete_acls(self, body: Any, version: int) -> dict:
        results, records = acl_control.delete_acls(self.image, body.filters)
        self.write(records)
        return {"throttle_time_ms": 0, "filter_results": results}

    async def alter_client_quotas(self, body: Any, version: int) -> dict:
        """ClientQuotaControlManager.alterClientQuotas over the image's quotas: a
        ClientQuotaRecord per key set, changed or removed."""
        results, changes = quotas.alter(self.image.client_quotas, quota_handlers.alterations(body))
        if not body.validate_only:
            self.write(I.quota_records(self.image.client_quotas, changes))
        return quota_handlers.answer(results)

    async def alter_user_scram_credentials(self, body: Any, version: int) -> dict:
        """ScramControlManager.alterCredentials over the image's credentials: a
        RemoveUserScramCredentialRecord per deletion, a UserScramCredentialRecord (the keys
        derived from the salted password, never the password) per upsertion."""
        errors, deletions, upsertions = scram_handlers.plan(
            body, lambda name, mech: (name, mech.type) in self.image.scram)
        records: list[tuple[int, dict]] = [(I.REMOVE_USER_SCRAM_CREDENTIAL, {"name": d.name, "mechanism": d.mechanism})
                                           for d in deletions.values()]
        for u in upsertions.values():
            c = ScramCredential.from_salted_password(BY_TYPE[u.mechanism], bytes(u.salted_password), bytes(u.salt),
                                                     u.iterations)
            records.append((I.USER_SCRAM_CREDENTIAL, {"name": u.name, "mechanism": u.mechanism, "salt": c.salt,
                                                      "stored_key": c.stored_key, "server_key": c.server_key,
                                                      "iterations": c.iterations}))
        self.write(records)
        return scram_handlers.answer(body, errors)

    async def allocate_producer_ids(self, body: Any, version: int) -> dict:
        """ProducerIdControlManager.generateNextProducerId: the next block of ids for a
        registered broker at its current epoch, recorded as a ProducerIdsRecord."""
        out = {"throttle_time_ms": 0, "error_code": 0, "producer_id_start": -1, "producer_id_len": 0}
        info = self.image.brokers.get(body.broker_id)
        if info is None or info.epoch != body.broker_epoch:     # ClusterControlManager.checkBrokerEpoch
            out["error_code"] = ErrorCode.STALE_BROKER_EPOCH
            return out
        start = self.image.next_producer_id
        self.write([(I.PRODUCER_IDS, {"broker_id": body.broker_id, "broker_epoch": body.broker_epoch,
                                      "next_producer_id": start + PRODUCER_ID_BLOCK_SIZE})])
        out.update(producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE)
        return out

    async def describe_quorum(self, body: Any, version: int) -> dict:
        """ControllerApis.handleDescribeQuorum: the quorum's leader answers for
        ``__cluster_metadata-0``; nodes are the voters' controller listeners."""
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                if t.topic_name == CLUSTER_METADATA_TOPIC_NAME and p.partition_index == 0:
                    parts.append(self.quorum.describe())
                else:
                    parts.append({"partition_index": p.partition_index, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  "error_message": "This server does not host this topic-partition.", "leader_id": 0,
                                  "leader_epoch": 0, "high_watermark": 0, "current_voters": [], "observers": []})
            topics.append({"topic_name": t.topic_name, "partitions": parts})
        names = self.config.values.get("controller.listener.names") or "CONTROLLER"
        nodes = [{"node_id": v, "listeners": [{"name": str(names).split(",")[0].strip(), "host": h, "port": port}]}
                 for v, (h, port) in ((v, self.quorum.address(v)) for v in self.quorum.node.voters
                                      if self.quorum.address(v) is not None)]
        return {"error_code": 0, "error_message": None, "topics": topics, "nodes": nodes}


def bootstrap_records(levels: dict[str, int]) -> list[tuple[int, dict]]:
    """What a formatted cluster's first active controller writes (BootstrapMetadata, measured on
    Kafka 4.4 with static voters): FeatureLevelRecords, metadata.version first, then the other
    features above 0 by name, kraft.version left to the quorum (KRaftVersionRecord), between
    Begin/EndTransactionRecords."""
    features = [(I.FEATURE_LEVEL, {"name": METADATA_VERSION, "feature_level": levels[METADATA_VERSION]})]
    features += [(I.FEATURE_LEVEL, {"name": n, "feature_level": level}) for n, level in sorted(levels.items())
                 if level > 0 and n not in (METADATA_VERSION, KRAFT_VERSION)]
    return [(I.BEGIN_TRANSACTION, {"name": "Bootstrap records"}), *features, (I.END_TRANSACTION, {})]
