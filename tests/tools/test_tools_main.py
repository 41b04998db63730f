"""The ``kproto`` command tree as a whole: every command's --help, exit statuses."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from kproto.tools.decode import _Stats
from kproto.tools.main import cli


def _commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group)
    out = [path]
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out += _commands(cmd, path + (name,)) if isinstance(cmd, click.Group) else [path + (name,)]
    return out


COMMANDS = _commands()


def test_the_walk_finds_every_command():
    assert {p[0] for p in COMMANDS if p} == {
        "acls", "broker-api-versions", "cluster", "cluster-tool", "configs", "conformance", "consume", "consumer-perf-test", "decode",
        "delete-records", "dump-log", "export", "features", "get-offsets", "groups", "leader-election", "log-dirs",
        "metadata-quorum", "offsets", "produce", "producer-perf-test", "reassign-partitions", "serve", "share-groups",
        "storage", "streams-groups", "topics", "transactions", "users", "verifiable-consumer", "verifiable-producer"}
    assert ("transactions", "find-hanging") in COMMANDS and ("offsets", "migrate-zk") in COMMANDS
    assert ("conformance", "run") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "kproto")
def test_every_help_documents_the_exit_statuses(path, monkeypatch):
    """--help works with nothing else on the line (required options or not) and
    ends with the shared "Exit status" paragraph (main.exit_status_help)."""
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVER", raising=False)
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())          # click wraps the paragraph
    assert "Exit status: 0 " in text and "; 1 " in text and "; 2 bad flags (one line on stderr)" in text


def test_a_required_group_option_still_required_without_help(monkeypatch):
    monkeypatch.delenv("KPROTO_BOOTSTRAP_SERVER", raising=False)
    result = CliRunner().invoke(cli, ["transactions", "find-hanging", "--topic", "t"])
    assert (result.exit_code, result.output) == (2, "argument --bootstrap-server is required\n")
    result = CliRunner().invoke(cli, ["transactions", "find-hanging", "--", "--help"])
    assert result.exit_code == 2


@pytest.mark.parametrize("values, p50, p99", [
    ([7.0], 7.0, 7.0),
    ([4.0, 1.0], 1.0, 4.0),                                  # ceil(0.5 * 2) = 1st, ceil(0.99 * 2) = 2nd
    ([float(v) for v in range(10, 0, -1)], 5.0, 10.0),       # ranks 5 and 10 of 1..10
    ([float(v) for v in range(1, 101)], 50.0, 99.0),         # ranks 50 and 99 of 1..100
    ([float(v) for v in range(1, 201)], 100.0, 198.0),       # ranks 100 and 198
])
def test_stats_percentiles_are_nearest_rank(values, p50, p99):
    assert (_Stats._pct(values, 50), _Stats._pct(values, 99)) == (p50, p99)
