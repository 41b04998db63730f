"""``kproto conformance``: the corpus as a product, run against three decoders.

kproto's own decoder (as an external command, like anyone's), a deliberately
broken one (its failures must be named), and kafka-python's decoder through
tests/parity/conformance_kafka_python.py, an independent check of every expected value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kproto.conformance import CORPUS, HEADER_FIELDS, differences, fixtures

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
KPROTO_DECODER = f"{PY} -m kproto.conformance.decode {{kind}} {{file}} {{api_key}} {{api_version}}"
KAFKA_PYTHON_DECODER = f"{PY} {ROOT / 'tests' / 'parity' / 'conformance_kafka_python.py'} {{kind}} {{file}} {{api_key}} {{api_version}}"


def kproto(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # Decoders start once per fixture: let them keep bytecode caches, as an installed
    # package has, instead of compiling kproto's sources in every process.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([PY, "-m", "kproto.tools.main", "conformance", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=ROOT)


def lines_by_status(out: str) -> dict[str, list[str]]:
    got: dict[str, list[str]] = {"PASS": [], "FAIL": [], "ERROR": []}
    for line in out.splitlines():
        status, _, rest = line.partition(" ")
        if status in got:
            got[status].append(rest.strip())
    return got


def test_the_corpus_is_whole():
    fx = fixtures()
    kinds = {k: sum(f.kind == k for f in fx) for k in ("records", "request", "response")}
    assert kinds["records"] >= 40 and kinds["request"] >= 40 and kinds["response"] >= 30
    for f in fx:
        exp = f.expected()                      # every frame carries its expected values
        if f.kind == "records":
            assert exp["records"] and all(set(r) == {"offset", "timestamp", "key", "value", "headers"}
                                          for r in exp["records"])
        else:
            assert set(exp) == {"header", "body"} and set(exp["header"]) == set(HEADER_FIELDS[f.kind])
            if f.kind == "request":
                assert (exp["header"]["request_api_key"], exp["header"]["request_api_version"]) == \
                    (f.api_key, f.api_version)


def test_kprotos_decoder_as_an_external_command_passes_everything():
    result = kproto("run", "--decoder", KPROTO_DECODER)
    got = lines_by_status(result.stdout)
    n = len(fixtures())
    assert (result.returncode, len(got["PASS"]), got["FAIL"], got["ERROR"]) == (0, n, [], []), result.stdout[-2000:]
    assert result.stdout.splitlines()[-1] == f"{n} fixtures: {n} passed, 0 failed, 0 errors"


def test_kafka_pythons_decoder_agrees_with_every_expected_value():
    """An independent decoder (kafka-python 3.0.12: records via MemoryRecords, frames via the
    classes it generates from Kafka's message JSON) gives the corpus's answer everywhere it
    can read: this, not kproto's own decoder, is what vouches for the frames' expected values."""
    result = kproto("run", "--decoder", KAFKA_PYTHON_DECODER, "--json")
    doc = json.loads(result.stdout)
    by_status: dict[str, list[str]] = {}
    for o in doc["outcomes"]:
        by_status.setdefault(o["status"], []).append(o["fixture"])
    # kafka-python 3.0.12 has no GetTelemetrySubscriptions (KIP-714) class
    assert sorted(by_status.get("error", [])) == [
        "protocol/get_telemetry_subscriptions_request_v0_librdkafka-2.16.0_000",
        "protocol/get_telemetry_subscriptions_response_v0_tansu-0.6.0_000"]
    # Where kafka-python 3.0.12 reads Kafka 4.4's frames otherwise, Kafka's own classes
    # agree with the expected values (tests/parity/test_conformance_kafka_java.py).
    fails = {o["fixture"]: o["problems"] for o in doc["outcomes"] if o["status"] == "fail"}
    assert fails == {
        # kafka-python reads the all-zero UUID as null
        "protocol/delete_topics_request_v6_kafka-clients-4.4.0_000":
            ['body.topics[0].topic_id: expected "00000000-0000-0000-0000-000000000000", got null'],
        "protocol/fetch_request_v18_kafka-clients-4.4.0_000":
            ['body.topics[0].partitions[0].replica_directory_id: expected "00000000-0000-0000-0000-000000000000",'
             ' got null'],
        # kafka-python names DescribeClusterResponse's ClusterAuthorizedOperations authorized_operations
        "protocol/describe_cluster_response_v2_kafka-4.4.0_000":
            ["body.cluster_authorized_operations: missing", "body.authorized_operations: not in this version"],
        # kafka-python 3.0.12's copy predates KIP-848's GenerationIdOrMemberEpoch (Kafka 4.4's name)
        "protocol/txn_offset_commit_request_v3_librdkafka-2.16.0_000":
            ["body.generation_id_or_member_epoch: missing", "body.generation_id: not in this version"],
    }
    assert doc["summary"] == {"fixtures": len(fixtures()), "passed": len(fixtures()) - 6, "failed": 4, "errors": 2}
    assert result.returncode == 1
    problems = {o["fixture"]: o["problems"] for o in doc["outcomes"] if o["status"] == "error"}
    assert all("has no class for API key 71" in p[0] for p in problems.values())


BROKEN = '''
import json, sys
from pathlib import Path
from kproto.conformance.decode import decode
kind, path = sys.argv[1], sys.argv[2]
if Path(path).stem == "control_abort":
    print("this is not JSON"); sys.exit(0)
if kind == "response":
    print("broken: responses are not implemented", file=sys.stderr); sys.exit(3)
key, version = (int(sys.argv[3]), int(sys.argv[4])) if kind != "records" else (None, None)
answer = decode(kind, Path(path).read_bytes(), key, version)
if kind == "records":
    for r in answer["records"]:
        if r["headers"]:
            r["headers"].pop()                 # loses the last header
        if r["timestamp"] is not None:
            r["timestamp"] = r["timestamp"] // 1000 * 1000   # truncates to seconds
else:
    answer["header"]["correlation_id"] += 1
    answer["body"]["acks"] = True              # a bool where Kafka has an int16
print(json.dumps(answer))
'''


def test_a_broken_decoders_failures_are_named(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text(BROKEN)
    names = ["kp_v2_none", "kp_ms_v0_none", "control_abort", "produce_request_v9_kafka-python-3.0.12_000",
             "produce_response_v9_tansu-0.6.0_000"]
    result = kproto("run", "--decoder", f"{PY} {script} {{kind}} {{file}} {{api_key}} {{api_version}}", *names)
    assert result.returncode == 1
    got = lines_by_status(result.stdout)
    assert got["PASS"] == ["records/kp_ms_v0_none"]       # magic 0: no headers, no timestamps
    fails = dict(line.split(": ", 1) for line in got["FAIL"])
    assert sorted(fails) == ["protocol/produce_request_v9_kafka-python-3.0.12_000", "records/kp_v2_none"]
    assert "records[1].timestamp: expected 1700000000001, got 1700000000000" in fails["records/kp_v2_none"]
    assert "records[4].headers: expected 6 items, got 5" in fails["records/kp_v2_none"]
    assert fails["protocol/produce_request_v9_kafka-python-3.0.12_000"] == \
        "header.correlation_id: expected 3, got 4; body.acks: expected -1, got true"
    errors = dict(line.split(": ", 1) for line in got["ERROR"])
    assert errors["records/control_abort"].startswith("decoder output is not JSON (Expecting value")
    assert errors["protocol/produce_response_v9_tansu-0.6.0_000"] == \
        "decoder exited 3: broken: responses are not implemented"
    assert result.stdout.splitlines()[-1] == "5 fixtures: 1 passed, 2 failed, 2 errors"


def test_differences_name_the_path():
    exp = {"header": {"correlation_id": 1}, "body": {"a": [{"b": 1}], "flag": True, "n": 1}}
    assert differences(exp, exp) == []
    assert differences(exp, {"header": {"correlation_id": 1, "client_id": "x"},
                             "body": {"a": [{"b": 1, "c": 2}], "flag": 1, "n": 1.0}, "extra": 1}) == [
        "body.a[0].c: not in this version", "body.flag: expected true, got 1", "body.n: expected 1, got 1.0"]
    assert differences(exp, {"header": {}, "body": {"a": [], "flag": True, "n": 1}}) == [
        "header.correlation_id: missing", "body.a: expected 1 items, got 0"]
    assert differences({"records": [{"offset": 0}]}, {"records": [{"offset": 0, "attributes": 0}]}) == []
    assert differences({"records": []}, []) == ["(top): expected an object, got []"]


def test_list(tmp_path):
    result = kproto("list", "--kind", "records")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(fixtures(["records"]))
    assert any(line.split()[:3] == ["records/kp_v2_large_500", "500", "records"] for line in lines)
    frames = kproto("list", "--json", "produce_request_*")
    rows = [json.loads(line) for line in frames.stdout.splitlines()]
    assert {(r["api_key"], r["kind"]) for r in rows} == {(0, "request")}
    assert {r["written_by"] for r in rows} == {"librdkafka-2.16.0", "aiokafka-0.14.0", "kafka-python-3.0.12",
                                               "kafka-clients-4.4.0"}


def test_export_writes_plain_files(tmp_path):
    out = tmp_path / "corpus"
    result = kproto("export", str(out))
    assert result.returncode == 0, result.stderr
    index = json.loads((out / "index.json").read_text())["fixtures"]
    assert len(index) == len(fixtures())
    for entry in index:
        f = next(x for x in fixtures() if x.id == entry["fixture"])
        assert (out / entry["file"]).read_bytes() == f.path.read_bytes()
        assert json.loads((out / entry["expected"]).read_text()) == f.expected()
        assert (out / entry["provenance"]).exists()
    assert (out / "README.md").read_text() == (CORPUS / "README.md").read_text()
    again = kproto("export", str(out))
    assert (again.returncode, again.stderr) == (1, f"kproto: error: {out}: exists and is not empty\n")


@pytest.mark.parametrize("args, message", [
    (["run", "--decoder", "cat"], "kproto conformance: --decoder: the command must contain {file}\n"),
    (["run", "--decoder", "cat {fil} {file}"], "kproto conformance: --decoder: bad placeholder in '{fil}' ('fil'); "
                                        "known: {file}, {kind}, {name}, {api_key}, {api_version}\n"),
    (["run", "--decoder", "cat {file}", "no_such_*"], "kproto conformance: no fixture matches no_such_*\n"),
    (["run"], "kproto conformance: Missing option '--decoder'.\n"),
])
def test_usage_errors_are_one_line(args, message):
    result = kproto(*args)
    assert (result.returncode, result.stderr, result.stdout) == (2, message, "")


def test_a_missing_decoder_program_is_an_error_per_fixture():
    result = kproto("run", "--decoder", "/nonexistent/decoder {file}", "kp_v2_none")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == \
        "ERROR records/kp_v2_none: cannot run /nonexistent/decoder: No such file or directory"


def test_the_package_data_globs_ship_every_corpus_file():
    """pyproject.toml's package-data for kproto.conformance names every corpus file,
    so a wheel or sdist carries the whole corpus (and nothing is left behind)."""
    import tomllib
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "kproto.conformance"]
    base = CORPUS.parent
    shipped = {p for g in globs for p in base.glob(g) if p.is_file()}
    present = {p for p in CORPUS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert present - shipped == set()
