"""kproto broker-api-versions against Kafka 4.4's BrokerApiVersionsCommand, on kproto's broker, Kafka's and tansu:
the same bytes on stdout (the node line, every API's versions, UNSUPPORTED for the client APIs a broker lacks)."""

from __future__ import annotations

import pytest

from kproto.testing import FIXTURE_DEFAULTS, Broker
from kproto.tools.broker_api_versions import api_version_text
from tests import components
from tests.tools.helpers import run_command

TOOL = "org.apache.kafka.tools.BrokerApiVersionsCommand"


def both(kafka_ref, bootstrap: str) -> tuple[str, str]:
    theirs = kafka_ref.run_tool(TOOL, "--bootstrap-server", bootstrap)
    assert theirs.returncode == 0, theirs.stderr
    status, out, err = run_command("broker-api-versions", bootstrap)
    assert (status, err) == (0, "")
    return out, theirs.stdout


def test_kproto_broker(kafka_ref, tmp_path):
    with Broker(tmp_path / "data", FIXTURE_DEFAULTS, log_path=tmp_path / "broker.log") as b:
        ours, theirs = both(kafka_ref, b.bootstrap_servers)
    assert ours == theirs
    lines = ours.splitlines()
    assert lines[0] == f"{b.bootstrap_servers} (id: 1 rack: null isFenced: false) -> ("
    assert "\tOffsetForLeaderEpoch(23): 2 to 4 [usable: 4]," in lines and lines[-1] == ")"


def test_kafka_broker(kafka_ref, tmp_path):
    with kafka_ref.broker(tmp_path / "kafka") as k:
        ours, theirs = both(kafka_ref, k.bootstrap)
    assert ours == theirs
    assert "\tProduce(0): 0 to 13 [usable: 13]," in ours.splitlines()


def test_tansu_broker(kafka_ref, tmp_path):
    with components.tansu(tmp_path) as b:
        ours, theirs = both(kafka_ref, b)
    assert ours == theirs
    assert ours.splitlines()[0].startswith(f"{b} (id: ")


@pytest.mark.parametrize("key, lo, hi, text", [
    (0, 0, 2, "Produce(0): 0 to 2 [unusable: node too old]"),      # Kafka 4.4's client speaks Produce 3+
    (4, 0, 7, "LeaderAndIsr(4): 0 to 7 [unusable: node too new]"),  # no version left in 4.4
    (18, 0, 9, "ApiVersions(18): 0 to 9 [usable: 5]"),
    (50, 0, 0, "DescribeUserScramCredentials(50): 0 [usable: 0]"),
    (999, 1, 3, "UNKNOWN(999): 1 to 3"),
])
def test_api_version_text(key, lo, hi, text):
    assert api_version_text(key, lo, hi) == text


def test_unreachable_is_one_line():
    status, out, err = run_command("broker-api-versions", "127.0.0.1:1")
    assert (status, out) == (1, "") and err.startswith("kproto: error: cannot connect to 127.0.0.1:1") \
        and err.count("\n") == 1
