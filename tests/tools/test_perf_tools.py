"""kproto producer-perf-test / consumer-perf-test: their lines have the shape of Kafka 4.4's
ProducerPerformance and ConsumerPerformance lines (numbers masked, diffed against Kafka's tools run on
the same broker), Kafka's system tests' parsers (kafkatest services/performance) read them, and the
numbers they parse are the records that were really moved."""

from __future__ import annotations

import re

import pytest

from kproto.testing import FIXTURE_DEFAULTS, Broker
from tests import components
from tests.tools.helpers import run_command
from tests.tools.test_console_tools import consume_json, create

PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
MB = 1024 * 1024


def parse_stats(line: str) -> dict:
    """kafkatest's ProducerPerformanceService.parse_stats, as it is."""
    parts = line.split(',')
    return {
        'records': int(parts[0].split()[0]),
        'records_per_sec': float(parts[1].split()[0]),
        'mbps': float(parts[1].split('(')[1].split()[0]),
        'latency_avg_ms': float(parts[2].split()[0]),
        'latency_max_ms': float(parts[3].split()[0]),
        'latency_50th_ms': float(parts[4].split()[0]),
        'latency_95th_ms': float(parts[5].split()[0]),
        'latency_99th_ms': float(parts[6].split()[0]),
        'latency_999th_ms': float(parts[7].split()[0]),
    }


def parse_results(line: str) -> dict:
    """kafkatest's ConsumerPerformanceService.parse_results (a version with --bootstrap-server)."""
    parts = line.split(',')
    return {'total_mb': float(parts[2]), 'mbps': float(parts[3]), 'records_per_sec': float(parts[5])}


