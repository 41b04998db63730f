"""Apache Kafka's Java client (kafka-clients 4.4) against kproto's broker and against Kafka's.

tests/java/KprotoClient.java runs each scenario and prints what happened; both brokers
must give the same observable outcome: each record delivered once, in order, with its
headers; the group's offsets committed; transactions' records visible or hidden; the
admin answers; a KIP-848 consumer group's and a KIP-932 share group's records.
"""

from __future__ import annotations

import json
import re

import pytest

import kproto.testing
from kproto.records import iter_batches
from kproto.schemas import protocol as P
from tests import java_client
from tests.helpers import fetch_raw, request_raw
from tests.kafka_ref import KafkaUnavailable, unavailable

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
LOG_DIRS: dict = {}         # kind -> the broker's log directory
PAYLOAD = re.compile(r" payload: (\{.*\})$", re.M)


@pytest.fixture(scope="module", params=["kproto", "kafka"])
def broker(request, kafka_ref, tmp_path_factory):
    """(kind, bootstrap): kproto's broker, then Apache Kafka's, each once per module."""
    data = tmp_path_factory.mktemp(request.param)
    if request.param == "kproto":
        with kproto.testing.broker(config={"transaction.state.log.num.partitions": "1"}, data_dir=data / "data") as b:
            LOG_DIRS["kproto"] = data / "data"
            yield "kproto", b.bootstrap_servers
        return
    try:
        with kafka_ref.broker(data) as b:
            LOG_DIRS["kafka"] = b.log_dir
            yield "kafka", b.bootstrap
    except KafkaUnavailable as e:
        unavailable(e)


def run(kafka_ref, scenario: str, bootstrap: str, **args: object) -> java_client.Outcome:
    return java_client.run(kafka_ref, scenario, bootstrap=bootstrap, **args)


def consumed(out: java_client.Outcome) -> list[tuple]:
    return [(e["partition"], e["offset"], e["key"], e["value"], e["headers"]) for e in out.of("consumed")]


def committed(out: java_client.Outcome) -> list[tuple]:
    return [(e["partition"], e["offset"]) for e in out.of("committed")]


@pytest.mark.parametrize("codec", CODECS)
def test_idempotent_produce_then_classic_group_consume(kafka_ref, broker, codec):
    kind, bootstrap = broker
    topic = f"java-{codec}"
    out = run(kafka_ref, "produce", bootstrap, topic=topic, count=5, codec=codec, partition=0)
    assert out.error is None, out.error
    assert [(e["key"], e["partition"], e["offset"]) for e in out.of("produced")] == \
        [(f"k{i}", 0, i) for i in range(5)]
    got = run(kafka_ref, "consume", bootstrap, topic=topic, group=f"g-{codec}", count=5, protocol="classic")
    assert got.error is None, got.error
    assert consumed(got) == [(0, i, f"k{i}", f"v{i}", [["h", f"k{i}"]]) for i in range(5)]
    assert committed(got) == [(0, 5)]


def test_consumer_group_protocol(kafka_ref, broker):
    kind, bootstrap = broker
    assert run(kafka_ref, "produce", bootstrap, topic="java-848", count=3, partition=0).error is None
    got = run(kafka_ref, "consume", bootstrap, topic="java-848", group="g-848", count=3, protocol="consumer")
    assert got.error is None, got.error
    assert consumed(got) == [(0, i, f"k{i}", f"v{i}", [["h", f"k{i}"]]) for i in range(3)]
    assert committed(got) == [(0, 3)]


def test_transactions(kafka_ref, broker):
    """A committed transaction with sendOffsetsToTransaction, then an aborted one: a
    read_committed consumer sees the two committed records only, and the group's offset
    committed in the transaction is there. Transaction version 2 (both brokers finalize it):
    each EndTxn bumped the epoch and the markers carry the bumped one."""
    kind, bootstrap = broker
    check_transactions(kafka_ref, bootstrap, LOG_DIRS[kind], epochs=(0, 1, 2), log=TXN_LOG)


