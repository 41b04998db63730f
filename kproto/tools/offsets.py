"""``kproto offsets``: carry consumer offsets that 0.8-era consumers kept in
ZooKeeper over to Kafka, and the ExportZkOffsets / ImportZkOffsets file tools.

The old consumer kept one persistent znode per partition,
``/consumers/<group>/offsets/<topic>/<partition>``, whose data is the offset as
an ASCII decimal. ``migrate-zk`` commits those offsets through the group
coordinator as a simple committer (generation -1, metadata ""), only where
Kafka's committed offset differs, then reads them back; a re-run finds
everything unchanged. ``--dual-check`` is the check for the documented
dual-commit migration (``offsets.storage=kafka``, ``dual.commit.enabled=true``):
both stores must agree before dual commit is switched off.

The file format is Kafka 1.x's: UTF-8 lines ``<znode path>:<offset>``. Kafka
listed znodes in ZooKeeper's (unspecified) child order; kproto sorts groups and
topics by name and partitions by number, so an export is reproducible.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass
from typing import Iterable, Sequence

import click

from kproto.tools import main
from kproto.tools.main import ExitStatus, exit_status_help

ZK_TIMEOUT_S = 5.0
CONSUMERS = "/consumers"
OFFSET_PATH = re.compile(r"/consumers/([^/]+)/offsets/([^/]+)/([^/]+)")
DECIMAL = re.compile(r"[0-9]+")
MAX_OFFSET = 2**63 - 1          # an int64 on the wire


def as_offset(text: str) -> int | None:
    """An offset written as ASCII decimal (what the old consumer wrote), else None."""
    return int(text) if DECIMAL.fullmatch(text) and int(text) <= MAX_OFFSET else None


class OffsetsError(Exception):
    """A failure reported as one line on stderr, exit status 1."""


class UsageProblem(main.UsageProblem):
    """Bad flags: ``kproto: error: ...``, exit status 2."""

    prefix = "kproto: error: "


class OneLineCommand(main.OneLineCommand):
    usage_problem = UsageProblem


# --- pure parts ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ZkOffset:
    """One ``/consumers/<group>/offsets/<topic>/<partition>`` znode, as read."""
    group: str
    topic: str
    partition: str          # the child's name; 0.7 used "broker-partition"
    value: str              # the znode's data, UTF-8 decoded

    @property
    def path(self) -> str:
        return offset_path(self.group, self.topic, self.partition)


def offset_path(group: str, topic: str, partition: object) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"


def split_zookeeper(zookeeper: str, chroot: str | None) -> tuple[str, str]:
    """``host:port[,host:port][/chroot]`` and ``--chroot`` -> (hosts, chroot
    prefix without a trailing slash, "" for none)."""
    hosts, slash, inline = zookeeper.partition("/")
    if slash and chroot:
        raise UsageProblem("give the chroot either in --zookeeper or with --chroot, not both")
    root = "/" + inline if slash else (chroot or "")
    if root and not root.startswith("/"):
        raise UsageProblem(f"--chroot must start with '/': {root!r}")
    if not hosts:
        raise UsageProblem("--zookeeper needs HOST:PORT")
    return hosts, root.rstrip("/")


def partition_key(name: str) -> tuple[int, int, str]:
    """Numeric partitions in number order, anything else after, by name."""
    return (0, int(name), "") if DECIMAL.fullmatch(name) else (1, 0, name)


def export_text(entries: Iterable[ZkOffset]) -> str:
    """ExportZkOffsets' file: ``<path>:<offset>\\n`` per znode."""
    return "".join(f"{e.path}:{e.value}\n" for e in entries)


