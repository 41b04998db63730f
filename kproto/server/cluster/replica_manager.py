"""A broker of a cluster: its life with the controller and its partitions' replication
(Kafka's BrokerLifecycleManager, BrokerMetadataPublisher, ReplicaManager, Partition,
ReplicaFetcherThread), with the rules of replica.py and the controller's decisions.

Theory of operation:

* **Lifecycle**: the broker registers (BrokerRegistration: its listeners, a new
  incarnation id each start), then heartbeats every ``broker.heartbeat.interval.ms``
  with how far it has read the metadata log; the controller unfences it once it
  read up to its registration. A clean stop asks for a controlled shutdown
  (``want_shut_down``): the controller moves its leaderships away first.
* **Metadata**: a task fetches ``__cluster_metadata`` from the quorum's leader
  (a broker on a voter's node reads its own voter's log) and
  applies each record to the broker's ``MetadataImage``; each partition whose
  registration changed and that lists this broker is applied as
  ReplicaManager.applyDelta does: the leader here becomes leader (a new epoch
  starts at its log end, ``leader-epoch-checkpoint``), any other replica becomes
  a follower of the registration's leader.
* **Leading** (``Partition``): produce appends stamp the leader epoch; follower
  fetches move the follower's progress and the high watermark
  (replica.PartitionLeader); acks=all requests wait on the partition's
  ``changed`` event (DelayedProduce: woken by HW moves, ISR and leader changes;
  the request timeout is the safety net). A follower caught up joins the ISR,
  one that lags ``replica.lag.time.max.ms`` leaves it: both through AlterPartition
  to the controller (Partition.maybeExpandIsr / maybeShrinkIsr).
* **Following** (``Fetcher``, one per leader broker, AbstractFetcherThread): a
  partition new to its fetcher first truncates: OffsetForLeaderEpoch for its
  latest epoch, then ``truncation_offset`` (KIP-101/279); then Fetch with
  ``replica_id`` and ``current_leader_epoch`` from its log end, appending what it
  gets with the leader's offsets and epochs, and taking the leader's HW.
* The HW of each log is checkpointed in ``replication-offset-checkpoint``
  (ReplicaManager.checkpointHighWatermarks) and read back at start.
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from pathlib import Path
from typing import Any

from kproto.common import CLUSTER_METADATA_TOPIC_NAME, is_internal, now_ms
from kproto.errors import DecodeError, ErrorCode, KafkaError
from kproto.log import checkpoint as ckpt
from kproto.log.validator import AppendOrigin
from kproto.records import RecordBatch, iter_batches
from kproto.schemas import protocol as P
from kproto.security.scram import BY_TYPE
from kproto.server import quotas
from kproto.server.cluster import image as I
from kproto.server.cluster import raft as R
from kproto.server.cluster import snapshot as SN
from kproto.server.cluster.quorum import from_wire, snapshot_id_from_wire, to_wire
from kproto.server.cluster.channel import Channel, QuorumRoute
from kproto.server.cluster.election import NO_LEADER, PartitionRegistration
from kproto.server.cluster.producer_ids import ProducerIdBlocks
from kproto.server.cluster.replica import (
    UNDEFINED_EPOCH, EpochEndOffset, LeaderEpochCache, PartitionLeader, truncation_offset,
)
from kproto.server.cluster.settings import ClusterSettings

log = logging.getLogger("kproto.server.replication")

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
FETCH_VERSION, OFFSET_FOR_LEADER_EPOCH_VERSION, ALTER_PARTITION_VERSION = 12, 4, 1
#: how long a forwarded request's answer waits for this broker's metadata to show the change
FORWARD_TIMEOUT_S = 30.0


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """LeaderEpochCheckpointFile: ``0``, a count, then ``epoch start_offset`` lines."""
    try:
        lines = path.read_text().split("\n")
    except FileNotFoundError:
        return []
    return [(int(e), int(o)) for e, o in (line.split() for line in lines[2:2 + int(lines[1])])]


def write_epoch_checkpoint(path: Path, entries: list[tuple[int, int]]) -> None:
    ckpt.write_atomically(path, "".join(f"{line}\n" for line in
                                        ["0", str(len(entries))] + [f"{e} {o}" for e, o in entries]))


class Partition:
    """One hosted replica: its log, epoch cache, and the leader's state while it leads."""

    def __init__(self, topic: str, index: int, plog: Any) -> None:
        self.topic, self.index, self.log = topic, index, plog
        self.epochs = LeaderEpochCache(read_epoch_checkpoint(plog.dir / LEADER_EPOCH_CHECKPOINT))
        self.epochs.truncate_from_end(plog.log_end_offset)      # a crash may have cut the log
        self.reg: PartitionRegistration | None = None
        self.leader: PartitionLeader | None = None
        self.isr_pending = False        # an AlterPartition in flight (Partition.partitionState)
        self.truncated = False          # a follower truncated since it started following this epoch
        # a follower's lag behind the leader's HW after its last fetch that got data (PartitionFetchState.lag)
        self.fetch_lag: int | None = None
        self._changed: asyncio.Future | None = None

    @property
    def leader_epoch(self) -> int:
        return self.reg.leader_epoch if self.reg is not None else -1

    def save_epochs(self) -> None:
        write_epoch_checkpoint(self.log.dir / LEADER_EPOCH_CHECKPOINT, self.epochs.entries)

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        if epoch > self.epochs.latest_epoch:
            self.epochs.assign(epoch, start_offset)
            self.save_epochs()

    def changed(self) -> asyncio.Future:
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        return self._changed

    def wake(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    def sync_hw(self) -> None:
        """The leader's HW into the log (consumers read below it), waking waiters."""
        self.log.update_high_watermark(self.leader.high_watermark)
        self.wake()


class ReplicaManager:
    def __init__(self, broker: Any, settings: ClusterSettings) -> None:
        self.broker = broker
        self.settings = settings
        self.node_id = settings.node_id
        cfg = broker.config
        self.cfg = cfg
        # the active controller is the quorum's leader, learned from the metadata fetches
        self.controller = QuorumRoute(settings.voters, f"broker-{self.node_id}")
        self._metadata_epoch = -1       # the leader epoch of the last applied metadata batch
        self.image = I.MetadataImage()
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.fetchers: dict[int, Fetcher] = {}
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        self.fenced = True
        # loops end on this, not only on cancellation: Python 3.11's wait_for may swallow a
        # cancel that arrives as the awaited request completes
        self.closing = False
        self._unfenced = asyncio.Event()
        self._metadata_applied: asyncio.Future | None = None
        self._tasks: list[asyncio.Task] = []
        self._creating: set[str] = set()        # internal topics asked of the controller
        self.producer_ids = ProducerIdBlocks(self)      # the broker's producer ids, from the controller
        self._brokers: dict[int, Channel] = {}      # request_broker's channels
        # each replicated log's HW, set when its partition is first applied (ReplicaManager.getOrCreatePartition)
        self._hw_checkpoint = ckpt.read_offset_checkpoint(broker.logs.data_dir / REPLICATION_OFFSET_CHECKPOINT)
        # QuotaFactory's leader and follower replication quotas (ReplicationQuotaManager)
        samples, window_s = cfg["replication.quota.window.num"], cfg["replication.quota.window.size.seconds"]
        self.leader_quota = quotas.ReplicationQuotaManager(samples, window_s)
        self.follower_quota = quotas.ReplicationQuotaManager(samples, window_s)

    # -- lifecycle (BrokerLifecycleManager) ----------------------------------------------------

    async def start(self, timeout_s: float = 120.0) -> None:
        """Register, follow the metadata log, heartbeat; return once unfenced."""
        local = self.broker.controller
        self._tasks.append(asyncio.create_task(
            self._follow_metadata() if local is None else self._follow_local_metadata(local.quorum)))
        self._tasks.append(asyncio.create_task(self._heartbeats()))
        self._tasks.append(asyncio.create_task(self._isr_shrinker()))
        self._tasks.append(asyncio.create_task(self._checkpointer()))
        await asyncio.wait_for(self._unfenced.wait(), timeout_s)

    async def close(self) -> None:
        self.closing = True
        if self.broker_epoch >= 0:     # controlled shutdown: leaderships move before we go
            try:
                await asyncio.wait_for(self._heartbeat(want_shut_down=True), 5)
            except (ConnectionError, asyncio.TimeoutError):
                pass
        for t in self._tasks:
            t.cancel()
        for f in self.fetchers.values():
            f.task.cancel()
        await asyncio.gather(*self._tasks, *(f.task for f in self.fetchers.values()), return_exceptions=True)
        self.controller.close()
        for channel in self._brokers.values():
            channel.close()
        for f in self.fetchers.values():
            if f.channel is not None:       # a fetcher that never connected has none
                f.channel.close()
        self.checkpoint()

    def checkpoint(self) -> None:
        ckpt.write_offset_checkpoint(self.broker.logs.data_dir / REPLICATION_OFFSET_CHECKPOINT,
                                     {tp: plog.high_watermark for tp, plog in sorted(self.broker.logs.logs().items())})

    async def _checkpointer(self) -> None:
        while not self.closing:
            await asyncio.sleep(self.cfg["replica.high.watermark.checkpoint.interval.ms"] / 1000)
            self.checkpoint()

    async def _register(self) -> None:
        listeners = [{"name": l.name, "host": h, "port": p, "security_protocol": SECURITY_PROTOCOLS[l.security_protocol]}
                     for l in self.broker.security.listeners
                     for h, p in [self.broker.security.endpoints[l.name]]]
        body = {"broker_id": self.node_id, "cluster_id": self.broker.cluster_id,
                "incarnation_id": self.incarnation_id, "listeners": listeners, "features": [],
                "rack": self.cfg["broker.rack"], "is_migrating_zk_broker": False, "log_dirs": [], "previous_broker_epoch": -1}
        while not self.closing:
            try:
                r = await self.controller.request(P.broker_registration.API.key, 0, body)
            except ConnectionError as e:
                log.info("registration: controller unreachable (%s), retrying", e)
                await asyncio.sleep(0.2)
                continue
            if r.error_code == ErrorCode.NONE:
                self.broker_epoch = r.broker_epoch
                log.info("registered with the controller at broker epoch %d", self.broker_epoch)
                return
            if r.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID:
                raise KafkaError(f"the controller's cluster id is not this broker's {self.broker.cluster_id}",
                                 error_code=r.error_code)
            await asyncio.sleep(0.2)

    async def _heartbeat(self, *, want_shut_down: bool = False) -> Any:
        r = await self.controller.request(P.broker_heartbeat.API.key, 0, {
            "broker_id": self.node_id, "broker_epoch": self.broker_epoch,
            "current_metadata_offset": self.image.end_offset - 1, "want_fence": False,
            "want_shut_down": want_shut_down}, purpose="heartbeat")
        if r.error_code == ErrorCode.NONE:
            self.fenced = r.is_fenced
            if not r.is_fenced:
                self._unfenced.set()
        return r

    async def _heartbeats(self) -> None:
        await self._register()
        while not self.closing:
            try:
                r = await self._heartbeat()
                if r.error_code in (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED):
                    if not await self._unregistered():
                        await self._register()
                        continue
                    # BrokerLifecycleManager: an unregistered broker stays out, heartbeating in vain
                    log.warning("Broker %d sent a heartbeat request but received error %s.", self.node_id,
                                ErrorCode(r.error_code).name)
            except ConnectionError as e:
                log.info("heartbeat: %s", e)
            interval = self.cfg["broker.heartbeat.interval.ms"]
            await asyncio.sleep((interval if not self.fenced else min(interval, 100)) / 1000)

    async def _unregistered(self) -> bool:
        """Whether this broker's registration was removed (UnregisterBroker): once its metadata
        holds what the quorum committed, past its registration, no registration of this id."""
        try:
            await self.catch_up(5)
        except ConnectionError:
            return False
        return 0 <= self.broker_epoch < self.image.end_offset and self.node_id not in self.image.brokers

    # -- metadata (BrokerMetadataListener / MetadataLoader) -----------------------------------

    async def _follow_metadata(self) -> None:
        """Fetch ``__cluster_metadata`` as a KRaft observer: from the leader the voters name
        (current_leader in each answer; NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and
        UNKNOWN_LEADER_EPOCH send us to it or to the next voter), applying committed
        batches only (below the high watermark; MetadataLoader.handleCommit)."""
        route = self.controller
        while not self.closing:
            voter = route.target()
            try:
                r = await route.channel(voter, "metadata").request(P.fetch.API.key, FETCH_VERSION, {
                    "replica_id": self.node_id, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 24,
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                    "topics": [{"topic": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{
                        "partition": 0, "current_leader_epoch": route.epoch, "fetch_offset": self.image.end_offset,
                        "last_fetched_epoch": max(self._metadata_epoch, 0),
                        "log_start_offset": -1, "partition_max_bytes": 1 << 24}]}],
                    "forgotten_topics_data": [], "rack_id": ""})
            except ConnectionError as e:
                log.info("metadata fetch from voter %d: %s", voter, e)
                route.forget(voter)
                await route.wait_for_change(0.2)
                continue
            p = r.responses[0].partitions[0]
            leader = getattr(p, "current_leader", None)
            if leader is not None:
                route.learn(leader.leader_id, leader.leader_epoch)
            if p.error_code:
                if route.leader is None or route.leader == voter:
                    route.forget(voter)
                    await route.wait_for_change(0.1)
                continue
            sid = snapshot_id_from_wire(getattr(p, "snapshot_id", None))
            if sid is not None:         # below the leader's log start: copy its snapshot
                await self._fetch_snapshot(route.channel(voter, "metadata"), route.epoch, sid)
                continue
            await self._apply_committed(bytes(p.records or b""), p.high_watermark)

    async def _fetch_snapshot(self, channel: Channel, leader_epoch: int, sid: tuple[int, int]) -> None:
        """An observer's FetchSnapshot (KafkaRaftClient.handleFetchSnapshotResponse): the chunks
        from position 0 to the snapshot's size, then the image it holds replaces ours."""
        data = bytearray()
        while True:
            request = R.FetchSnapshotRequest(self.node_id, leader_epoch, sid, len(data))
            try:
                answer = from_wire(request, await channel.request(*to_wire(request, self.node_id)))
            except ConnectionError as e:
                log.info("metadata snapshot fetch: %s", e)
                return
            if answer is None or answer.error_code:
                return                  # a Fetch again says which snapshot, or who leads
            data += answer.data
            if len(data) >= answer.size or not answer.data:
                break
        self.apply_snapshot(SN.read_snapshot(bytes(data), SN.SnapshotId(*sid)))
        self._metadata_epoch = sid[1]
        log.info("loaded metadata snapshot %s", SN.snapshot_file_name(SN.SnapshotId(*sid)))

    def apply_snapshot(self, image: I.MetadataImage) -> None:
        """A snapshot in place of the image (MetadataLoader's snapshot delta): what it no longer
        has goes, what differs is applied as the records' effects would be."""
        old, self.image = self.image, image
        for name, t in old.topics.items():
            if name not in image.topics or image.topics[name].topic_id != t.topic_id:
                self._remove_topic(name)
        for name, t in image.topics.items():
            before = old.topics.get(name)
            if before is None or before.topic_id != t.topic_id:
                self.broker.logs.adopt_topic(name, t.topic_id, t.configs)
                self._apply_throttled_replicas(name)
            elif before.configs != t.configs:
                self._apply_topic_config(name)
        for name in ("", str(self.node_id)):
            if old.broker_configs.get(name, {}) != image.broker_configs.get(name, {}):
                self._apply_broker_config(name)
        if old.client_quotas != image.client_quotas:
            self.broker.dynamic.set_client_quotas({e: image.client_quotas.get(e, {})
                                                   for e in set(old.client_quotas) | set(image.client_quotas)})
            self.broker.quotas.refresh()
        for name, mechanism in sorted(set(old.scram) | set(image.scram)):
            credential = image.scram.get((name, mechanism))
            if credential is None:
                self.broker.security.scram.delete(name, BY_TYPE[mechanism])
            elif old.scram.get((name, mechanism)) != credential:
                self.broker.security.scram.upsert(name, BY_TYPE[mechanism], credential)
        if old.acls != image.acls:
            self.broker.security.acls.replace(image.acls.values())
        for name, t in image.topics.items():
            for index, reg in t.partitions.items():
                if old.partition(name, index) != reg:
                    self._apply_partition(name, index)
        self._metadata_changed()

    async def _follow_local_metadata(self, quorum: Any) -> None:
        """A broker on a voter's node reads its own voter's log below its high watermark
        (Kafka's combined mode: one KafkaRaftClient for both roles) and follows its
        voter's knowledge of the leader."""
        while not self.closing:
            node = quorum.node
            self.controller.learn(node.leader_id, node.epoch)
            if self.image.end_offset < quorum.log.log_start_offset:
                # this voter's log was replaced by the leader's snapshot: load it
                sid = SN.latest_snapshot(quorum.log.dir)
                assert sid is not None
                self.apply_snapshot(SN.read_snapshot((quorum.log.dir / SN.snapshot_file_name(sid)).read_bytes(), sid))
                self._metadata_epoch = sid.epoch
            elif self.image.end_offset < node.high_watermark:
                await self._apply_committed(quorum.log.read(self.image.end_offset), node.high_watermark)
            else:
                await quorum.wait_for_change(0.5)

    async def _apply_committed(self, data: bytes, high_watermark: int) -> None:
        data, after, epoch = I.batches_below(data, high_watermark)
        if after is None:
            return
        try:
            self.apply_metadata(data)
            self.image.end_offset = max(self.image.end_offset, after)     # past control batches too
            self._metadata_epoch = epoch
        except (KafkaError, DecodeError, KeyError) as e:
            # a record this image cannot apply: logged, and read again after a pause
            log.error("metadata at offset %d: %r", self.image.end_offset, e)
            await asyncio.sleep(1)

    def active_controller(self) -> int:
        """The quorum's leader as this broker knows it (-1: unknown), for Metadata and
        DescribeCluster's controller_id. A leader that is no broker (a controller-only node:
        isolated mode) is one clients cannot reach: they are given a random alive broker,
        which forwards, whether or not the leader is known now (KafkaApis.handleTopicMetadataRequest:
        getRandomAliveBrokerId; a -1 would leave a client waiting for a controller)."""
        leader = self.controller.leader
        if leader is not None and leader in self.image.brokers:
            return leader
        if leader is None and self.controller.voters.keys() & self.image.brokers.keys():   # combined, electing
            return -1
        alive = sorted(self.image.alive())
        return random.choice(alive) if alive else -1

    async def catch_up(self, timeout_s: float) -> bool:
        """Wait until this broker's image holds every record the quorum had committed when
        asked (a forwarded request's answer then reads its own write here): the high
        watermark from the active controller's DescribeQuorum, then this broker's metadata
        reaching it."""
        r = await self.controller.request(P.describe_quorum.API.key, 0, {"topics": [
            {"topic_name": CLUSTER_METADATA_TOPIC_NAME, "partitions": [{"partition_index": 0}]}]})
        end = r.topics[0].partitions[0].high_watermark
        return await self.wait_for_metadata(lambda: self.image.end_offset >= end, timeout_s)

    async def forward(self, api_key: int, version: int, body: Any, timeout_s: float = FORWARD_TIMEOUT_S) -> Any:
        """A request the controller answers (ForwardingManager: configs, ACLs, quotas, SCRAM,
        ElectLeaders, reassignments), the answer once this broker's metadata has what it
        wrote; ConnectionError if the controller is unreachable."""
        r = await self.controller.request(api_key, version, body)
        await self.catch_up(timeout_s)
        return r

    def apply_metadata(self, data: bytes) -> None:
        changed: list[tuple[str, int]] = []
        configs: set[tuple[int, str]] = set()
        acls_changed = False
        quota_entities: set = set()
        credentials: set[tuple[str, int]] = set()
        ids_before = {name: t.topic_id for name, t in self.image.topics.items()}
        for offset, record_type, rec in I.iter_records(data):
            tp = self.image.apply(record_type, rec, offset)
            if tp is not None and tp not in changed:
                changed.append(tp)
            if record_type == I.CONFIG:
                configs.add((rec.resource_type, rec.resource_name))
            acls_changed = acls_changed or record_type in (I.ACCESS_CONTROL_ENTRY, I.REMOVE_ACCESS_CONTROL_ENTRY)
            if record_type in (I.USER_SCRAM_CREDENTIAL, I.REMOVE_USER_SCRAM_CREDENTIAL):
                credentials.add((rec.name, rec.mechanism))
            if record_type == I.CLIENT_QUOTA:
                quota_entities.add(quotas.entity((d.entity_type, d.entity_name) for d in rec.entity))
        ids_after = {name: t.topic_id for name, t in self.image.topics.items()}
        for name in [n for n, i in ids_before.items() if ids_after.get(n) != i]:
            self._remove_topic(name)
        for name in [n for n, i in ids_after.items() if ids_before.get(n) != i]:     # new: its id and configs
            t = self.image.topics[name]
            self.broker.logs.adopt_topic(name, t.topic_id, t.configs)
            self._apply_throttled_replicas(name)
        for kind, name in sorted(configs):
            if kind == I.TOPIC_RESOURCE and name in self.image.topics and ids_before.get(name) is not None:
                self._apply_topic_config(name)
            elif kind == I.BROKER_RESOURCE and name in ("", str(self.node_id)):
                self._apply_broker_config(name)
        if quota_entities:      # ClientQuotaMetadataManager: the quota manager takes the new values
            self.broker.dynamic.set_client_quotas({e: self.image.client_quotas.get(e, {}) for e in quota_entities})
            self.broker.quotas.refresh()
        for name, mechanism in sorted(credentials):     # the SASL/SCRAM authenticator's credential cache
            credential = self.image.scram.get((name, mechanism))
            if credential is None:
                self.broker.security.scram.delete(name, BY_TYPE[mechanism])
            else:
                self.broker.security.scram.upsert(name, BY_TYPE[mechanism], credential)
        if acls_changed:        # the authorizer reads the image's ACLs (StandardAuthorizer.loadSnapshot/addAcl)
            self.broker.security.acls.replace(self.image.acls.values())
        for topic, p in changed:
            self._apply_partition(topic, p)
        self._metadata_changed()

    def _metadata_changed(self) -> None:
        """Wake what waits on the image: metadata waiters, then the fetchers."""
        if self._metadata_applied is not None and not self._metadata_applied.done():
            self._metadata_applied.set_result(None)
        self._metadata_applied = None
        for f in list(self.fetchers.values()):
            f.wake()

    def _remove_replica(self, topic: str, index: int) -> None:
        """A reassignment took this broker out of the partition's replicas (ReplicaManager.applyDelta's
        deleted partitions, StopReplica with deletion): stop leading or following, delete the log."""
        part = self.partitions.pop((topic, index))
        self._hw_checkpoint.pop((topic, index), None)     # a later replica here starts empty
        self._stop_following(part)
        if part.leader is not None:
            part.leader = None
            self.broker.coordinator_resigned(topic, index)
        part.wake()
        if self.broker.logs.get_log(topic, index) is not None:
            self.broker.logs.delete_log(topic, index)
        log.info("removed replica %s-%d (reassigned away)", topic, index)


    def _apply_topic_config(self, name: str) -> None:
        """A topic's ConfigRecords applied (BrokerMetadataPublisher's DynamicConfigPublisher):
        its logs take the new configs (retention, cleanup.policy...), the partitions it leads
        here their ``min.insync.replicas``, the replication quotas its throttled replicas."""
        self._apply_throttled_replicas(name)
        try:
            self.broker.logs.set_topic_config(name, self.image.topics[name].configs)
        except KafkaError as e:     # the controller validated them with its own defaults
            log.error("configs of topic %s not applied: %s", name, e)
            return
        self._refresh_min_isr({name})

    def _apply_throttled_replicas(self, name: str) -> None:
        """TopicConfigHandler.processConfigChanges' updateThrottledList: the partitions each
        throttled replica list names on this broker, or none once it is unset or empty."""
        configs = self.image.topics[name].configs if name in self.image.topics else {}
        for key, quota in (("leader.replication.throttled.replicas", self.leader_quota),
                           ("follower.replication.throttled.replicas", self.follower_quota)):
            value = configs.get(key)
            if value:
                quota.mark_throttled(name, quotas.throttled_partitions(value, self.node_id))
            else:
                quota.remove_throttle(name)

    def _refresh_min_isr(self, topics: set[str] | None = None) -> None:
        """The partitions led here take their log's ``min.insync.replicas`` (waiting acks=all
        producers are woken to check again)."""
        for (topic, _), part in self.partitions.items():
            if part.leader is not None and (topics is None or topic in topics):
                part.leader.min_insync_replicas = part.log.config.min_insync_replicas
                part.wake()

    def _apply_broker_config(self, name: str) -> None:
        """A dynamic broker config layer (the cluster default "", or this broker's id) applied
        as DynamicBrokerConfig.updateBrokerConfig / updateDefaultConfig: persisted, then the
        new effective config taken; one that does not apply here is logged, not taken. The
        replication quotas take their rates (BrokerConfigHandler)."""
        self._apply_replication_rates()
        try:
            config = self.broker.dynamic.replace(name != "", self.image.broker_configs.get(name, {}))
        except KafkaError as e:
            log.error("dynamic broker configs %r not applied: %s", name, e)
            return

        async def reconfigure() -> None:
            await self.broker.reconfigure(config)
            self._refresh_min_isr()

        self._tasks.append(asyncio.create_task(reconfigure()))
        self._tasks = [t for t in self._tasks if not t.done()]

    def _apply_replication_rates(self) -> None:
        """BrokerConfigHandler.processConfigChanges' getOrDefault: this broker's dynamic value,
        else the cluster default's, else unbounded (a static one is not read, as in Kafka)."""
        layers = (self.image.broker_configs.get(str(self.node_id), {}), self.image.broker_configs.get("", {}))
        for key, quota in (("leader.replication.throttled.rate", self.leader_quota),
                           ("follower.replication.throttled.rate", self.follower_quota)):
            value = next((layer[key] for layer in layers if layer.get(key) is not None), None)
            quota.update_quota(quotas.UNBOUNDED_RATE if value is None else int(value))

    def should_leader_throttle(self, part: Partition, replica_id: int) -> bool:
        """ReplicaManager.shouldLeaderThrottle: only a replica out of the ISR, of a throttled
        partition, while the quota is exceeded (an in-sync one is never held back: no ISR
        thrashing)."""
        return (replica_id not in part.leader.isr and self.leader_quota.is_throttled(part.topic, part.index)
                and self.leader_quota.is_quota_exceeded(now_ms()))

    def record_leader_replication(self, responses: list[dict]) -> None:
        """KafkaApis.handleFetchRequest for a follower: the throttled partitions' bytes sent count
        toward the leader's quota, whether they were in sync or not (sizeOfThrottledPartitions;
        kproto counts their records' bytes, without the response's framing around them)."""
        sent = sum(getattr(p["records"], "length", None) or len(p["records"] or b"")
                   for t in responses for p in t["partitions"]
                   if self.leader_quota.is_throttled(t["topic"], p["partition_index"]))
        self.leader_quota.record(sent, now_ms())

    def _remove_topic(self, name: str) -> None:
        """A RemoveTopicRecord applied (ReplicaManager.applyDelta's deleted partitions):
        fetchers stop, waiting producers are answered, the logs are deleted."""
        for key in [k for k in self.partitions if k[0] == name]:
            part = self.partitions.pop(key)
            self._stop_following(part)
            part.leader = None
            part.wake()
        if any(t == name for t, _ in self.broker.logs.logs()):
            self.broker.logs.delete_topic(name)
        self.leader_quota.remove_throttle(name)
        self.follower_quota.remove_throttle(name)
        log.info("deleted topic %s", name)

    async def wait_for_metadata(self, done, timeout_s: float) -> bool:
        """Wait until ``done()`` holds of the image (CreateTopics waiting for its topics)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not done():
            if self._metadata_applied is None:
                self._metadata_applied = loop.create_future()
            left = deadline - loop.time()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(asyncio.shield(self._metadata_applied), left)
            except asyncio.TimeoutError:
                return done()
        return True

    def _apply_partition(self, topic: str, index: int) -> None:
        """ReplicaManager.applyDelta for one partition."""
        reg = self.image.partition(topic, index)
        if reg is None:
            return
        if self.node_id not in reg.replicas:
            if (topic, index) in self.partitions:
                self._remove_replica(topic, index)
            return
        part = self.partitions.get((topic, index))
        if part is None:
            part = Partition(topic, index, self.broker.logs.get_or_create_log(topic, index))
            part.log.update_high_watermark(self._hw_checkpoint.get((topic, index), 0))
            self.partitions[(topic, index)] = part
        old = part.reg
        part.reg = reg
        was_leader = part.leader is not None
        if reg.leader == self.node_id:
            if part.leader is not None and old is not None and old.leader_epoch == reg.leader_epoch:
                if reg.replicas != old.replicas:    # a reassignment's adding replicas: new followers
                    part.leader.set_replicas(reg.replicas)
                if part.leader.set_isr(frozenset(reg.isr)):     # the ISR the controller decided
                    self._hw_moved(part)
                part.wake()
                return
            self._stop_following(part)
            self._become_leader(part, reg)
            if not was_leader:
                # a coordinator's state partition loads once per leadership; a new epoch of
                # the same leadership keeps it (CoordinatorRuntime.scheduleLoadOperation)
                self.broker.coordinator_elected(topic, index)
        else:
            if part.leader is not None or old is None or old.leader_epoch != reg.leader_epoch or \
                    old.leader != reg.leader:
                self._become_follower(part, reg)
            if was_leader:
                self.broker.coordinator_resigned(topic, index)

    def _become_leader(self, part: Partition, reg: PartitionRegistration) -> None:
        """Partition.makeLeader: the new epoch starts at the log end."""
        plog = part.log
        part.assign_epoch(reg.leader_epoch, plog.log_end_offset)
        cfg = plog.config
        part.leader = PartitionLeader.become_leader(
            self.node_id, reg.replicas, frozenset(reg.isr), reg.leader_epoch, plog.log_end_offset,
            plog.high_watermark, now_ms(), min_insync_replicas=cfg.min_insync_replicas,
            replica_lag_time_max_ms=self.cfg["replica.lag.time.max.ms"])
        part.isr_pending = False
        part.leader._maybe_advance_hw()
        self._hw_moved(part)
        log.info("leader of %s-%d at epoch %d (ISR %s, log end %d)", part.topic, part.index, reg.leader_epoch,
                 list(reg.isr), plog.log_end_offset)

    def _become_follower(self, part: Partition, reg: PartitionRegistration) -> None:
        """Partition.makeFollower; produce requests waiting here complete NOT_LEADER_OR_FOLLOWER."""
        part.leader = None
        part.wake()
        self._stop_following(part)
        part.truncated = False
        part.fetch_lag = None
        if reg.leader != NO_LEADER:
            fetcher = self.fetchers.get(reg.leader)
            if fetcher is None or fetcher.task.done():
                fetcher = self.fetchers[reg.leader] = Fetcher(self, reg.leader)
            fetcher.partitions[(part.topic, part.index)] = part
            fetcher.wake()
        log.info("follower of %s-%d under leader %d at epoch %d", part.topic, part.index, reg.leader,
                 reg.leader_epoch)

    def _stop_following(self, part: Partition) -> None:
        for f in self.fetchers.values():
            f.partitions.pop((part.topic, part.index), None)

    def _hw_moved(self, part: Partition) -> None:
        part.sync_hw()
        self.broker.notify_appended()       # consumers' long polls may now read more

    def endpoint_of(self, broker_id: int, listener: str | None = None) -> tuple[str, int] | None:
        info = self.image.brokers.get(broker_id)
        if info is None:
            return None
        if listener is not None and listener in info.endpoints:
            return info.endpoints[listener]
        name = self.settings.inter_broker_listener_name
        return info.endpoints.get(name) if name in info.endpoints else next(iter(info.endpoints.values()), None)

    # -- serving (KafkaApis / ReplicaManager) ---------------------------------------------------

    def leading(self, topic: str, index: int) -> Partition | None:
        part = self.partitions.get((topic, index))
        return part if part is not None and part.leader is not None else None

    def replicated(self, topic: str) -> bool:
        """Whether the controller's metadata governs ``topic`` here: every topic but an
        internal one the controller has not created (yet)."""
        return topic in self.image.topics or not is_internal(topic)

    def leader_for(self, topic: str, index: int, current_leader_epoch: int = -1) -> tuple[Partition | None, ErrorCode]:
        """The partition if this node leads it (ReplicaManager.getPartitionOrError, then
        Partition.checkCurrentLeaderEpoch): unknown to the metadata, UNKNOWN_TOPIC_OR_PARTITION;
        led elsewhere, NOT_LEADER_OR_FOLLOWER; an older or newer epoch asked, FENCED_LEADER_EPOCH
        or UNKNOWN_LEADER_EPOCH."""
        if self.image.partition(topic, index) is None:
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        part = self.leading(topic, index)
        if part is None:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch == -1 or current_leader_epoch == part.leader_epoch:
            return part, ErrorCode.NONE
        return part, (ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < part.leader_epoch
                      else ErrorCode.UNKNOWN_LEADER_EPOCH)

    def produce_error(self, topic: str, index: int, acks: int) -> tuple[ErrorCode, str | None] | None:
        """Checked before an append (ReplicaManager.appendToLocalLog, Partition.appendRecordsToLeader)."""
        part, error = self.leader_for(topic, index)
        if error:
            return error, None
        error = part.leader.append_error(acks)
        if error:
            # Kafka's NotEnoughReplicasException text, logged; the answer carries no message
            # (ReplicaManager's LogAppendResult: hasCustomErrorMessage = false)
            log.info("The size of the current ISR Set(%s) is insufficient to satisfy the min.isr requirement "
                     "of %d for partition %s-%d", ", ".join(map(str, sorted(part.leader.isr))),
                     part.leader.min_insync_replicas, topic, index)
            return error, None
        return None

    def on_append(self, topic: str, index: int) -> int:
        """After a leader's append: -> the offset acks=all waits for (its LEO)."""
        part = self.leading(topic, index)
        if part is None:
            return -1
        if part.leader.on_append(part.log.log_end_offset):
            self._hw_moved(part)
        return part.log.log_end_offset

    async def wait_acks(self, topic: str, index: int, required: int, deadline_ms: int) -> ErrorCode:
        """DelayedProduce for one partition: NONE once the ISR has the records."""
        while True:
            part = self.leading(topic, index)
            if part is None:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            done, error = part.leader.acks_all(required)
            if done:
                return error
            left = deadline_ms - now_ms()
            if left <= 0:
                return ErrorCode.REQUEST_TIMED_OUT
            try:
                await asyncio.wait_for(asyncio.shield(part.changed()), left / 1000)
            except asyncio.TimeoutError:
                pass

    def on_follower_fetch(self, part: Partition, replica_id: int, fetch_offset: int) -> ErrorCode:
        """Partition.updateFollowerFetchState, then maybeExpandIsr."""
        leader = part.leader
        if replica_id not in leader.followers:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        leader.log_end_offset = part.log.log_end_offset
        result = leader.on_follower_fetch(replica_id, fetch_offset, now_ms())
        if result.high_watermark_advanced:
            self._hw_moved(part)
        if result.expand is not None and not part.isr_pending and self.image.partition(
                part.topic, part.index) is not None and replica_id in self.image.alive():
            self._alter_isr(part, leader.isr | {replica_id})
        return ErrorCode.NONE

    async def _isr_shrinker(self) -> None:
        """ReplicaManager.maybeShrinkIsr, every half lag time."""
        while not self.closing:
            await asyncio.sleep(self.cfg["replica.lag.time.max.ms"] / 2000)
            now = now_ms()
            for part in list(self.partitions.values()):
                if part.leader is None or part.isr_pending:
                    continue
                part.leader.log_end_offset = part.log.log_end_offset
                out = part.leader.out_of_sync(now)
                if out:
                    log.info("shrinking the ISR of %s-%d: %s lag", part.topic, part.index, sorted(out))
                    self._alter_isr(part, part.leader.isr - out)

    def _alter_isr(self, part: Partition, isr: frozenset[int]) -> None:
        part.isr_pending = True
        self._tasks.append(asyncio.create_task(self._send_alter_partition(part, isr)))
        self._tasks = [t for t in self._tasks if not t.done()]

    async def _send_alter_partition(self, part: Partition, isr: frozenset[int]) -> None:
        """Partition.submitAlterPartition and handleAlterPartitionUpdate."""
        reg = part.reg
        try:
            r = await self.controller.request(P.alter_partition.API.key, ALTER_PARTITION_VERSION, {
                "broker_id": self.node_id, "broker_epoch": self.broker_epoch,
                "topics": [{"topic_name": part.topic, "partitions": [{
                    "partition_index": part.index, "leader_epoch": reg.leader_epoch,
                    # the ISR in its registration's order, a joining replica last: Kafka's small
                    # Scala Sets keep insertion order (isr -- outOfSync, isr + replica)
                    "new_isr": [r for r in reg.isr if r in isr] + sorted(isr - set(reg.isr)),
                    "leader_recovery_state": 0,
                    "partition_epoch": reg.partition_epoch}]}]})
            answer = r.topics[0].partitions[0] if r.error_code == ErrorCode.NONE and r.topics else None
            if answer is not None and answer.error_code == ErrorCode.NONE and part.leader is not None \
                    and answer.leader_epoch == part.leader_epoch and answer.partition_epoch > part.reg.partition_epoch:
                part.reg = PartitionRegistration(reg.replicas, tuple(answer.isr), answer.leader_id,
                                                 answer.leader_epoch, answer.partition_epoch)
                if part.leader.set_isr(frozenset(answer.isr)):
                    self._hw_moved(part)
                part.wake()
            elif answer is not None and answer.error_code:
                log.info("AlterPartition of %s-%d: %s", part.topic, part.index, ErrorCode(answer.error_code).name)
        except ConnectionError as e:
            log.info("AlterPartition of %s-%d: %s", part.topic, part.index, e)
        finally:
            part.isr_pending = False

    async def create_topics(self, body: Any, version: int) -> dict:
        """CreateTopics goes to the controller (ForwardingManager; ControllerApis answers); the
        answer waits until this broker's metadata has the topics, up to the request's timeout."""
        try:
            r = await self.controller.request(P.create_topics.API.key, version, body)
        except ConnectionError as e:
            return {"throttle_time_ms": 0, "topics": [
                {"name": t.name, "topic_id": uuid.UUID(int=0), "error_code": ErrorCode.REQUEST_TIMED_OUT,
                 "error_message": f"the controller is unreachable: {e}", "num_partitions": -1,
                 "replication_factor": -1, "configs": None} for t in body.topics]}
        created = [t.name for t in r.topics if t.error_code == 0]
        if not body.validate_only:
            await self.wait_for_metadata(lambda: all(n in self.image.topics for n in created),
                                         max(body.timeout_ms, 0) / 1000)
        return r

    async def request_broker(self, broker_id: int, api_key: int, version: int, body: Any) -> Any:
        """One request to another broker over the inter-broker listener (the transaction
        coordinator's markers and verifications); ConnectionError if it has no endpoint."""
        where = self.endpoint_of(broker_id)
        if where is None:
            raise ConnectionError(f"broker {broker_id} is not registered")
        channel = self._brokers.get(broker_id)
        if channel is None or channel.address != where:
            if channel is not None:
                channel.close()
            channel = self._brokers[broker_id] = Channel(*where, f"broker-{self.node_id}-to-{broker_id}")
        return await channel.request(api_key, version, body)

    def auto_create_topic(self, topic: str, partitions: int, replication_factor: int,
                          configs: dict[str, Any]) -> None:
        """Create ``topic`` through the controller, not waiting (AutoTopicCreationManager.createTopics):
        a coordinator's state topic when first needed (offsets.topic.replication.factor or
        transaction.state.log.replication.factor, not capped: with fewer brokers the controller
        refuses INVALID_REPLICATION_FACTOR and FindCoordinator answers COORDINATOR_NOT_AVAILABLE
        until there are enough), or a topic Metadata asked for with auto-creation. One request
        per topic in flight at a time."""
        if topic in self.image.topics or topic in self._creating or self.closing:
            return
        self._creating.add(topic)
        body = {"topics": [{"name": topic, "num_partitions": partitions, "replication_factor": replication_factor,
                            "assignments": [], "configs": [{"name": k, "value": str(v)} for k, v in configs.items()]}],
                "timeout_ms": 30000, "validate_only": False}

        async def create() -> None:
            try:
                r = await self.controller.request(P.create_topics.API.key, 7, body)
                t = r.topics[0]
                if t.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                    log.warning("creating %s: %s %s", topic, ErrorCode(t.error_code).name, t.error_message)
            except ConnectionError as e:
                log.info("creating %s: %s", topic, e)
            finally:
                self._creating.discard(topic)

        self._tasks.append(asyncio.create_task(create()))

    async def delete_topics(self, wanted: list[tuple[str | None, Any]], timeout_ms: int) -> list[dict]:
        """DeleteTopics through the controller (ForwardingManager; ControllerApis.deleteTopics);
        the answer waits until this broker's metadata no longer has the topics, up to the
        request's timeout. Internal topics are refused here as by the standalone node."""
        answers: dict[int, dict] = {}
        ask = []
        for i, (name, topic_id) in enumerate(wanted):
            try:
                if name is not None:
                    self.broker.logs.check_not_internal(name, "delete")
                ask.append(i)
            except KafkaError as e:
                answers[i] = {"name": name, "topic_id": topic_id, "error_code": e.error_code,
                              "error_message": str(e)}
        if ask:
            try:
                r = await self.controller.request(P.delete_topics.API.key, 6, {
                    "topics": [{"name": wanted[i][0], "topic_id": wanted[i][1]} for i in ask],
                    "timeout_ms": timeout_ms})
                for i, a in zip(ask, r.responses):
                    answers[i] = {"name": a.name, "topic_id": a.topic_id, "error_code": a.error_code,
                                  "error_message": a.error_message}
            except ConnectionError as e:
                for i in ask:
                    answers[i] = {"name": wanted[i][0], "topic_id": wanted[i][1],
                                  "error_code": ErrorCode.REQUEST_TIMED_OUT,
                                  "error_message": f"the controller is unreachable: {e}"}
        deleted = {(a["name"], a["topic_id"]) for a in answers.values() if a["error_code"] == 0}
        await self.wait_for_metadata(lambda: all(n not in self.image.topics or self.image.topics[n].topic_id != i
                                                 for n, i in deleted), max(timeout_ms, 0) / 1000)
        return [answers[i] for i in range(len(wanted))]

    async def create_partitions(self, topics: list[Any], timeout_ms: int) -> dict[str, dict]:
        """CreatePartitions through the controller (checked by the caller); -> each topic's
        answer, once this broker's metadata has the new partitions (up to the timeout)."""
        body = {"topics": [{"name": t.name, "count": t.count,
                            "assignments": None if t.assignments is None else
                            [{"broker_ids": list(a.broker_ids)} for a in t.assignments]} for t in topics],
                "timeout_ms": timeout_ms, "validate_only": False}
        try:
            r = await self.controller.request(P.create_partitions.API.key, 3, body)
        except ConnectionError as e:
            return {t.name: {"name": t.name, "error_code": ErrorCode.REQUEST_TIMED_OUT,
                             "error_message": f"the controller is unreachable: {e}"} for t in topics}
        answers = {a.name: {"name": a.name, "error_code": a.error_code, "error_message": a.error_message}
                   for a in r.results}
        counts = {t.name: t.count for t in topics if not answers[t.name]["error_code"]}
        await self.wait_for_metadata(lambda: all(n in self.image.topics and len(self.image.topics[n].partitions) >= c
                                                 for n, c in counts.items()), max(timeout_ms, 0) / 1000)
        return answers

    def end_offset_for(self, topic: str, index: int, epoch: int, current_leader_epoch: int) -> dict:
        """OffsetForLeaderEpoch on the leader (Partition.lastOffsetForLeaderEpoch)."""
        out = {"partition": index, "error_code": 0, "leader_epoch": UNDEFINED_EPOCH, "end_offset": -1}
        part, error = self.leader_for(topic, index, current_leader_epoch)
        if error:
            out["error_code"] = error
            return out
        found = part.epochs.end_offset_for(epoch, part.log.log_end_offset)
        out.update(leader_epoch=found.leader_epoch, end_offset=found.end_offset)
        return out


