"""Produce and Fetch over ``BrokerClient``: what the console tools need to
move records (one request at a time, to each partition's leader).

Fetched records come back as Kafka's consumer sees them
(``consumed_records``): control batches dropped, and under read_committed the
batches of aborted transactions too, from the response's aborted list and the
ABORT markers (Fetcher's CompletedFetch.nextFetchedRecord)."""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, NamedTuple

from kproto.client.admin import Admin, ClusterMetadata, TopicPartition, code
from kproto.client.transport import BrokerClient
from kproto.errors import ErrorCode, KafkaError, error_for
from kproto.records import Record, control_record, iter_batches

PRODUCE, FETCH = 0, 1
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
ABORT_MARKER = 0


class FetchedPartition(NamedTuple):
    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]         # (producer id, first offset)
    records: bytes


class ProduceResult(NamedTuple):
    error: ErrorCode
    base_offset: int
    log_append_time: int
    message: str | None


class ConsumedRecord(NamedTuple):
    """One record with the batch facts a formatter may print."""

    record: Record
    timestamp_type: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    attributes: int                              # the batch's


def consumed_records(data: bytes, fetch_offset: int, aborted: Iterable[tuple[int, int]] = (),
                     *, read_committed: bool = False, wrap: bool = True) -> Iterator[ConsumedRecord]:
    """The records at or past ``fetch_offset`` in a Fetch answer's bytes (a
    trailing partial batch is left for the next fetch); ``wrap=False``: the bare
    ``Record``s, without their batch's facts (a third faster for a consumer that
    prints values only)."""
    pending = sorted(aborted, key=lambda a: a[1]) if read_committed else []
    aborting: set[int] = set()
    for batch in iter_batches(data, allow_incomplete=True):
        if batch.next_offset <= fetch_offset:
            continue
        magic2 = batch.magic == 2
        if read_committed and magic2 and batch.is_transactional:
            while pending and pending[0][1] <= batch.last_offset:
                aborting.add(pending.pop(0)[0])
            if batch.is_control:
                for r in batch.records():
                    if control_record(r).type == ABORT_MARKER:
                        aborting.discard(batch.producer_id)
                continue
            if batch.producer_id in aborting:
                continue
        if magic2 and batch.is_control:
            continue
        if not wrap:
            if batch.base_offset >= fetch_offset:
                yield from batch.records()
            else:
                yield from (r for r in batch.records() if r.offset >= fetch_offset)
            continue
        ts_type = batch.timestamp_type
        epoch = batch.partition_leader_epoch if magic2 else -1
        pid, pepoch = (batch.producer_id, batch.producer_epoch) if magic2 else (-1, -1)
        txn = magic2 and batch.is_transactional
        for r in batch.records():
            if r.offset >= fetch_offset:
                yield ConsumedRecord(r, getattr(r, "timestamp_type", ts_type), epoch, pid, pepoch, txn,
                                     batch.attributes)