def parse_offsets_file(text: str, name: str) -> dict[str, str]:
    """ImportZkOffsets' input -> {znode path: offset}, checked line by line.

    Like Kafka: reading ends at the first empty line and a repeated path keeps
    its last offset. Unlike Kafka, a line is split at its *last* ``:`` (a group
    name may hold one; an offset never does), the path must be the offsets
    layout, the offset a decimal, and data after the ending empty line is an
    error rather than silently dropped. Nothing is written unless every line
    passes.
    """
    out: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)      # Java readLine's terminators
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if line == "":
            extra = next((i for i, rest in enumerate(lines[number:], number + 1) if rest.strip()), None)
            if extra is not None:
                raise OffsetsError(f"{name}:{extra}: data after the empty line at line {number} "
                                   "(the format ends at the first empty line)")
            break
        path, colon, value = line.rpartition(":")
        if not colon:
            raise OffsetsError(f"{name}:{number}: expected <znode path>:<offset>, found no ':'")
        m = OFFSET_PATH.fullmatch(path)
        if not m:
            raise OffsetsError(f"{name}:{number}: {path!r} is not /consumers/<group>/offsets/<topic>/<partition>")
        if not DECIMAL.fullmatch(m.group(3)):
            raise OffsetsError(f"{name}:{number}: partition {m.group(3)!r} is not a number")
        if as_offset(value) is None:
            raise OffsetsError(f"{name}:{number}: offset {value!r} is not a decimal number up to 2^63-1")
        out[path] = value
    return out


@dataclass(slots=True)
class Row:
    """One partition of the plan (or of a dual check)."""
    group: str
    topic: str
    partition: int | str
    zookeeper_offset: int | None
    kafka_offset: int | None = None
    action: str = "commit"             # commit | unchanged | skip: <why> ; dual check: equal | differs | ...
    result: str | None = None          # after a commit: committed | failed: <error> | read back <n>

    def as_dict(self, executed: bool) -> dict:
        d = {"group": self.group, "topic": self.topic, "partition": self.partition,
             "zookeeper_offset": self.zookeeper_offset, "kafka_offset": self.kafka_offset,
             "action": self.action}
        if executed:
            d["result"] = self.result
        return d


def plan_rows(entries: Sequence[ZkOffset], partitions: dict[str, int]) -> list[Row]:
    """Rows for the ZooKeeper offsets against the cluster's topics
    (``partitions``: topic -> partition count); what cannot be committed is
    marked ``skip: <why>`` rather than sent (a broker may accept a commit for
    a topic it does not have, and the group would then hold a dead offset)."""
    rows = []
    for e in entries:
        part: int | str = int(e.partition) if DECIMAL.fullmatch(e.partition) else e.partition
        offset = as_offset(e.value)
        row = Row(e.group, e.topic, part, offset)
        if offset is None:
            row.action = f"skip: offset {e.value!r} is not a decimal"
        elif isinstance(part, str):
            row.action = f"skip: partition {part!r} is not a number"
        elif e.topic not in partitions:
            row.action = "skip: no such topic"
        elif part >= partitions[e.topic]:
            row.action = "skip: no such partition"
        rows.append(row)
    return rows


# --- ZooKeeper -------------------------------------------------------------------------

