"""The kproto commands, run in process: dump-log on a written segment, topics and
groups with their checked outputs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kproto.tools.main import cli


SEGMENT = "00000000000000000000.log"


def run_dump_log(*args: str):
    return run_command("dump-log", None, *args)


def write_segment(tmp_path: Path, data: bytes, name: str = SEGMENT) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def run_command(command: str, bootstrap: str | None, *args: str):
    """`kproto <command> [--bootstrap-server B] ...` in process: (exit status, stdout, stderr)."""
    full = [command] + (["--bootstrap-server", bootstrap] if bootstrap else []) + list(args)
    result = CliRunner().invoke(cli, full, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def kt(bootstrap: str | None, *args: str):
    return run_command("topics", bootstrap, *args)


def kg(bootstrap: str | None, *args: str):
    return run_command("groups", bootstrap, *args)


def reset_text(rows: list[tuple], groups: tuple[str, ...] = ()) -> str:
    """Kafka 4.4's reset table (GroupOffsetsResetter.printOffsetsToReset, measured):
    ``%-Gs %-Ts %-10s %s`` rows after a header, each "\\n"-prefixed, and a final
    newline; G/T the longest group id (``groups``: those with an empty plan too)
    and topic, at least 15."""
    g = max([15] + [len(r[0]) for r in rows] + [len(x) for x in groups])
    t = max([15] + [len(r[1]) for r in rows])
    return "".join(f"\n%-{g}s %-{t}s %-10s %s" % r for r in [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")] + rows) + "\n"


def topics_ok(bootstrap: str, *args: str) -> str:
    status, out, err = kt(bootstrap, *args)
    assert (status, err) == (0, ""), (status, err)
    return out


def groups_ok(bootstrap: str, *args: str) -> str:
    status, out, err = kg(bootstrap, *args)
    assert (status, err) == (0, ""), (status, out, err)
    return out


def topic_configs(kind: str, bs: str, topic: str) -> dict:
    """The topic's set configs. kafka-topics prints the non-default ones;
    tansu reports every stored config with source DEFAULT_CONFIG (so Kafka's
    tool, and kproto's, print none), so there read them through the admin client."""
    if kind == "kproto":
        return json.loads(topics_ok(bs, "--describe", "--topic", topic, "--output", "json"))[0]["configs"]
    from kproto.client.admin import Admin, ConfigResource
    from kproto.client.transport import BrokerClient
    with BrokerClient(bs) as client:
        answer = Admin(client).describe_configs([ConfigResource(2, topic)])[ConfigResource(2, topic)]
    return {e.name: e.value for e in answer.entries}