def shape(text: str) -> list[str]:
    """The lines with every number masked (dates are numbers too)."""
    return [re.sub(r"\d+(\.\d+)?", "N", line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("perf")
    with Broker(base / "data", FIXTURE_DEFAULTS, log_path=base / "broker.log") as b:
        yield b


# no progress lines (a loaded machine could print one on one side only): the summary lines are compared
PRODUCE_ARGS = ["--reporting-interval", "600000", "--num-records", "2000", "--record-size", "100", "--throughput", "-1", "--warmup-records", "500",
                "--key-distribution", "range", "--record-key-range", "10", "--command-property", "acks=1", "linger.ms=5"]


def check_pair(kafka_ref, bootstrap: str, topic: str, *, kafka_producer: bool = True) -> None:
    """``kafka_producer=False`` (tansu's case): Kafka's Java tools are not run, nor the latest
    offsets compared with the group's."""
    create(bootstrap, topic, 2)
    status, out, err = run_command("producer-perf-test", bootstrap, "--topic", topic, *PRODUCE_ARGS)
    assert (status, err) == (0, ""), err
    if kafka_producer:
        theirs = kafka_ref.run_tool(PRODUCER, "--bootstrap-server", bootstrap, "--topic", topic + "-k", *PRODUCE_ARGS)
        assert theirs.returncode == 0, theirs.stderr
        assert shape(out) == shape(theirs.stdout)
    lines = out.splitlines()
    total, steady = parse_stats(lines[-2]), parse_stats(lines[-1])
    assert (total["records"], steady["records"]) == (2000, 1500)
    assert lines[0] == "Warmup first 500 records. Steady state results will print after the complete test summary."
    assert total["latency_50th_ms"] <= total["latency_999th_ms"] <= total["latency_max_ms"]

    got = consume_json(bootstrap, topic)
    assert len(got) == 2000
    assert sorted({r["key"] for r in got}) == [str(k) for k in range(10)]
    assert all(len(r["value"]) == 100 and re.fullmatch("[A-Z]+", r["value"]) for r in got)

    args = ["--topic", topic, "--num-records", "2000"]
    status, out, err = run_command("consumer-perf-test", bootstrap, *args, "--group", "perf-ours")
    # a real member of its group: the group is a consumer group and holds the positions reached
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient
    with BrokerClient(bootstrap) as c:
        admin = Admin(c)
        assert admin.describe_groups(["perf-ours"])["perf-ours"].protocol_type == "consumer"
        committed = {tp: o.offset for tp, o in admin.offset_fetch("perf-ours").items()}
        if kafka_producer:
            ends = admin.list_offsets({(topic, p): -1 for p in range(2)})
            assert committed == {tp: lo.offset for tp, lo in ends.items()}
        else:   # tansu 0.6's latest offsets count batches, not records: one past each last record
            assert sum(committed.values()) == 2000
    assert (status, err) == (0, ""), err
    assert parse_results(out.splitlines()[-1])["total_mb"] == round(2000 * 101 / MB, 4)  # 100 B values + 1 B keys
    if kafka_producer:
        theirs = kafka_ref.run_tool(CONSUMER, "--bootstrap-server", bootstrap, *args)
        assert theirs.returncode == 0, theirs.stderr
        assert shape(out) == shape(theirs.stdout)
        assert out.splitlines()[0] == theirs.stdout.splitlines()[0]                 # the header, exactly
        assert parse_results(theirs.stdout.splitlines()[-1])["total_mb"] == round(2000 * 101 / MB, 4)
    assert int(out.splitlines()[-1].split(", ")[4]) == 2000


def test_kproto_broker(kafka_ref, broker):
    check_pair(kafka_ref, broker.bootstrap_servers, "perf")


def test_kafka_broker(kafka_ref, tmp_path):
    with kafka_ref.broker(tmp_path / "kafka") as k:
        check_pair(kafka_ref, k.bootstrap, "perf")


def test_tansu_broker(kafka_ref, tmp_path):
    """kproto's perf tools on tansu, their lines read by kafkatest's parsers. Kafka 4.4's Java
    tools are not diffed here: its producer gets no answer from tansu 0.6 (every batch expires, "The
    request has not been sent, or no server response has been received yet", idempotence on or
    off) and its ConsumerPerformance stops at its timeout short of the 2000 records ("Exiting before
    consuming the expected number of records")."""
    with components.tansu(tmp_path) as b:
        check_pair(kafka_ref, b, "perf", kafka_producer=False)


def test_detailed_stats_and_timeout(broker):
    b = broker.bootstrap_servers
    create(b, "perf-detail", 1)
    assert run_command("producer-perf-test", b, "--topic", "perf-detail", "--num-records", "300",
                       "--payload-monotonic", "--throughput", "-1", "--reporting-interval", "1")[0] == 0
    assert [r["value"] for r in consume_json(b, "perf-detail")] == [str(i) for i in range(300)]
    status, out, err = run_command("consumer-perf-test", b, "--topic", "perf-detail", "--num-records", "301",
                                   "--timeout", "200", "--show-detailed-stats", "--hide-header")
    assert status == 0
    assert out.splitlines()[-1] == ("WARNING: Exiting before consuming the expected number of messages: timeout "
                                    "(200 ms) exceeded. You can use the --timeout option to increase the timeout.")


@pytest.mark.parametrize("command, args, line", [
    ("producer-perf-test", ["--topic", "t", "--num-records", "10", "--throughput", "-1"],
     "Exactly one of --record-size, --payload-file or --payload-monotonic is required."),
    ("producer-perf-test", ["--topic", "t", "--num-records", "10", "--throughput", "-1", "--record-size", "1",
                            "--warmup-records", "10"],
     "The value for --warmup-records must be strictly fewer than the number of records in the test, --num-records."),
    ("producer-perf-test", ["--topic", "t", "--num-records", "10", "--throughput", "-1", "--record-size", "1",
                            "--command-property", "acks"], "Invalid property: acks"),
    ("consumer-perf-test", ["--num-records", "10"], "Exactly one of the following arguments is required: topic, include"),
])
def test_errors_are_one_line(broker, command, args, line):
    assert run_command(command, broker.bootstrap_servers, *args) == (2, "", line + "\n")