class DataClient:
    """Produce and Fetch routed to each partition's leader; ``admin`` for the rest."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self.admin = Admin(client)
        self._leaders: dict[TopicPartition, int] = {}
        self._nodes: dict[int, BrokerClient] = {}
        self.cluster: ClusterMetadata | None = None

    def close(self) -> None:
        self.admin.close()
        for c in self._nodes.values():
            if c is not self.client:
                c.close()
        self._nodes.clear()

    def refresh(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        md = self.admin.metadata(None if topics is None else list(topics))
        self.cluster = md
        for t in md.topics.values():
            for p in t.partitions:
                self._leaders[(t.name, p.partition)] = p.leader
        return md

    def partition_count(self, topic: str) -> int:
        """``topic``'s partitions, after a metadata refresh; its error as a KafkaError."""
        t = self.refresh([topic]).topics.get(topic)
        if t is None or t.error != ErrorCode.NONE:
            error = t.error if t else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            raise error_for(error, f"topic {topic}: {ErrorCode(error).name}")
        return len(t.partitions)

    def _leader(self, tp: TopicPartition) -> BrokerClient:
        if tp not in self._leaders:
            self.refresh([tp[0]])
        leader = self._leaders.get(tp, -1)
        if leader < 0:
            raise KafkaError(f"no leader for {tp[0]}-{tp[1]}", error_code=ErrorCode.LEADER_NOT_AVAILABLE)
        if leader not in self._nodes:
            node = next((b for b in self.cluster.brokers if b.node_id == leader), None)
            if node is None:
                raise KafkaError(f"leader {leader} of {tp[0]}-{tp[1]} is not among the brokers",
                                 error_code=ErrorCode.LEADER_NOT_AVAILABLE)
            self._nodes[leader] = self.client.connect_to(node.host, node.port)
        return self._nodes[leader]

    def forget(self, tp: TopicPartition) -> None:
        """After NOT_LEADER_OR_FOLLOWER and the like: ask Metadata again next time."""
        self._leaders.pop(tp, None)

    def fetch(self, offsets: Mapping[TopicPartition, int], *, isolation_level: int = READ_UNCOMMITTED,
              max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 52_428_800,
              partition_max_bytes: int = 1_048_576) -> dict[TopicPartition, FetchedPartition]:
        """One Fetch (sessionless) per leader."""
        by_leader: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, offset in offsets.items():
            client = self._leader(tp)
            by_leader.setdefault(id(client), []).append((tp, offset))
        clients = {id(c): c for c in self._nodes.values()}
        out = {}
        for key, items in by_leader.items():
            topics: dict[str, list[dict]] = {}
            for (topic, partition), offset in items:
                topics.setdefault(topic, []).append({
                    "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                    "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": partition_max_bytes})
            body = clients[key].request(FETCH, {
                "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": max_bytes,
                "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [], "rack_id": ""})
            if body.get("error_code", 0):
                raise KafkaError(error_code=code(body.error_code))
            for t in body.responses:
                for p in t.partitions:
                    aborted = tuple((a.producer_id, a.first_offset) for a in (p.get("aborted_transactions") or ()))
                    out[(t.topic, p.partition_index)] = FetchedPartition(
                        code(p.error_code), p.high_watermark, p.get("last_stable_offset", -1),
                        p.get("log_start_offset", -1), aborted, bytes(p.records or b""))
        return out

    def produce(self, batches: Mapping[TopicPartition, bytes], *, acks: int = -1,
                timeout_ms: int = 30_000) -> dict[TopicPartition, ProduceResult]:
        """One Produce per leader; ``acks=0`` gets no answer (results say NONE, offset -1)."""
        by_leader: dict[int, list[tuple[TopicPartition, bytes]]] = {}
        for tp, data in batches.items():
            by_leader.setdefault(id(self._leader(tp)), []).append((tp, data))
        clients = {id(c): c for c in self._nodes.values()}
        out = {}
        for key, items in by_leader.items():
            topics: dict[str, list[dict]] = {}
            for (topic, partition), data in items:
                topics.setdefault(topic, []).append({"index": partition, "records": data})
            body = {"transactional_id": None, "acks": acks, "timeout_ms": timeout_ms,
                    "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()]}
            if acks == 0:
                clients[key].send_only(PRODUCE, body)
                out.update({tp: ProduceResult(ErrorCode.NONE, -1, -1, None) for tp, _ in items})
                continue
            answer = clients[key].request(PRODUCE, body)
            for t in answer.responses:
                for p in t.partition_responses:
                    out[(t.name, p.index)] = ProduceResult(code(p.error_code), p.base_offset,
                                                           p.get("log_append_time_ms", -1), p.get("error_message"))
        return out


__all__ = ["ConsumedRecord", "DataClient", "FetchedPartition", "ProduceResult", "READ_COMMITTED",
           "READ_UNCOMMITTED", "consumed_records"]
