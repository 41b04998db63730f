"""A short run of bench/soak.py (the long one is `make soak`): every figure
that must be zero is zero, and the broker's peak RSS stays under the target."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_soak():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_soak(tmp_path):
    soak = load_soak()
    out = tmp_path / "figures.json"
    figures = soak.main(["--fuzz", "10000", "--frames", "1000", "--kill-trials", "2", "--churn-seconds", "6",
                         "--seed", "10", "--out", str(out)])
    assert json.loads(out.read_text()) == figures
    fuzz, frames, churn = figures["fuzz"], figures["frames"], figures["churn"]
    assert fuzz["inputs"] >= 10000 and fuzz["foreign_exceptions"] == 0, fuzz["examples"]
    assert (frames["crashes"], frames["wedged"], frames["internal_errors"]) == (0, 0, 0), frames
    assert sum(frames["outcomes"].values()) == 1000
    budget_mib = 2 * soak.QUEUED_MAX / 2**20 + 100
    assert frames["peak_rss_mib"] < budget_mib and fuzz["peak_rss_mib"] < budget_mib
    for mode in ("default flush", "flush every message"):
        kill = figures["kill"][mode]
        assert kill["trials"] == 2 and kill["acknowledged"] > 0, kill
        assert (kill["lost"], kill["duplicates"], kill["failed_restarts"]) == (0, 0, 0), kill
    assert churn["members_killed"] >= 1 and churn["acknowledged"] > 0, churn
    assert (churn["never_consumed"], churn["commits_backwards"]) == (0, 0), churn