class ZooKeeper:
    """A kazoo session for the duration of a ``with``; paths are given without
    the chroot (as in the export file) and prefixed here, so an import can
    create the chroot itself too."""

    def __init__(self, zookeeper: str, chroot: str | None, timeout_s: float = ZK_TIMEOUT_S) -> None:
        self.hosts, self.root = split_zookeeper(zookeeper, chroot)
        self.timeout_s = timeout_s
        self.where = self.hosts + self.root
        self._zk = None

    def __enter__(self) -> "ZooKeeper":
        try:
            from kazoo.client import KazooClient
            from kazoo.handlers.threading import KazooTimeoutError
        except ImportError:
            raise OffsetsError("kproto offsets needs kazoo for ZooKeeper: pip install kazoo") from None
        # kazoo logs every failed connection attempt; the command says it once.
        quiet = logging.getLogger("kproto.offsets.kazoo")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        try:
            self._zk = KazooClient(hosts=self.hosts, timeout=max(self.timeout_s, 10.0), logger=quiet)
            self._zk.start(timeout=self.timeout_s)
        except KazooTimeoutError:
            self.__exit__()
            raise OffsetsError(f"cannot connect to ZooKeeper at {self.hosts} within {self.timeout_s:g}s") from None
        except ValueError as e:      # kazoo's host string parsing
            self.__exit__()
            raise OffsetsError(f"bad ZooKeeper address {self.hosts!r}: {e}") from None
        return self

    def __exit__(self, exc_type=None, exc=None, tb=None) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
            self._zk = None
        # A lost session or a timed-out request (kazoo.exceptions and the
        # handler's KazooTimeoutError) is a one-line failure naming the server.
        if exc is not None and type(exc).__module__.startswith("kazoo."):
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise OffsetsError(f"ZooKeeper at {self.where}: {detail}") from None

    def _children(self, paths: list[str]) -> list[list[str] | None]:
        """Children of each path (None where the node is missing), asked all at once."""
        from kazoo.exceptions import NoNodeError
        pending = [self._zk.get_children_async(self.root + p) for p in paths]
        out = []
        for p in pending:
            try:
                out.append(p.get(timeout=self.timeout_s * 6))
            except NoNodeError:
                out.append(None)
        return out

    def read(self, groups: Sequence[str] = ()) -> list[ZkOffset]:
        """Every offset znode of ``groups`` (all groups when empty), sorted.
        A named group without offsets is an error; an unnamed one (only
        ``ids``/``owners``) has nothing to migrate and is passed over."""
        from kazoo.exceptions import NoNodeError
        named = bool(groups)
        groups = list(dict.fromkeys(groups)) if named else sorted(self._children([CONSUMERS])[0] or [])
        topic_lists = self._children([f"{CONSUMERS}/{g}/offsets" for g in groups])
        pairs = []
        for group, topics in zip(groups, topic_lists):
            if topics is None:
                if named:
                    raise OffsetsError(f"no offsets in ZooKeeper at {self.where} for group '{group}' "
                                       f"({CONSUMERS}/{group}/offsets does not exist)")
                continue
            pairs += [(group, t) for t in sorted(topics)]
        part_lists = self._children([f"{CONSUMERS}/{g}/offsets/{t}" for g, t in pairs])
        keys = [(g, t, p) for (g, t), parts in zip(pairs, part_lists)
                for p in sorted(parts or [], key=partition_key)]
        pending = [self._zk.get_async(self.root + offset_path(*k)) for k in keys]
        out = []
        for key, p in zip(keys, pending):
            try:
                data, _ = p.get(timeout=self.timeout_s * 6)
            except NoNodeError:          # removed since it was listed
                continue
            out.append(ZkOffset(*key, (data or b"").decode("utf-8", "replace")))
        return out

    def write(self, offsets: dict[str, str]) -> None:
        """Set each znode, creating it and its parents where missing."""
        from kazoo.exceptions import NoNodeError
        for path, value in offsets.items():
            full = self.root + path
            try:
                self._zk.set(full, value.encode())
            except NoNodeError:
                self._zk.create(full, value.encode(), makepath=True)


# --- the commands ----------------------------------------------------------------------

EPILOG = exit_status_help(
    'the command failed (ZooKeeper or the broker unreachable, a broker error, an offset that did not read '
    'back, a bad input file line; one line "kproto: error: ..." on stderr) or, with --dual-check, ZooKeeper '
    'and Kafka differ',
    partial="partial: some offsets were skipped (their topic or partition is not in the cluster, or the znode does "
            "not hold a decimal)")

CONTEXT = {"help_option_names": ["-h", "--help"]}


def zookeeper_options(f):
    f = click.option("--zk-timeout", type=click.FloatRange(0, min_open=True), default=ZK_TIMEOUT_S, show_default=True, metavar="SECONDS",
                     help="How long to wait for the ZooKeeper connection.")(f)
    f = click.option("--chroot", metavar="/PATH", help="The ZooKeeper chroot Kafka used (or HOST:PORT/PATH).")(f)
    return click.option("--zookeeper", "--zkconnect", required=True, metavar="HOST:PORT[/CHROOT]",
                        help="The ZooKeeper connect string the old consumers used.")(f)


