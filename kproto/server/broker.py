"""The reference broker: request dispatch over the protocol registry and the log.

A frame comes in from ``network.BrokerServer``; its header picks the handler
module (one per API family, ``kproto/server/handlers/``) and the version the
body is read and answered in; ``dispatch`` hands the handler the body and a
``RequestContext`` (header fields, principal, listener, connection). Handlers
are ``async (broker, ctx, body) -> body | None`` (None: no response, Produce
acks=0). Kafka's rules for bad
input: an unknown API key or a body that does not parse closes the
connection; ApiVersions at a version we do not speak gets error 35 (KIP-511);
other APIs outside their advertised range close the connection.

Client quotas (server/quotas.py) are applied after the handler, as KafkaApis
does: Produce's request bytes and Fetch's response bytes against the byte
rates, every request's handling time against request_percentage; a throttled
Fetch answers no partitions. The response carries ``throttle_time_ms`` and the
connection is muted that long once it is sent (KIP-219).

Handlers run on the event-loop thread; Produce's appends take ``append_lock``,
which every other appender (the group and transaction coordinators) takes too,
so appends never interleave; large ones, and those that may fsync, run in a
worker thread (handlers/produce.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from construct import Container

from kproto.common import GROUP_METADATA_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, now_ms
from kproto.errors import DecodeError, ErrorCode, KafkaError, UnsupportedVersionError
from kproto.features import FRESH_CLUSTER, SUPPORTED as SUPPORTED_FEATURES, TRANSACTION_VERSION, FinalizedFeatures
from kproto.log import LogManager
from kproto.log.file_pool import default_pool
from kproto import protocol
from kproto.schemas.message import RECORDS, carries
from kproto.server import (
    access, emulation, fault_hook, group_service, handlers, share_service, topic_ids, txn_service,
)
from kproto.server.cluster.settings import cluster_settings
from kproto.server.config import BrokerConfig
from kproto.server.dynamic_config import DynamicBrokerConfig
from kproto.server.faults import FaultPlan
from kproto.server.storage import bootstrap_features
from kproto.server.handlers import Api, RequestContext
from kproto.server.network import (
    BrokerServer, CloseConnection, ConnectionInfo, FileRegion, Limits, RecordsRegion, ResponsePart,
    release_regions, response_size,
)
from kproto.security.errors import IllegalSaslStateError
from kproto.server.producer_state import ProducerIdManager
from kproto.server.quotas import NANOS_TO_PERCENTAGE, ClientQuotas
from kproto.security.principal import ANONYMOUS
from kproto.server.security_service import SecurityService
from kproto.server.telemetry import ClientMetricsManager
from kproto.server.txn_coordinator import TransactionResult, WriteTxnMarkers

if TYPE_CHECKING:       # imported when a node of a cluster starts: a standalone broker never loads them
    from kproto.server.cluster.controller import Controller
    from kproto.server.cluster.replica_manager import ReplicaManager

log = logging.getLogger("kproto.server")

# The APIs whose responses can hold records, which handlers may leave in the
# segment files (RecordsRegion): only their answers are searched for regions.
RECORDS_RESPONSES = frozenset(k for k, spec in protocol.API_KEYS.items()
                              if carries(spec.response_schema, RECORDS))

API_VERSIONS = protocol.api_versions.API.key
PRODUCE, FETCH = protocol.produce.API.key, protocol.fetch.API.key
# Answered before authentication, outside KafkaApis' quotas
QUOTA_EXEMPT = frozenset({protocol.sasl_handshake.API.key, protocol.sasl_authenticate.API.key})


class Broker:
    """One node: its logs, its handlers, its background passes."""

    def __init__(self, data_dir: str | Path, config: BrokerConfig | None = None, *,
                 host: str = "127.0.0.1", port: int = 9092, kafka_version: str | None = None) -> None:
        # The static config, then the dynamic layers AlterConfigs set over it (kept in the data dir).
        self.dynamic = DynamicBrokerConfig(data_dir, config or BrokerConfig.from_props())
        self.config = self.dynamic.merged()
        self.host, self.port = host, port
        default_pool().resize(self.config["log.max.open.files"])    # before the logs load
        self.logs = LogManager(Path(data_dir), default_config=self.config.log_defaults,
                               node_id=self.config["node.id"], cluster_id=self.config["cluster.id"] or None)
        self.node_id = self.logs.node_id
        self.cluster_id = self.logs.cluster_id
        emulated = None if kafka_version is None else emulation.release(kafka_version)
        # ApiVersions, UpdateFeatures, transactions; a new data directory as the emulated release's fresh cluster
        self.features = FinalizedFeatures(self.logs.data_dir, (emulated and emulation.fresh_features(
            emulated, SUPPORTED_FEATURES)) or bootstrap_features(self.logs.data_dir) or FRESH_CLUSTER)
        self.supported_features = emulation.supported_features(emulated, SUPPORTED_FEATURES)
        self.producer_ids = ProducerIdManager(next_id=1000 + now_ms() % 1_000_000 * 1000)
        self._appended: asyncio.Future | None = None
        # Serializes log appends (produce runs them in a worker thread; the group
        # coordinator appends under it too) and the producer-state checks around them.
        self.append_lock = threading.Lock()
        self.apis: dict[int, Api] = handlers.table()
        # the (oldest, newest) advertised per API: --kafka-version's, as that release and kproto both
        # answer, else Kafka 4.4's oldest (KIP-896) to kproto's newest
        served = {k: api.versions for k, api in self.apis.items()}
        self.kafka_version = kafka_version
        self.advertised = emulation.current(served) if emulated is None else emulation.advertised(emulated, served)
        self.groups: group_service.GroupService | None = None   # set by start(), before any request
        self.transactions: txn_service.TxnService | None = None  # likewise
        self.shares: share_service.ShareService | None = None    # likewise
        self._tasks: list[asyncio.Task] = []
        self.security = SecurityService(self.config.values, data_dir, host, port)
        self.client_metrics = ClientMetricsManager(data_dir, self.config["telemetry.max.bytes"])
        self.faults = FaultPlan()       # empty: no fault, no cost but one truth test per request
        # the quotas AlterClientQuotas stored (kept with the dynamic configs), enforced per request
        self.quotas = ClientQuotas(self.dynamic.client_quotas, self.config["quota.window.num"],
                                   self.config["quota.window.size.seconds"], self.config["controller.quota.window.num"],
                                   self.config["controller.quota.window.size.seconds"])
        self.server = BrokerServer(self.handle, limits=Limits.from_config(self.config),
                                   on_connect=self.security.on_connect, faults=self.faults,
                                   connection_throttle=lambda host: self.quotas.connections.record(host, now_ms()))
        # A node of a cluster (process.roles set): its controller, if it is a voter of the
        # KRaft quorum, and its ReplicaManager; both None for the standalone node (docs/cluster.md).
        self.cluster_settings = cluster_settings(self.config.values)
        self.controller: Controller | None = None
        self.cluster: ReplicaManager | None = None

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> tuple[str, int]:
        settings = self.cluster_settings
        if settings is not None and "controller" in settings.roles:
            from kproto.server.cluster.controller import Controller
            self.controller = Controller(self.logs.data_dir, self.config, self.cluster_id, node_id=settings.node_id,
                                         voters=settings.voters)
            bound = await self.controller.start(*settings.controller_address)
            voters = dict(settings.voters)
            if not settings.dynamic_voters:
                voters[settings.node_id] = bound        # port 0 in the voters: the port it bound
            settings = self.cluster_settings = replace(settings, voters=voters)
            if "broker" not in settings.roles:
                # isolated mode (process.roles=controller): the controller listener only, no client
                # listener, no broker registration, no coordinators (Kafka's ControllerServer alone)
                return bound
        if settings is not None and "broker" in settings.roles:
            from kproto.server.cluster.replica_manager import ReplicaManager
            self.cluster = ReplicaManager(self, settings)     # before the listeners: handlers ask it
            self.producer_ids = self.cluster.producer_ids     # blocks from the controller (AllocateProducerIds)
        handlers.load_all()     # before listening: no request may need an import (file descriptors)
        host, port = await self.security.start(self.server)
        self.port = port
        if self.cluster is not None:
            await self.cluster.start()
        await self._start_groups()
        self.transactions = txn_service.TxnService(
            self.logs, self.config.values, allocate_producer_id=self.producer_ids.allocate,
            append_lock=self.append_lock, on_markers=self.markers_written,
            transaction_version=lambda: self.features.level(TRANSACTION_VERSION), replication=self.cluster,
            replication_factor=int(self.config.overrides.get("transaction.state.log.replication.factor", 3)))
        await self.transactions.start()
        self._elect_led(TRANSACTION_STATE_TOPIC_NAME)
        if self.cluster is None:    # in a cluster the two coordinators of a transaction are on different nodes
            self._abort_orphaned_txn_offsets()
        self._tasks.append(asyncio.create_task(self._background()))
        return host, port

    async def _start_groups(self) -> None:
        # On a node of a cluster __consumer_offsets is the controller's, offsets.topic.replication.factor
        # Kafka's default 3 unless set (kproto's standalone default is 1: one node)
        rf = int(self.config.overrides.get("offsets.topic.replication.factor", 3))
        self.groups = group_service.GroupService(self.logs, self.config.values,
                                                 node=(self.node_id, self.host, self.port),
                                                 append_lock=self.append_lock, replication=self.cluster,
                                                 replication_factor=rf)
        await self.groups.start()
        self._elect_led(GROUP_METADATA_TOPIC_NAME)
        self.shares = share_service.ShareService(
            self.logs, self.config.values, append_lock=self.append_lock, replication=self.cluster,
            replication_factor=self.config.values["share.coordinator.state.topic.replication.factor"])
        await self.shares.start()
        self._elect_led(SHARE_GROUP_STATE_TOPIC_NAME)
        self.groups.coordinator.use_group_configs(self.shares.group_configs.overrides)

    async def close(self) -> None:
        if self.cluster is not None:
            await self.cluster.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.server.close()
        if self.groups is not None:
            await self.groups.close()
        if self.shares is not None:
            await self.shares.close()
        if self.transactions is not None:
            await self.transactions.close()
        if self.controller is not None:
            await self.controller.close()
        self.logs.close()

    async def reconfigure(self, config: BrokerConfig) -> None:
        """Apply a new effective config (a dynamic broker config changed): topic
        defaults to every log, connection limits to the listeners; the background
        passes read their intervals from ``self.config`` each round."""
        self.config = config
        self.logs.set_default_config(config.log_defaults)
        await self.server.reconfigure(Limits.from_config(config))

    def _intervals(self) -> dict[str, int | None]:
        cfg = self.config
        return {"flush": min(cfg["log.flush.scheduler.interval.ms"], 1000),
                "retention": cfg["log.retention.check.interval.ms"],
                "clean": cfg["log.cleaner.backoff.ms"] if cfg["log.cleaner.enable"] else None}

    async def _background(self) -> None:
        """Flush, retention and compaction passes, at Kafka's configured intervals."""
        due = {k: now_ms() + v for k, v in self._intervals().items() if v is not None}
        while True:
            await asyncio.sleep(max(0.05, (min(due.values()) - now_ms()) / 1000))
            t = now_ms()
            intervals = self._intervals()
            for kind, at in list(due.items()):
                if at > t:
                    continue
                due[kind] = t + intervals[kind]
                try:
                    if kind == "flush":
                        self.logs.flush_dirty_logs(t)
                    elif kind == "retention":
                        self.logs.cleanup_logs(t)
                    else:
                        self.logs.clean_logs(t)
                except Exception:   # a background failure is logged, the broker serves on
                    log.exception("background %s pass failed", kind)

    # -- dispatch ----------------------------------------------------------------------------

    async def handle(self, frame: bytes, conn: ConnectionInfo) -> list[ResponsePart] | None:
        sec = conn.security
        conn.fault, conn.throttle_ms = None, 0
        if sec is not None and sec.session is not None and sec.session.expects_raw_token:
            from kproto.server.handlers.sasl import raw_token
            parts = raw_token(sec, frame)
            conn.closing = conn.failed_authentication = parts is None
            return parts
        try:
            header, offset = protocol.decode_request_header(frame)
        except DecodeError as e:
            raise CloseConnection(f"unreadable request header: {e}") from None
        key, version = header.request_api_key, header.request_api_version
        conn.client_id = header.client_id
        if sec is not None and sec.session is not None:
            try:
                sec.session.check(key)      # before authentication only ApiVersions and SASL
            except IllegalSaslStateError as e:
                if sec.session.authenticated:   # an expired session: closed at once, as Kafka does
                    raise
                log.warning("closing %s: %s", conn.peer, e)     # Kafka: a failed authentication
                conn.closing = conn.failed_authentication = True
                return None
        api = self.apis.get(key)
        if api is None:
            raise CloseConnection(f"unsupported API key {key}")
        lo, hi = api.versions
        if not lo <= version <= hi:
            if key == API_VERSIONS:   # KIP-511: answer in v0 so the client can pick a version
                body = self.api_versions_body(error_code=ErrorCode.UNSUPPORTED_VERSION)
                return [protocol.encode_response(key, version, header.correlation_id, body)]
            raise CloseConnection(f"{protocol.api(key).name} v{version} is not supported (v{lo}-{hi})")
        if not self._advertises(key, version):     # KIP-896's removals, or --kafka-version's range
            if key == API_VERSIONS:
                body = self.api_versions_body(error_code=ErrorCode.UNSUPPORTED_VERSION)
                return [protocol.encode_response(key, version, header.correlation_id, body)]
            if key not in self.advertised:
                raise CloseConnection(f"{protocol.api(key).name} is not an API of the emulated Kafka release")
        try:
            body = protocol.decode_request_body(header, frame, offset, allow_trailing=True)
        except (DecodeError, UnsupportedVersionError) as e:
            raise CloseConnection(f"malformed {protocol.api(key).name} v{version} request: {e}") from None
        ctx = request_context(header, conn)

        def run(b: Container) -> Awaitable[Any]:
            return self.dispatch(api, ctx, b)

        if not self._advertises(key, version):
            response = await fault_hook.error_response(key, version, body, None, ErrorCode.UNSUPPORTED_VERSION, run)
            return None if response is None else self.encode(key, version, header.correlation_id, response)
        # topics named by id (KIP-516): named for the fault plane, authorization and the handler,
        # given their ids back after (server/topic_ids.py)
        unknown = topic_ids.to_names(self.logs, key, version, body)
        started = time.thread_time_ns() if self.quotas.enabled() and key not in QUOTA_EXEMPT else None
        if self.faults:     # the fault plane (server/faults.py): only while rules are set
            response = await fault_hook.handle(self.faults, header, body, conn, run)
        else:
            response = await self.dispatch(api, ctx, body)
        topic_ids.to_ids(self.logs, key, version, response, unknown)
        if sec is not None and sec.extra.get("close"):     # a failed SASL handshake or authentication
            conn.closing = conn.failed_authentication = True
        if started is not None:
            return self._throttled(ctx, len(frame), response, time.thread_time_ns() - started)
        if response is None:
            return None
        return self.encode(key, version, header.correlation_id, response)

    def _throttled(self, ctx: RequestContext, request_size: int, response: Any,
                   thread_ns: int) -> list[ResponsePart] | None:
        """The response after the request is recorded in its quotas, as KafkaApis does for
        Produce (handleProduceRequest: request bytes; no request quota with acks=0), Fetch
        (handleFetchRequest: response bytes, taken back and no partitions answered when
        throttled) and the rest (sendResponseMaybeThrottle: request time). The larger
        throttle time is answered and mutes the connection."""
        key, version, q, now = ctx.request_api_key, ctx.request_api_version, self.quotas, now_ms()
        user, client = ctx.principal.name, ctx.client_id or ""
        percent = thread_ns * NANOS_TO_PERCENTAGE
        parts = None
        if key == PRODUCE:
            throttle = q.produce.record(user, client, request_size, now)
            if response is not None:
                throttle = max(throttle, q.request.record(user, client, percent, now))
        elif key == FETCH:
            parts = self.encode(key, version, ctx.correlation_id, response)
            # FetchResponse.sizeOf: 4 + the body's size
            size = response_size(parts) - (4 if protocol.response_header_version(key, version) == 0 else 5) + 4
            throttle = max(q.request.record(user, client, percent, now), q.fetch.record(user, client, size, now))
            if throttle:
                q.fetch.unrecord(user, client, size, now)
                release_regions(parts)
                parts, response = None, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": []}
        else:
            throttle = q.request.record(user, client, percent, now)
        ctx.connection.throttle_ms = max(ctx.connection.throttle_ms, throttle)
        if response is None:
            return None
        if throttle > (response.get("throttle_time_ms") or 0) and \
                "throttle_time_ms" in protocol.api(key).response(version).wire_names:
            response["throttle_time_ms"] = throttle
            parts = None
        return parts if parts is not None else self.encode(key, version, ctx.correlation_id, response)

    async def dispatch(self, api: Api, ctx: RequestContext, body: Container) -> Any:
        """Run one decoded request's handler, under its API's authorization rule when an
        authorizer is configured: the one place every request meets its handler."""
        if self.security.authorizer is not None:
            return await access.guarded(self, ctx, body, api.handle)
        return await api.handle(self, ctx, body)

    def encode(self, key: int, version: int, correlation_id: int, body: Any) -> list[ResponsePart]:
        regions: list[RecordsRegion] = []
        if key in RECORDS_RESPONSES:
            _collect_regions(body, regions)
        try:
            frame = protocol.encode_response(key, version, correlation_id, body)
        except BaseException:
            release_regions(regions)     # the pinned segment files of a response never sent
            raise
        if not regions:
            return [frame]
        header_len = 4 if protocol.response_header_version(key, version) == 0 else 5
        parts: list[ResponsePart] = []
        pos = 0
        for r in sorted(regions, key=lambda r: r.at):
            cut = header_len + r.at
            parts.append(frame[pos:cut])
            parts.append(FileRegion(r.fd, r.position, r.length, r.path, r.release))
            pos = cut
        parts.append(frame[pos:])
        return parts

    def _advertises(self, key: int, version: int) -> bool:
        lo, hi = self.advertised.get(key, (0, -1))
        return lo <= version <= hi

    def api_versions_body(self, error_code: int = 0, version: int = 4) -> dict:
        ranges = self.advertised
        body = {"error_code": error_code, "throttle_time_ms": 0,
                "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi}
                             for k, (lo, hi) in sorted(ranges.items())]}
        supported = self.supported_features
        if supported is not None:   # v3+ tagged fields, as Kafka answers (ApiVersionsResponse.createApiVersionsResponse)
            finalized = emulation.finalized_features(supported, self.features.levels)
            body.update(
                # below v4 a feature whose oldest level is 0 is left out, since older clients
                # refuse such a range (KIP-1022; measured on 4.0.2 .. 4.3.1 at v3)
                supported_features=[{"name": n, "min_version": lo, "max_version": hi}
                                    for n, (lo, hi) in sorted(supported.items()) if version >= 4 or lo > 0],
                finalized_features_epoch=self.features.epoch,
                finalized_features=[{"name": n, "max_version_level": level, "min_version_level": level}
                                    for n, level in sorted(finalized.items())])
        return body

    def _abort_orphaned_txn_offsets(self) -> None:
        """Offsets loaded pending in a transaction that the transaction coordinator will never
        end in their partition (committed before TxnOffsetCommit was verified, or with
        ``__transaction_state`` lost) would answer UNSTABLE_OFFSET_COMMIT forever: abort them
        with the marker ``kproto transactions abort`` (WriteTxnMarkers) would write."""
        offsets = GROUP_METADATA_TOPIC_NAME
        orphans = self.groups.coordinator.pending_txn_producers() - self.transactions.open_offsets_transactions(offsets)
        for partition, pid in sorted(orphans):
            plog = self.logs.get_log(offsets, partition)
            entry = plog.producer_state.producers.get(pid) if plog is not None else None
            log.warning("aborting the offsets of producer %d pending in %s-%d: no transaction of the "
                        "coordinator will end them", pid, offsets, partition)
            if entry is not None:
                order = WriteTxnMarkers(0, "", pid, entry.producer_epoch, entry.coordinator_epoch,
                                        TransactionResult.ABORT, ((offsets, partition),))
                if self.transactions.write_marker(order, offsets, partition) is ErrorCode.NONE:
                    self.markers_written(order, [(offsets, partition)])
                    continue
            self.groups.coordinator.complete_txn_offsets(partition, pid, committed=False)

    # -- shared state for handlers -----------------------------------------------------------

    def markers_written(self, order: WriteTxnMarkers, written: list[tuple[str, int]]) -> None:
        """Markers reached partitions: read_committed fetches may move on; offsets
        committed in the transaction become the groups' (or are dropped)."""
        for topic, partition in written:
            if topic == GROUP_METADATA_TOPIC_NAME and self.groups is not None:
                self.groups.coordinator.complete_txn_offsets(partition, order.producer_id,
                                                             order.result.name == "COMMIT")
        self.notify_appended()

    def _state_topic_shell(self, topic: str):
        return {GROUP_METADATA_TOPIC_NAME: self.groups, TRANSACTION_STATE_TOPIC_NAME: self.transactions,
                SHARE_GROUP_STATE_TOPIC_NAME: self.shares}.get(topic)

    def _elect_led(self, topic: str) -> None:
        """A coordinator started after the node's partitions were applied: load what it leads."""
        if self.cluster is not None:
            for (name, index), part in sorted(self.cluster.partitions.items()):
                if name == topic and part.leader is not None:
                    self.coordinator_elected(name, index)

    def coordinator_elected(self, topic: str, partition: int) -> None:
        """This node became the leader of a coordinator's state partition (a node of a cluster)."""
        shell = self._state_topic_shell(topic)
        if shell is not None:
            shell.elected(partition)
        self._leadership_moved(topic, partition)

    def coordinator_resigned(self, topic: str, partition: int) -> None:
        shell = self._state_topic_shell(topic)
        if shell is not None:
            shell.resigned(partition)
        self._leadership_moved(topic, partition)

    def _leadership_moved(self, topic: str, partition: int) -> None:
        """Share partitions of a topic partition are its leader's; share groups are their
        ``__consumer_offsets`` partition's leader's (SharePartitionManager, GroupCoordinator)."""
        if self.shares is None:
            return
        self.shares.leadership_moved(topic, partition)
        if topic == GROUP_METADATA_TOPIC_NAME and self.groups is not None:
            owned = self.groups.coordinator.validate_group_status
            self.shares.coordinator.drop_groups(lambda g: owned(g, "ShareGroupHeartbeat") is None)

    def notify_appended(self) -> None:
        """Wake long-polling fetches (they re-read and decide)."""
        if self._appended is not None and not self._appended.done():
            self._appended.set_result(None)
        self._appended = None

    def wait_for_append(self) -> asyncio.Future:
        if self._appended is None:
            self._appended = asyncio.get_running_loop().create_future()
        return self._appended

    def auto_create(self, topic: str) -> bool:
        """Metadata/Produce auto-creation (auto.create.topics.enable); True if it exists now.
        A node of a cluster asks the controller and answers False meanwhile (Kafka's
        AutoTopicCreationManager; Metadata says LEADER_NOT_AVAILABLE until the topic is there)."""
        if self.has_topic(topic):
            return True
        if not self.config["auto.create.topics.enable"]:
            return False
        if self.cluster is not None:
            self.cluster.auto_create_topic(topic, self.config["num.partitions"],
                                           self.config["default.replication.factor"], {})
            return False
        try:
            self.logs.create_topic(topic, self.config["num.partitions"])
        except KafkaError:
            return self.logs.has_topic(topic)
        return True

    def endpoint(self, ctx: RequestContext) -> tuple[str, int]:
        """The address clients are told (Metadata, FindCoordinator): the advertised
        address of the listener the request came in on."""
        return self.security.endpoint(ctx.listener) or (self.host, self.port)

    # The topics clients are told of: this node's logs, or on a node of a cluster the
    # controller's registrations (a broker hosts only some of them).

    def topic_names(self) -> set[str]:
        return set(self.cluster.image.topics) if self.cluster is not None else self.logs.topics()

    def has_topic(self, topic: str) -> bool:
        return topic in self.cluster.image.topics if self.cluster is not None else self.logs.has_topic(topic)

    def topic_overrides(self, topic: str) -> dict[str, str]:
        """The topic's own configs: on a node of a cluster, the metadata image's (ConfigRecords),
        which every node has, hosting a replica of the topic or not."""
        if self.cluster is not None:
            return dict(self.cluster.image.topics[topic].configs)
        return self.logs.topic_overrides(topic)

    def topic_id(self, topic: str):
        return self.cluster.image.topics[topic].topic_id if self.cluster is not None else self.logs.topic_id(topic)

    def partition_count(self, topic: str) -> int:
        if self.cluster is not None:
            return len(self.cluster.image.topics[topic].partitions)
        return self.logs.partition_count(topic)