@pytest.mark.parametrize("kind", ["kproto", "kafka"])
def test_transactions_after_a_downgrade_to_transaction_version_1(kafka_ref, tmp_path, kind):
    """``transaction.version`` downgraded to 1 on a fresh broker: kafka-clients 4.4 goes back
    to AddPartitionsToTxn/AddOffsetsToTxn and EndTxn v4, and no epoch is bumped."""
    def scenario(bootstrap: str, log_dir) -> None:
        r = request_raw(bootstrap, P.update_features.API.key, 2, {"timeout_ms": 30000, "validate_only": False,
                        "feature_updates": [{"feature": "transaction.version", "max_version_level": 1,
                                             "upgrade_type": 2}]})
        assert r.error_code == 0, r
        check_transactions(kafka_ref, bootstrap, log_dir, epochs=(0, 0, 0), log=TXN_LOG_V1)
    if kind == "kproto":
        with kproto.testing.broker(config={"transaction.state.log.num.partitions": "1"},
                                   data_dir=tmp_path / "data") as b:
            return scenario(b.bootstrap_servers, tmp_path / "data")
    try:
        with kafka_ref.broker(tmp_path) as b:
            scenario(b.bootstrap, b.log_dir)
    except KafkaUnavailable as e:
        unavailable(e)


def check_transactions(kafka_ref, bootstrap: str, log_dir, *, epochs: tuple[int, int, int], log: list) -> None:
    """The Java client's "txn" scenario: what its consumers see; ``epochs``: the producer's
    at the start, in the commit marker, in the abort marker; ``log``: the transaction log."""
    out = run(kafka_ref, "txn", bootstrap, topic="java-txn", group="g-txn", txn="java-txn-id")
    assert out.error is None, out.error
    assert [e["event"] for e in out.events] == \
        ["initialized", "produced", "produced", "committed", "produced", "aborted", "done"]
    assert [(e["key"], e["offset"]) for e in out.of("produced")] == [("c0", 0), ("c1", 1), ("a0", 3)]
    seen = run(kafka_ref, "consume", bootstrap, topic="java-txn", group="g-read-committed", count=2,
               isolation="read_committed")
    assert seen.error is None, seen.error
    assert consumed(seen) == [(0, 0, "c0", "committed 0", [["h", "c0"]]), (0, 1, "c1", "committed 1", [["h", "c1"]])]
    assert committed(seen) == [(0, 5)]        # past both control records and the aborted one
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-txn"})
    try:
        assert [(p.partition, p.offset) for p in c.committed([TopicPartition("java-txn", 0)], timeout=60)] == [(0, 2)]
    finally:
        c.close()
    first, commit, abort = epochs
    batches = [(b.is_control, b.producer_epoch, b.last_offset)
               for b in iter_batches(fetch_raw(bootstrap, "java-txn", 0).records)]
    assert [b for b in batches if b[0]] == [(True, commit, 2), (True, abort, 4)]
    assert [b[1] for b in batches if not b[0]] == [first] * (len(batches) - 3) + [commit]
    described = request_raw(bootstrap, P.describe_transactions.API.key, 0, {"transactional_ids": ["java-txn-id"]})
    state = described.transaction_states[0]
    assert (state.error_code, state.transaction_state, state.producer_epoch) == (0, "CompleteAbort", abort)
    # the transaction log, as Kafka's DumpLogSegments reads it
    assert transaction_log(kafka_ref, log_dir) == log


def transaction_log(kafka_ref, log_dir) -> list[dict]:
    """Kafka's DumpLogSegments --transaction-log-decoder of ``__transaction_state-0``: each
    value without its timestamps, its producer ids as said of the first."""
    files = ",".join(sorted(str(p) for p in (log_dir / "__transaction_state-0").glob("*.log")))
    r = kafka_ref.run_tool("org.apache.kafka.tools.DumpLogSegments", "--transaction-log-decoder", "--files", files)
    assert r.returncode == 0, r.stderr
    out, first = [], None
    for payload in PAYLOAD.findall(r.stdout):
        value = json.loads(payload)
        data = value["data"]
        for name in ("transactionLastUpdateTimestampMs", "transactionStartTimestampMs"):
            data.pop(name)
        first = data["producerId"] if first is None else first
        for name in ("producerId", "previousProducerId", "nextProducerId"):
            if name in data:
                data[name] = "first" if data[name] == first else data[name]
        out.append(value)
    return out