@click.group("offsets", context_settings=CONTEXT, epilog=EPILOG)
def offsets() -> None:
    """Migrate, export and import ZooKeeper-stored consumer offsets."""


def _run(fn, *args) -> None:
    """Run a command body: its known failures become one line and status 1."""
    from kproto.errors import KprotoError
    try:
        status = fn(*args)
    except (OffsetsError, KprotoError, OSError) as e:
        _fail(str(e))
    sys.stdout.flush()
    sys.exit(status or ExitStatus.OK)


def _fail(message: str) -> None:
    sys.stdout.flush()
    click.echo(f"kproto: error: {message}", err=True)
    sys.exit(ExitStatus.ERROR)


def read_zookeeper(o: dict) -> list[ZkOffset]:
    with ZooKeeper(o["zookeeper"], o["chroot"], o["zk_timeout"]) as zk:
        entries = zk.read(o["groups"])
    if not entries:     # most often a wrong chroot: say where we looked
        _warn(f"no consumer offsets under {zk.where}{CONSUMERS}")
    return entries


def _warn(message: str) -> None:
    click.echo(f"kproto: warning: {message}", err=True)


@offsets.command("migrate-zk", cls=OneLineCommand, context_settings=CONTEXT, epilog=EPILOG)
@zookeeper_options
@click.option("--bootstrap-server", envvar="KPROTO_BOOTSTRAP_SERVER", required=True, metavar="HOST:PORT",
              help="The Kafka cluster to commit to (or KPROTO_BOOTSTRAP_SERVER).")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Property file containing configs to be passed to the admin client.")
@click.option("--group", "groups", multiple=True, help="A consumer group (repeatable); all groups when omitted.")
@click.option("--dry-run", is_flag=True, help="Show the plan; commit nothing.")
@click.option("--dual-check", is_flag=True,
              help="Only compare ZooKeeper and Kafka offsets; exit 1 if any partition differs.")
@click.option("--allow-rewind", is_flag=True,
              help="Also commit where Kafka's committed offset is ahead of ZooKeeper's "
                   "(moves the group back; skipped by default).")
@click.option("--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def migrate_zk(**o) -> None:
    """Commit ZooKeeper offsets into Kafka, or compare the two.

    Reads /consumers/<group>/offsets/<topic>/<partition>, prints the plan
    (ZooKeeper offset, Kafka's committed offset, action), commits the offsets
    that differ as a simple committer and reads them back. Re-running is safe:
    equal offsets are left unchanged.
    """
    _run(migrate, o)


def migrate(o: dict) -> int:
    from kproto.client.admin import Admin
    from kproto.client.transport import BrokerClient, load_client_properties
    from kproto.errors import ErrorCode
    entries = read_zookeeper(o)
    config = load_client_properties(o["command_config"]) if o["command_config"] else None
    with BrokerClient(o["bootstrap_server"], config=config) as client:
        admin = Admin(client)
        try:
            md = admin.metadata()
            live = {n: len(t.partitions) for n, t in md.topics.items()
                    if t.error in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE)}
            rows = plan_rows(entries, live)
            by_group: dict[str, list[Row]] = {}
            for r in rows:
                by_group.setdefault(r.group, []).append(r)
            execute = not (o["dry_run"] or o["dual_check"])
            problems = [migrate_group(admin, group, group_rows, execute, o["dual_check"], o["allow_rewind"])
                        for group, group_rows in by_group.items()]
        finally:
            admin.close()
    emit(rows, o["output"], executed=execute, dual=o["dual_check"])
    for problem in filter(None, problems):
        click.echo(f"kproto: error: {problem}", err=True)
    return outcome(rows, dual=o["dual_check"]) if not any(problems) else ExitStatus.ERROR


