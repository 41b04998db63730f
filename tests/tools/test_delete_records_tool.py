"""kproto delete-records on tansu (kproto's broker and Kafka's: tests/parity/test_kafka_ref_tools.py).

tansu 0.6 advertises DeleteRecords 0 to 2 and closes the connection when one arrives: kproto's
tool says so in one line (exit 1) where Kafka's DeleteRecordsCommand waits for its timeout and
prints a TimeoutException per partition; nothing is deleted."""

from __future__ import annotations

import pytest

from tests import components
from tests.tools.helpers import run_command
from tests.tools.test_console_tools import fill

OFFSETS = ('{"partitions": [{"topic": "dr", "partition": 0, "offset": 1},'
           ' {"topic": "dr", "partition": 1, "offset": -1}], "version": 1}')


def delete(tmp_path) -> tuple[tuple[int, str, str], str]:
    """delete-records of OFFSETS on a filled topic of a new tansu, and get-offsets --time earliest after it."""
    (tmp_path / "offsets.json").write_text(OFFSETS)
    with components.tansu(tmp_path) as b:
        fill(b, "dr")
        got = run_command("delete-records", b, "--offset-json-file", str(tmp_path / "offsets.json"))
        return got, run_command("get-offsets", b, "--topic", "dr", "--time", "earliest")[1]


def test_tansu_closing_the_connection_is_one_line(tmp_path):
    (status, out, err), earliest = delete(tmp_path)
    assert (status, out) == (1, "Executing records delete operation\n")
    assert err.startswith("kproto: error: connection to 127.0.0.1:") and err.endswith(" closed by the broker\n") \
        and err.count("\n") == 1
    assert earliest == "dr:0:0\ndr:1:0\ndr:2:0\n"


@pytest.mark.xfail(strict=True, reason="tansu 0.6 advertises DeleteRecords 0 to 2 and closes the connection "
                                       "when one arrives; Kafka's DeleteRecordsCommand times out on it")
def test_tansu_deletes(tmp_path):
    (status, out, err), earliest = delete(tmp_path)
    assert (status, err) == (0, "")
    assert out == ("Executing records delete operation\nRecords delete operation completed:\n"
                   "partition: dr-0\tlow_watermark: 1\npartition: dr-1\tlow_watermark: 2\n")
    assert earliest == "dr:0:1\ndr:1:2\ndr:2:0\n"