def _collect_regions(value: Any, out: list[RecordsRegion]) -> None:
    if isinstance(value, RecordsRegion):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _collect_regions(v, out)
    elif isinstance(value, list):
        for v in value:
            _collect_regions(v, out)


def request_context(header: Container, conn: ConnectionInfo) -> RequestContext:
    """The request's ``RequestContext``: its header's fields and its connection's principal
    and listener as they are now (SASL may change them between requests)."""
    sec = conn.security
    return RequestContext(header.request_api_key, header.request_api_version, header.correlation_id,
                          header.client_id, conn.peer,
                          sec.host if sec is not None else conn.peer.rsplit(":", 1)[0].strip("[]"),
                          sec.principal if sec is not None else ANONYMOUS,
                          sec.listener if sec is not None else None, conn)


async def serve(data_dir: str | Path, config: BrokerConfig, host: str, port: int,
                ready: Callable[[str, int, tuple[str, int] | None], None] | None = None, *,
                control: tuple[str, int] | None = None, kafka_version: str | None = None) -> None:
    """Run until SIGTERM/SIGINT, then shut down cleanly (checkpoints, marker). ``control``:
    where the fault plane's HTTP endpoint listens (server/control.py)."""
    import signal
    from kproto.server.control import ControlPlane
    broker = Broker(data_dir, config, host=host, port=port, kafka_version=kafka_version)
    plane: ControlPlane | None = None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        h, p = await broker.start()
        plane = ControlPlane(broker.faults, broker.server) if control is not None else None
        where = await plane.start(*control) if plane is not None else None
        # what start-up made (modules, configs, compiled codecs, the logs' state) lives as long as
        # the broker: out of the collector's generations, a full collection walks only what
        # serving made (one walked start-up's objects for ~50 ms amid bench_txn's transactions)
        gc.freeze()
        if ready is not None:
            ready(h, p, where)
        await stop.wait()
    finally:
        if plane is not None:
            await plane.close()
        await broker.close()