def migrate_group(admin, group: str, rows: list[Row], execute: bool, dual: bool,
                  allow_rewind: bool = False) -> str | None:
    """Compare (and commit) one group; a group-level broker error (say, no
    coordinator) marks that group's rows and the other groups go on."""
    from kproto.errors import KafkaError
    try:
        compare(admin, group, rows, dual, allow_rewind)
        if execute:
            commit(admin, group, rows)
    except KafkaError as e:
        for r in rows:
            if r.action.startswith("skip"):
                continue
            if execute:
                r.result = r.result or f"failed: {e.error_code.name}"
            else:
                r.action = f"error: {e.error_code.name}"
        return f"group '{group}': {e}"
    return None


def outcome(rows: list[Row], *, dual: bool) -> int:
    """The exit status, with a one-line summary on stderr when it is not 0."""
    if dual:
        differ = sum(r.action != "equal" for r in rows)
        if differ:
            _warn(f"{differ} of {len(rows)} partitions differ between ZooKeeper and Kafka")
        return ExitStatus.ERROR if differ else ExitStatus.OK
    failed = sum(r.result not in (None, "committed") for r in rows)
    if failed:
        click.echo(f"kproto: error: {failed} of {sum(r.result is not None for r in rows)} commits "
                   "failed or did not read back (see RESULT)", err=True)
        return ExitStatus.ERROR
    skipped = sum(r.action.startswith("skip") for r in rows)
    if skipped:
        _warn(f"{skipped} of {len(rows)} partitions skipped (see ACTION)")
        return ExitStatus.PARTIAL
    return ExitStatus.OK


def compare(admin, group: str, rows: list[Row], dual: bool, allow_rewind: bool = False) -> None:
    """Fill in Kafka's committed offsets and the action (or, for a dual
    check, whether the two stores agree). Where Kafka is already ahead (the
    consumers moved on after a dual-commit phase), committing ZooKeeper's
    offset would replay messages: that row is skipped unless ``allow_rewind``."""
    from kproto.errors import ErrorCode
    wanted = [(r.topic, r.partition) for r in rows if not r.action.startswith("skip")]
    committed = admin.offset_fetch(group, wanted) if wanted else {}
    for r in rows:
        if r.action.startswith("skip"):
            if dual:
                r.action = r.action[len("skip: "):]
            continue
        got = committed.get((r.topic, r.partition))
        if got is not None and got.error != ErrorCode.NONE:
            r.action = f"{'' if dual else 'skip: '}fetch failed: {got.error.name}"
            continue
        r.kafka_offset = got.offset if got is not None else None
        same = r.kafka_offset == r.zookeeper_offset
        r.action = ("equal" if same else "differs") if dual else ("unchanged" if same else "commit")
        if (r.action == "commit" and not allow_rewind and r.kafka_offset is not None
                and r.kafka_offset > r.zookeeper_offset):
            r.action = "skip: kafka is ahead (--allow-rewind moves it back)"


def commit(admin, group: str, rows: list[Row]) -> None:
    """Commit the rows marked ``commit``, then read them back."""
    from kproto.client.admin import OffsetAndMetadata
    from kproto.errors import ErrorCode
    todo = {(r.topic, r.partition): r for r in rows if r.action == "commit"}
    if not todo:
        return
    errors = admin.offset_commit(group, {tp: OffsetAndMetadata(r.zookeeper_offset, "") for tp, r in todo.items()})
    done = []
    for tp, r in todo.items():
        error = errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
        if error == ErrorCode.NONE:
            done.append(tp)
        else:
            r.result = f"failed: {error.name}"
    back = admin.offset_fetch(group, done) if done else {}
    for tp in done:
        got = back.get(tp)
        r = todo[tp]
        if got is None:
            r.result = "read back nothing"
        elif got.error != ErrorCode.NONE:
            r.result = f"read back failed: {got.error.name}"
        elif got.offset != r.zookeeper_offset:
            r.result = f"read back {got.offset}"
        else:
            r.result = "committed"