def _txn_value(status: str, epoch: int, partitions, tv: int | None = 2) -> dict:
    data = {"producerId": "first", "previousProducerId": "first", "producerEpoch": epoch,
            "transactionTimeoutMs": 60000, "transactionStatus": status,
            "transactionPartitions": None if partitions is None else [
                {"topic": topic, "partitionIds": [0]} for topic in partitions]}
    return {"version": "1", "data": {**data, **({} if tv is None else {"clientTransactionVersion": tv})}}


# InitProducerId, then each transaction: the partition added by Produce, the group's by
# TxnOffsetCommit (sendOffsetsToTransaction), the EndTxn bumping the epoch, the markers written
TXN_LOG = [
    _txn_value("Empty", 0, None, tv=None),
    _txn_value("Ongoing", 0, ["java-txn"]),
    _txn_value("Ongoing", 0, ["java-txn", "__consumer_offsets"]),
    _txn_value("PrepareCommit", 1, ["java-txn", "__consumer_offsets"]),
    _txn_value("CompleteCommit", 1, []),
    _txn_value("Ongoing", 1, ["java-txn"]),
    _txn_value("PrepareAbort", 2, ["java-txn"]),
    _txn_value("CompleteAbort", 2, []),
]
# the same at transaction.version 1: partitions added by AddPartitionsToTxn/AddOffsetsToTxn,
# no epoch bumped, the client's transaction version 0 (not written)
TXN_LOG_V1 = [_txn_value(v["data"]["transactionStatus"], 0, [p["topic"] for p in v["data"]["transactionPartitions"]]
                         if v["data"]["transactionPartitions"] is not None else None, tv=None) for v in TXN_LOG]


def test_admin(kafka_ref, broker):
    kind, bootstrap = broker
    assert run(kafka_ref, "produce", bootstrap, topic="java-admin-src", count=1, partition=0).error is None
    assert run(kafka_ref, "consume", bootstrap, topic="java-admin-src", group="g-admin", count=1).error is None
    out = run(kafka_ref, "admin", bootstrap, topic="java-admin", group="g-admin")
    assert out.error is None, out.error
    assert out.events == [
        {"event": "cluster", "nodes": 1, "controller_known": True, "cluster_id_set": True},
        {"event": "created", "topic": "java-admin"},
        {"event": "described", "topic": "java-admin", "internal": False, "partitions": 3, "replicas": 1,
         "topic_id_set": True},
        {"event": "described_paged", "partitions": 3},
        {"event": "offsets", "when": "before", "earliest": 0, "latest": 3},
        {"event": "deleted_records", "low_watermark": 2},
        {"event": "offsets", "when": "after", "earliest": 2, "latest": 3},
        {"event": "groups", "listed": True},
        {"event": "group", "group": "g-admin", "state": "Empty", "members": 0},
        {"event": "deleted", "topic": "java-admin"},
        {"event": "listed", "present": False},
        {"event": "done"},
    ]


def test_share_consumer(kafka_ref, broker):
    kind, bootstrap = broker
    assert run(kafka_ref, "produce", bootstrap, topic="java-share", count=3, partition=0).error is None
    got = run(kafka_ref, "share", bootstrap, topic="java-share", group="g-share", count=3)
    assert got.error is None, got.error
    assert consumed(got) == [(0, i, f"k{i}", f"v{i}", [["h", f"k{i}"]]) for i in range(3)]


# The APIs the Java client's produce, consume and admin scenarios send, each at its newest
# version: kafka-clients 4.4's newest is Kafka 4.4's broker's newest (RELEASES). Offsets go
# by topic id (OffsetCommit/OffsetFetch v10) from a KIP-848 consumer; a classic group's by
# name, at v9 (ConsumerCoordinator), so both are counted for those two. ApiVersions goes at
# v5 (KIP-1242), as to Kafka 4.4's broker (measured through a proxy: v5 first, no retry lower).
NEWEST = ["Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
          "JoinGroup", "SyncGroup", "LeaveGroup", "DescribeCluster", "CreateTopics", "DeleteTopics",
          "DeleteRecords", "DescribeGroups", "ListGroups", "DescribeTopicPartitions", "ConsumerGroupHeartbeat",
          "ApiVersions"]