class Fetcher:
    """ReplicaFetcherThread: the partitions this broker follows under one leader."""

    def __init__(self, manager: ReplicaManager, leader_id: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.channel: Channel | None = None
        self._wakeup = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    def wake(self) -> None:
        self._wakeup.set()

    async def _idle(self, seconds: float) -> None:
        self._wakeup.clear()
        try:
            await asyncio.wait_for(self._wakeup.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _run(self) -> None:
        m = self.manager
        backoff = m.cfg["replica.fetch.backoff.ms"] / 1000
        while not m.closing:
            live = {k: p for k, p in self.partitions.items() if p.reg is not None and p.reg.leader == self.leader_id}
            where = m.endpoint_of(self.leader_id)
            if not live or where is None:
                await self._idle(1.0)
                continue
            if self.channel is None or self.channel.address != where:
                if self.channel is not None:
                    self.channel.close()
                self.channel = Channel(*where, f"replica-fetcher-{m.node_id}-to-{self.leader_id}")
            try:
                if any(not p.truncated for p in live.values()):
                    await self._truncate([p for p in live.values() if not p.truncated])
                    if any(not p.truncated for p in live.values()):
                        await self._idle(backoff)       # the leader does not know its epoch yet
                    continue
                if not await self._fetch(live):
                    await self._idle(backoff)
            except ConnectionError as e:
                log.info("fetcher to %d: %s", self.leader_id, e)
                await self._idle(min(backoff, 0.5))
            except (KafkaError, DecodeError) as e:
                # what the leader sent does not append here (AbstractFetcherThread marks the
                # partition failed; here the round is retried after the backoff, and logged)
                log.error("fetcher to %d: %s", self.leader_id, e)
                await self._idle(backoff)

    async def _truncate(self, parts: list[Partition]) -> None:
        """AbstractFetcherThread.truncateToEpochEndOffsets."""
        m = self.manager
        topics: dict[str, list] = {}
        for p in parts:
            topics.setdefault(p.topic, []).append({"partition": p.index, "current_leader_epoch": p.leader_epoch,
                                                   "leader_epoch": p.epochs.latest_epoch})
        r = await self.channel.request(P.offset_for_leader_epoch.API.key, OFFSET_FOR_LEADER_EPOCH_VERSION, {
            "replica_id": m.node_id, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
        for t in r.topics:
            for a in t.partitions:
                part = self.partitions.get((t.topic, a.partition))
                if part is None:
                    continue
                if a.error_code:
                    continue      # a stale epoch on either side: the metadata will say more
                plog = part.log
                if part.epochs.latest_epoch == UNDEFINED_EPOCH:
                    # no epochs here (AbstractFetcherThread: truncate to the high watermark)
                    offset = plog.high_watermark
                else:
                    offset = truncation_offset(part.epochs, plog.log_end_offset,
                                               EpochEndOffset(a.leader_epoch, a.end_offset))
                if offset < plog.log_end_offset:
                    log.info("truncating %s-%d from %d to %d", part.topic, part.index, plog.log_end_offset, offset)
                    plog.truncate_to(offset)
                    part.epochs.truncate_from_end(offset)
                    part.save_epochs()
                part.truncated = True

    async def _fetch(self, live: dict[tuple[str, int], Partition]) -> bool:
        """One Fetch round; -> whether it got anything."""
        m = self.manager
        topics: dict[str, list] = {}
        quota, now = m.follower_quota, now_ms()
        for p in live.values():
            # RemoteLeaderEndPoint.shouldFollowerThrottle: a replica not in sync, throttled, over
            # the quota is left out of this round (an in-sync one always fetches)
            in_sync = p.fetch_lag is not None and p.fetch_lag <= 0
            if p.truncated and not (not in_sync and quota.is_throttled(p.topic, p.index)
                                    and quota.is_quota_exceeded(now)):
                topics.setdefault(p.topic, []).append({
                    "partition": p.index, "current_leader_epoch": p.leader_epoch,
                    "fetch_offset": p.log.log_end_offset, "last_fetched_epoch": -1,
                    "log_start_offset": p.log.log_start_offset,
                    "partition_max_bytes": m.cfg["replica.fetch.max.bytes"]})
        if not topics:
            return False        # every partition held back: the fetcher backs off (fetchBackOffMs)
        r = await self.channel.request(P.fetch.API.key, FETCH_VERSION, {
            "replica_id": m.node_id, "max_wait_ms": m.cfg["replica.fetch.wait.max.ms"], "min_bytes": 1,
            "max_bytes": m.cfg["replica.fetch.response.max.bytes"], "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [], "rack_id": ""})
        got = False
        errors = False
        for t in r.responses:
            for a in t.partitions:
                part = self.partitions.get((t.topic, a.partition_index))
                if part is None:
                    continue
                if a.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    part.truncated = False          # ask where our epoch ends again
                    continue
                if a.error_code:
                    errors = True
                    continue
                data = bytes(a.records or b"")
                if data:
                    got = True
                    self._append(part, data)
                part.log.update_high_watermark(min(a.high_watermark, part.log.log_end_offset))
                if data or part.fetch_lag is None:
                    part.fetch_lag = max(0, a.high_watermark - part.log.log_end_offset)
                # ReplicaFetcherThread.processPartitionData: in-sync or not, a throttled
                # partition's bytes count toward the quota
                if quota.is_throttled(part.topic, part.index):
                    quota.record(len(data), now_ms())
        return got and not errors

    @staticmethod
    def _append(part: Partition, data: bytes) -> None:
        """ReplicaFetcherThread.processPartitionData: the leader's offsets and epochs kept."""
        for batch in iter_batches(data, verify_crc=False):
            if isinstance(batch, RecordBatch) and batch.partition_leader_epoch >= 0:
                part.assign_epoch(batch.partition_leader_epoch, batch.base_offset)
        part.log.append(data, assign_offsets=False, origin=AppendOrigin.REPLICATION)