def emit(rows: list[Row], fmt: str, *, executed: bool, dual: bool) -> None:
    if fmt == "json":
        text = json.dumps([r.as_dict(executed) for r in rows], indent=2, ensure_ascii=False)
    else:
        text = "\n".join(offsets_plan_lines([r.as_dict(executed) for r in rows], executed=executed,
                                                   dual=dual))
    sys.stdout.write(text + "\n")


@offsets.command("export-zk", cls=OneLineCommand, context_settings=CONTEXT, epilog=EPILOG)
@zookeeper_options
@click.option("--group", "groups", multiple=True, help="A consumer group (repeatable); all groups when omitted.")
@click.option("--output-file", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Where to write the offsets ('-' for stdout).")
def export_zk(**o) -> None:
    """Export ZooKeeper offsets to a file (ExportZkOffsets).

    Writes one UTF-8 line <znode path>:<offset> per partition, groups and
    topics sorted by name, partitions by number.
    """
    _run(export, o)


def export(o: dict) -> int:
    entries = read_zookeeper(o)
    # Kafka skipped a znode without data; an empty offset would not import.
    empty = [e for e in entries if not e.value]
    for e in empty:
        _warn(f"{e.path} holds no offset; not exported")
    text = export_text(e for e in entries if e.value)
    if o["output_file"] == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(o["output_file"], "w", encoding="utf-8", newline="") as f:
                f.write(text)
        except OSError as e:
            raise OffsetsError(f"cannot write {o['output_file']}: {e.strerror}") from None
    return ExitStatus.PARTIAL if empty else ExitStatus.OK


@offsets.command("import-zk", cls=OneLineCommand, context_settings=CONTEXT, epilog=EPILOG)
@zookeeper_options
@click.option("--input-file", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="An ExportZkOffsets file ('-' for stdin).")
def import_zk(**o) -> None:
    """Import ZooKeeper offsets from a file (ImportZkOffsets).

    Every line is checked before anything is written; missing znodes are
    created with their parents, existing ones overwritten.
    """
    _run(import_, o)


def import_(o: dict) -> int:
    name = o["input_file"]
    shown = "<stdin>" if name == "-" else name
    try:
        if name == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(name, "rb") as f:
                data = f.read()
    except OSError as e:
        raise OffsetsError(f"cannot read {name}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise OffsetsError(f"{shown}:{line}: not UTF-8") from None
    wanted = parse_offsets_file(text, shown)
    with ZooKeeper(o["zookeeper"], o["chroot"], o["zk_timeout"]) as zk:
        zk.write(wanted)
    return ExitStatus.OK


__all__ = ["offsets", "ZkOffset", "ZooKeeper", "Row", "export_text", "parse_offsets_file", "plan_rows",
           "split_zookeeper", "OffsetsError"]


# --- kproto offsets (ZooKeeper offsets migration plan) -----------------------------------
#
# A plan row is a dict with group, topic, partition, zookeeper_offset,
# kafka_offset, action and (after commits) result. Plain aligned columns in
# the manner of kafka-consumer-groups --describe: each column as wide as its
# longest cell, "-" where there is no value, no trailing blanks.

OFFSETS_COLUMNS = (("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"),
                   ("zookeeper_offset", "ZOOKEEPER-OFFSET"), ("kafka_offset", "KAFKA-OFFSET"))


def offsets_plan_lines(rows: Iterable[dict], *, executed: bool = False, dual: bool = False) -> list[str]:
    """The plan (or dual check) table; the header alone when there are no rows."""
    columns = list(OFFSETS_COLUMNS) + [("action", "STATUS" if dual else "ACTION")]
    if executed:
        columns.append(("result", "RESULT"))
    cells = [[h for _, h in columns]]
    cells += [["-" if r[k] is None else str(r[k]) for k, _ in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in cells]
