"""A short run of bench/soak.py (the long one is `make soak`): every figure
that must be zero is zero, and the broker's peak RSS stays under the target."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_soak():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _soak(tmp_path, name: str, *args: str) -> dict:
    """bench/soak.py in a process of its own: its fuzz figure is the process's
    lifetime peak RSS, which inside pytest (or after the other parts) would count
    everything run before it."""
    out = tmp_path / f"{name}.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), *args, "--seed", "10", "--out", str(out)],
                         capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    return json.loads(out.read_text())


def test_short_soak(tmp_path):
    soak = load_soak()
    budget_mib = 2 * soak.QUEUED_MAX / 2**20 + 100
    fuzz = _soak(tmp_path, "fuzz", "--fuzz", "10000", "--frames", "0", "--kill-trials", "0",
                 "--churn-seconds", "0", "--declared", "0")["fuzz"]
    assert fuzz["inputs"] >= 10000 and fuzz["foreign_exceptions"] == 0, fuzz["examples"]
    assert fuzz["peak_rss_mib"] < budget_mib, fuzz
    figures = _soak(tmp_path, "broker", "--fuzz", "0", "--frames", "1000", "--kill-trials", "10",
                    "--churn-seconds", "6")
    frames, churn = figures["frames"], figures["churn"]
    assert (frames["crashes"], frames["wedged"], frames["internal_errors"]) == (0, 0, 0), frames
    assert sum(frames["outcomes"].values()) == 1000
    assert frames["peak_rss_mib"] < budget_mib, frames
    for mode in ("default flush", "flush every message"):
        kill = figures["kill"][mode]
        assert kill["trials"] == 10 and kill["acknowledged"] > 0, kill
        assert (kill["lost"], kill["duplicates"], kill["failed_restarts"]) == (0, 0, 0), kill
        assert 0 < kill["peak_rss_mib"] < budget_mib, kill
    assert churn["members_killed"] >= 1 and churn["acknowledged"] > 0, churn
    assert (churn["never_consumed"], churn["commits_backwards"]) == (0, 0), churn
    assert 0 < churn["peak_rss_mib"] < budget_mib, churn
    assert frames["partitions_created"] > 0 and frames["peak_open_fds"] > 0, frames
    # issue 22: 40 connections declaring 100 MB each and sending 1 KB (the soak reports the
    # ApiVersions time against its 1 s target; here only a generous bound, as the machine may be busy)
    for label in ("defaults", "queued.max.request.bytes=200MB"):
        declared = figures["declared"][label]
        assert declared["connections"] == 40 and declared["peak_rss_mib"] < 150, (label, declared)
        assert declared["api_versions_s"] is not None and declared["api_versions_s"] < 5, (label, declared)
