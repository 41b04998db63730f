"""``kproto transactions`` against ``kproto serve``: kafka-transactions.sh's subcommands,
its tables (ToolsUtils.prettyPrintTable: cells padded to the column, a TAB after
each) and its printErrorAndExit lines; a hanging transaction found and aborted."""

from __future__ import annotations

import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.client.transport import BrokerClient
from kproto.records import NewRecord, build_record_batch
from kproto.tools.transactions import pretty_table
from tests.components import VENV_BIN, kproto_broker
from tests.helpers import read_all


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with kproto_broker(tmp_path_factory.mktemp("txntool")) as bootstrap:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("tt", 2, 1)], operation_timeout=10)["tt"].result(timeout=10)
        yield bootstrap


def kproto(bootstrap: str, *args: str) -> tuple[int, str, str]:
    r = subprocess.run([str(VENV_BIN / "kproto"), "transactions", "--bootstrap-server", bootstrap, *args],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def cells(line: str) -> list[str]:
    assert line.endswith("\t")
    return [c.rstrip(" ") for c in line[:-1].split("\t")]


def test_pretty_table_is_kafkas():
    assert pretty_table(["A", "Longer"], [["xyz", "1"], ["", "22"]]) == "A  \tLonger\t\nxyz\t1     \t\n   \t22    \t\n"


def test_list_describe_and_describe_producers(broker):
    p = Producer({"bootstrap.servers": broker, "transactional.id": "tool-1"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("tt", value=b"x", partition=0)
    p.produce("tt", value=b"y", partition=1)
    p.flush(15)
    code, out, err = kproto(broker, "list")
    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert cells(header) == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    [row] = [cells(r) for r in rows if r.startswith("tool-1")]
    pid = int(row[2])
    assert row == ["tool-1", "1", str(pid), "Ongoing"]
    code, out, _ = kproto(broker, "describe", "--transactional-id", "tool-1")
    header, row = out.splitlines()
    assert cells(header) == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                             "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                             "TopicPartitions"]
    values = cells(row)
    assert values[:6] == ["1", "tool-1", str(pid), "0", "Ongoing", "60000"]
    assert int(values[7]) >= 0 and values[8] == "tt-1,tt-0"       # java.util.HashSet order of the partitions
    assert len(header) == len(row)                                 # padded to the same widths
    code, out, _ = kproto(broker, "describe-producers", "--topic", "tt", "--partition", "0")
    header, *rows = out.splitlines()
    assert cells(header) == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                             "LastTimestamp", "CurrentTransactionStartOffset"]
    mine = [cells(r) for r in rows if cells(r)[0] == str(pid)]
    assert mine[0][:4] == [str(pid), "0", "-1", "0"] and mine[0][5] == "0"
    p.commit_transaction(15)
    code, out, _ = kproto(broker, "describe", "--transactional-id", "tool-1")
    assert cells(out.splitlines()[1])[4] == "CompleteCommit"


def test_errors_are_one_line(broker):
    code, out, err = kproto(broker, "describe", "--transactional-id", "nobody")
    assert (code, out) == (1, "")
    assert err.startswith("Failed to describe transaction state of transactional-id `nobody`: ")
    assert err.endswith(" Enable debug logging for additional detail.\n") and err.count("\n") == 1
    code, _, err = kproto(broker, "abort", "--topic", "tt", "--partition", "0")
    assert code == 2 and err.count("\n") == 1 and "--start-offset" in err
    code, _, err = kproto(broker, "find-hanging")
    assert code == 2 and "requires either --topic or --broker-id" in err


def test_find_and_abort_a_hanging_transaction(broker):
    """A transactional batch whose producer no coordinator knows (its coordinator lost
    the state): it blocks read_committed until kafka-transactions.sh abort."""
    old = int(time.time() * 1000) - 3 * 60_000
    batch = build_record_batch([NewRecord(b"k", b"stuck", (), old)], producer_id=777_000, producer_epoch=4,
                               base_sequence=0, is_transactional=True)
    with BrokerClient(broker) as client:
        body = client.request(0, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "tt", "partition_data": [{"index": 1, "records": batch}]}]})
    start = body.responses[0].partition_responses[0].base_offset
    code, out, err = kproto(broker, "find-hanging", "--topic", "tt", "--max-transaction-timeout", "1")
    assert (code, err) == (0, "")
    header, *rows = out.splitlines()
    assert cells(header) == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                             "StartOffset", "LastTimestamp", "Duration(min)"]
    assert [cells(r) for r in rows] == [["tt", "1", "777000", "4", "-1", str(start), str(old), "3"]]
    before = read_all(broker, "tt", 2, "read_committed", timeout=3)
    assert b"stuck" not in before
    code, out, err = kproto(broker, "abort", "--topic", "tt", "--partition", "1", "--start-offset", str(start))
    assert (code, out, err) == (0, "", "")
    code, out, _ = kproto(broker, "find-hanging", "--topic", "tt", "--max-transaction-timeout", "1")
    assert out.splitlines()[1:] == []
    code, out, err = kproto(broker, "abort", "--topic", "tt", "--partition", "1", "--start-offset", str(start))
    assert code == 1 and err == (f"Could not find any open transactions starting at offset {start} "
                                 "on partition tt-1\n")


def test_produce_outside_the_transaction_is_refused(broker):
    """KIP-890 part 1: a transactional batch opening a transaction in a partition the
    coordinator does not have in the producer's transaction is refused
    (ReplicaManager.appendRecords' verification, INVALID_TXN_STATE for this Produce version).
    Produce v10 (v11 answers TRANSACTION_ABORTABLE; from v12 a client of transaction version 2
    has the broker add the partition)."""
    from kproto.client.admin import Admin
    from kproto.client.transactions import describe_transactions
    p = Producer({"bootstrap.servers": broker, "transactional.id": "verify"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("tt", value=b"added", partition=0)
    p.flush(15)
    with BrokerClient(broker) as client:
        d = describe_transactions(Admin(client), ["verify"])["verify"]

        def produce(partition: int, txn_id: str = "verify", seq: int = 100) -> tuple:
            batch = build_record_batch([NewRecord(b"k", b"sneaky")], producer_id=d.producer_id,
                                       producer_epoch=d.producer_epoch, base_sequence=seq, is_transactional=True)
            r = client.request(0, {"transactional_id": txn_id, "acks": -1, "timeout_ms": 5000, "topic_data": [
                {"name": "tt", "partition_data": [{"index": partition, "records": batch}]}]}, version=10)
            out = r.responses[0].partition_responses[0]
            return out.error_code, out.get("error_message")

        assert produce(1) == (48, "Partition was not added to the transaction")     # INVALID_TXN_STATE
        assert produce(1, txn_id="someone-else")[0] == 49                          # INVALID_PRODUCER_ID_MAPPING
        assert produce(0, seq=1)[0] == 0            # its transaction is open there: no check needed
    p.abort_transaction(15)