BY_NAME = {"OffsetCommit": 9, "OffsetFetch": 9}


def test_the_java_client_negotiates_kafka_4_4s_newest_versions_with_kproto(kafka_ref, tmp_path):
    """kproto advertises each API the Java client uses up to Kafka 4.4's newest, and the client
    sends it there (by name, v9, for a classic group's offsets) and never below: one fault rule
    per (API, version range), acting by a 1 ms delay, counts the requests in its range."""
    from kproto.schemas import protocol as P
    from kproto.server.kafka_versions import RELEASES
    keys = {P.API_KEYS[k].name: k for k in RELEASES["4.4"] if k in P.API_KEYS}
    with kproto.testing.broker(data_dir=tmp_path / "data") as b:
        rules = {}
        for name in NEWEST:
            newest = RELEASES["4.4"][keys[name]][1]
            assert P.served_versions()[keys[name]][1] == newest, name
            floor = BY_NAME.get(name, newest)
            rules[name] = [b.faults.inject(api=name, versions=[v, v], delay_ms=1) for v in range(floor, newest + 1)]
            rules[name].append(b.faults.inject(api=name, versions=[0, floor - 1], delay_ms=1))
        bs = b.bootstrap_servers
        assert run(kafka_ref, "produce", bs, topic="java-newest", count=2, partition=0).error is None
        for protocol in ("classic", "consumer"):
            got = run(kafka_ref, "consume", bs, topic="java-newest", group=f"g-{protocol}", count=2, protocol=protocol)
            assert got.error is None, got.error
            assert committed(got) == [(0, 2)]
        out = run(kafka_ref, "admin", bs, topic="java-newest-admin", group="g-classic")
        assert out.error is None, out.error
        used = {name: [r.describe()["matches"] for r in rs] for name, rs in rules.items()}
    assert {name: n[-1] for name, n in used.items() if n[-1]} == {}, used       # nothing below
    assert {name for name, n in used.items() if not all(n[:-1])} == set(), used  # each version named


def test_share_group_admin(kafka_ref, broker):
    """Kafka's Admin on an empty share group: describeShareGroups, listShareGroupOffsets,
    alterShareGroupOffsets, deleteShareGroupOffsets, each as Kafka's broker answers."""
    kind, bootstrap = broker
    assert run(kafka_ref, "produce", bootstrap, topic="java-share-admin", count=3, partition=0).error is None
    assert run(kafka_ref, "share", bootstrap, topic="java-share-admin", group="g-share-admin", count=3).error is None
    got = run(kafka_ref, "shareadmin", bootstrap, topic="java-share-admin", group="g-share-admin")
    assert got.error is None, got.error
    unknown = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
    not_hosted = "This server does not host this topic-partition."
    before, altered, deleted = got.of("offsets")
    assert got.of("described") == [{"event": "described", "state": "Empty", "members": 0}]
    # all 3 accepted: no lag. Kafka keeps the acknowledged batch in the state and its start
    # offset at 0 (delivery-complete count 3) until a later write; kproto moves it past them.
    assert [{k: p[k] for k in ("partition", "leaderEpoch", "lag")} for p in before["partitions"]] == [
        {"partition": "java-share-admin-0", "leaderEpoch": 0, "lag": 0}]
    assert before["partitions"][0]["start"] == {"kafka": 0, "kproto": 3}[kind]
    assert altered["partitions"] == [{"partition": "java-share-admin-0", "start": 1, "leaderEpoch": 0, "lag": 2}]
    assert got.of("alter-unknown") == [{"event": "alter-unknown", "error": unknown, "message": (
        f"{not_hosted} Failed altering group offsets for the following partitions: [no-such-0]")}]
    assert got.of("delete") == [{"event": "delete", "topic": "java-share-admin", "error": "none"},
                                {"event": "delete", "topic": "no-such", "error": unknown, "message": not_hosted}]
    assert deleted["partitions"] == []
    assert got.of("delete-unknown-group") == [{
        "event": "delete-unknown-group", "error": "org.apache.kafka.common.errors.GroupIdNotFoundException",
        "message": "Group no-such-group not found."}]
