"""``kproto conformance``: check any Kafka decoder against the third-party corpus.

    kproto conformance list [--kind K] [PATTERN ...]
    kproto conformance run --decoder "CMD {file}" [--kind K] [--json] [PATTERN ...]
    kproto conformance export DIR

The corpus, the answer form and the decoder contract are described in
``kproto.conformance`` and its README (``kproto/conformance/corpus/README.md``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from kproto.errors import UsageError
from kproto.tools.main import ExitStatus, OneLineCommand, UsageProblem, exit_status_help

KIND = click.Choice(["records", "frames", "request", "response"])


class Problem(UsageProblem):
    prefix = "kproto conformance: "


class Command(OneLineCommand):
    usage_problem = Problem


def _select(kinds: tuple[str, ...], patterns: tuple[str, ...]):
    from kproto.conformance import fixtures
    chosen = fixtures(kinds or None, patterns)
    if not chosen:
        raise Problem(f"no fixture matches {' '.join(patterns) or '(all)'}"
                         + (f" of kind {', '.join(kinds)}" if kinds else ""))
    return chosen


def _what(f) -> str:
    if f.kind == "records":
        return f"{sum(len(b['records']) for b in f.meta['batches'])} records"
    return f"{f.meta['api']} v{f.api_version} {f.kind}"


EPILOG = exit_status_help("the command failed; for run, a fixture failed or got no answer")


@click.group(epilog=EPILOG)
def conformance() -> None:
    """Kafka bytes from third-party writers, with their decoded values, to check a decoder."""


@conformance.command("list", cls=Command, epilog=EPILOG)
@click.option("--kind", "kinds", type=KIND, multiple=True, help="Only this kind (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per fixture.")
@click.argument("patterns", nargs=-1)
def list_(kinds: tuple[str, ...], as_json: bool, patterns: tuple[str, ...]) -> None:
    """List the fixtures (PATTERN: shell globs on the name)."""
    for f in _select(kinds, patterns):
        if as_json:
            click.echo(json.dumps({"fixture": f.id, "kind": f.kind, "file": str(f.path),
                                   "api_key": f.api_key, "api_version": f.api_version,
                                   "written_by": f.written_by, "size": f.path.stat().st_size}))
        else:
            click.echo(f"{f.id:<62} {_what(f):<34} {f.written_by}")


@conformance.command(cls=Command, epilog=EPILOG)
@click.option("--decoder", required=True, metavar='"CMD {file}"',
              help="Command run once per fixture; {file} {kind} {name} {api_key} {api_version} are filled in.")
@click.option("--kind", "kinds", type=KIND, multiple=True, help="Only this kind (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document with every outcome, for CI.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Decoders run at once [cores].")
@click.option("--timeout", type=click.FloatRange(0.1), default=30.0, show_default=True,
              help="Seconds one decoder may take.")
@click.argument("patterns", nargs=-1)
def run(decoder: str, kinds: tuple[str, ...], as_json: bool, jobs: int | None, timeout: float,
        patterns: tuple[str, ...]) -> None:
    """Feed each fixture to DECODER and compare its JSON answer with the expected values."""
    from kproto.conformance import runner
    chosen = _select(kinds, patterns)
    counts = {"pass": 0, "fail": 0, "error": 0}
    outcomes = []
    try:
        words = runner.parse_template(decoder)
    except UsageError as e:
        raise Problem(str(e)) from None
    for o in runner.run(words, chosen, jobs=jobs, timeout=timeout):
        counts[o.status] += 1
        if as_json:
            outcomes.append(o.as_dict())
            continue
        line = f"{o.status.upper():<5} {o.fixture.id}"
        if o.problems:
            line += ": " + "; ".join(o.problems)
        click.echo(line)
        sys.stdout.flush()
    summary = {"fixtures": len(chosen), "passed": counts["pass"], "failed": counts["fail"],
               "errors": counts["error"]}
    if as_json:
        click.echo(json.dumps({"decoder": decoder, "summary": summary, "outcomes": outcomes}, indent=1))
    else:
        click.echo(f"{len(chosen)} fixtures: {counts['pass']} passed, {counts['fail']} failed, "
                   f"{counts['error']} errors")
    if counts["fail"] or counts["error"]:
        sys.exit(ExitStatus.ERROR)


@conformance.command(cls=Command, epilog=EPILOG)
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
def export(directory: Path) -> None:
    """Write the corpus to DIRECTORY as plain files, with index.json and expected/ answers."""
    from kproto.conformance import CORPUS, fixtures
    if directory.exists() and any(directory.iterdir()):
        raise UsageError(f"{directory}: exists and is not empty")
    shutil.copytree(CORPUS, directory, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
    index = []
    for f in fixtures():
        rel = f.path.relative_to(CORPUS)
        answer = Path("expected") / rel.with_suffix(".json")
        (directory / answer).parent.mkdir(parents=True, exist_ok=True)
        (directory / answer).write_text(json.dumps(f.expected(), indent=1, ensure_ascii=False) + "\n")
        index.append({"fixture": f.id, "kind": f.kind, "file": str(rel), "provenance": str(rel.with_suffix(".json")),
                      "expected": str(answer), "api_key": f.api_key, "api_version": f.api_version,
                      "written_by": f.written_by})
    (directory / "index.json").write_text(json.dumps({"fixtures": index}, indent=1) + "\n")
    click.echo(f"{len(index)} fixtures written to {directory}")
