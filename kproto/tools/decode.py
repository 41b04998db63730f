"""``kproto decode``: captured Kafka traffic (pcap, pcapng, gzip, stdin), decoded.

Output modes, one exchange (a request and its response) at a time:

* default: one line per exchange::

    08:48:57.123456 127.0.0.1:56340 > 127.0.0.1:9092 Produce v10 #2 28.475ms rdkafka ok t1[0] 100 records

  then ``  ! warning`` lines for anything the decoder had to say;
* ``--verbose``: the line, then the request and response trees;
* ``--json``: one object per line with the keys ``ts`` (ISO 8601 UTC),
  ``connection``, ``api_key``, ``api_name``, ``api_version``,
  ``correlation_id``, ``client_id``, ``latency_ms``, ``request``, ``response``
  (full decoded bodies, null when not captured) and ``warnings``; bytes are
  base64 text, UUIDs canonical text (``kproto.capture.json_default``);
* ``--stats``: per-API counts, latency percentiles (nearest rank), bytes,
  error codes and the versions each client used, instead of the exchanges.

Capture-level problems (a truncated file, no Kafka at all) are one line on
stderr; a file that is not a capture is one line and exit status 4.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections import Counter, defaultdict
from contextlib import contextmanager

import click

from kproto.capture import Capture, Exchange
from kproto.capture.body import error_name, record_count
from kproto.capture.kafka import iso_time
from kproto.capture.jsonout import dumps_bytes
from kproto.memory import keep_freed_memory
from kproto.schemas.protocol import API_KEYS
from kproto.tools.main import OneLineCommand, UsageProblem, exit_status_help

# Files over this size get a progress bar (when stderr is a terminal).
PROGRESS_MIN_BYTES = 4 * 1024 * 1024


def _clock(ts_ns: int) -> str:
    return iso_time(ts_ns)[11:26]            # HH:MM:SS.ffffff, as tcpdump prints it


def _summary(topics: dict[str, set[int]]) -> str:
    return " ".join(f"{t}[{','.join(map(str, sorted(p)))}]" if p else t for t, p in sorted(topics.items()))


def line(ex: Exchange) -> str:
    """The one-line form of an exchange."""
    parts = [_clock(ex.ts_ns), str(ex.connection)]
    if ex.api_key is None and ex.api_name is None:
        parts.append("-")
    else:
        parts.append(f"{ex.api_name or f'ApiKey{ex.api_key}'}"
                     + (f" v{ex.api_version}" if ex.api_version is not None else ""))
    if ex.correlation_id is not None:
        parts.append(f"#{ex.correlation_id}")
    latency = ex.latency_ms
    parts.append("-" if latency is None else f"{latency:.3f}ms")
    if ex.client_id:
        parts.append(ex.client_id)
    if ex.response is not None:
        codes = ex.error_codes()
        parts.append(",".join(error_name(c) for c in codes) if codes else "ok")
    elif ex.api_key is not None:
        parts.append("no-response")
    summary = _summary(ex.topics())
    if summary:
        parts.append(summary)
    n = record_count(ex.request) + record_count(ex.response)
    if n:
        parts.append(f"{n} records")
    return " ".join(parts)


def _scalar(v) -> str:
    if isinstance(v, (bytes, bytearray)):
        return repr(bytes(v))
    if v is None:
        return "null"
    return str(v)


def _flat(v) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(_flat(x) for x in v) + "]"
    return _scalar(v)


def tree(value, pad: str = "  ", indent: str = "  ") -> list[str]:
    """A decoded body as indented ``name: value`` lines."""
    out: list[str] = []

    def walk(v, pad: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, (dict, list, tuple)) and x:
                    out.append(f"{pad}{k}:")
                    walk(x, pad + indent)
                else:
                    out.append(f"{pad}{k}: {_scalar(x) if not isinstance(x, (list, tuple, dict)) else '[]'}")
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                if isinstance(x, dict) and not any(isinstance(y, (dict, list)) for y in x.values()):
                    # a flat struct (a record, a partition) reads best on one line
                    out.append(f"{pad}[{i}] " + " ".join(f"{k}={_flat(y)}" for k, y in x.items()))
                elif isinstance(x, (dict, list, tuple)) and x:
                    out.append(f"{pad}[{i}]")
                    walk(x, pad + indent)
                else:
                    out.append(f"{pad}[{i}] {_scalar(x)}")
    walk(value, pad)
    return out


class _Filter:
    def __init__(self, apis, topics, client_ids, errors_only) -> None:
        self.apis = {a.lower() for a in apis}
        self.topics = set(topics)
        self.client_ids = set(client_ids)
        self.errors_only = errors_only
        self.active = bool(self.apis or self.topics or self.client_ids or errors_only)

    def __call__(self, ex: Exchange) -> bool:
        if self.apis and (ex.api_name or "").lower() not in self.apis and str(ex.api_key) not in self.apis:
            return False
        if self.client_ids and ex.client_id not in self.client_ids:
            return False
        if self.errors_only and not ex.error_codes():
            return False
        if self.topics and not self.topics & set(ex.topics()):
            return False
        return True


class _Stats:
    def __init__(self) -> None:
        self.count: Counter = Counter()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.req_bytes: Counter = Counter()
        self.resp_bytes: Counter = Counter()
        self.errors: Counter = Counter()
        self.versions: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
        self.warnings = 0

    def add(self, ex: Exchange) -> None:
        api = ex.api_name or "-"
        self.count[api] += 1
        if ex.latency_ms is not None:
            self.latency[api].append(ex.latency_ms)
        self.req_bytes[api] += ex.request_size
        self.resp_bytes[api] += ex.response_size
        for c in ex.error_codes():
            self.errors[(api, error_name(c))] += 1
        if ex.api_name and ex.api_version is not None:
            self.versions[ex.client_id or "-"][ex.api_name].add(ex.api_version)
        self.warnings += bool(ex.warnings)

    @staticmethod
    def _pct(values: list[float], percent: int) -> float:
        """The nearest-rank percentile: the smallest value with at least
        ``percent`` % of ``values`` at or below it (always an observed latency;
        rank ceil(percent * n / 100), in integers)."""
        return sorted(values)[max(1, -(-percent * len(values) // 100)) - 1]

    def as_dict(self) -> dict:
        apis = {}
        for api, n in sorted(self.count.items()):
            lat = self.latency.get(api)
            apis[api] = {"count": n, "request_bytes": self.req_bytes[api], "response_bytes": self.resp_bytes[api],
                         "latency_ms": {"p50": round(self._pct(lat, 50), 3), "p99": round(self._pct(lat, 99), 3),
                                        "max": round(max(lat), 3)} if lat else None}
        return {"apis": apis,
                "errors": [{"api": a, "error": e, "count": n} for (a, e), n in sorted(self.errors.items())],
                "clients": {c: {a: sorted(v) for a, v in sorted(apis_.items())}
                            for c, apis_ in sorted(self.versions.items())},
                "exchanges_with_warnings": self.warnings}

    def lines(self) -> list[str]:
        d = self.as_dict()
        out = [f"{'API':<28}{'count':>8}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}{'req bytes':>12}{'resp bytes':>12}"]
        for api, s in d["apis"].items():
            lat = s["latency_ms"] or {}
            out.append(f"{api:<28}{s['count']:>8}{lat.get('p50', '-'):>10}{lat.get('p99', '-'):>10}"
                       f"{lat.get('max', '-'):>10}{s['request_bytes']:>12}{s['response_bytes']:>12}")
        if d["errors"]:
            out += ["", "errors:"] + [f"  {e['api']} {e['error']}: {e['count']}" for e in d["errors"]]
        if d["clients"]:
            out += ["", "clients:"]
            for client, apis in d["clients"].items():
                out.append(f"  {client}: " + ", ".join(f"{a} v{'/'.join(map(str, v))}" for a, v in apis.items()))
        out.append(f"\nexchanges with warnings: {d['exchanges_with_warnings']}")
        return out


def _progress(source: str):
    """A rich progress bar on stderr for big files on a terminal; else None."""
    if source == "-" or not sys.stderr.isatty():
        return None, None
    try:
        size = os.path.getsize(source)
    except OSError:
        return None, None
    if size < PROGRESS_MIN_BYTES:
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn
    bar = Progress(TextColumn("decoding"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("decode", total=size)
    return bar, lambda n: bar.advance(task, n)


@contextmanager
def _short_lived():
    """The collector tuned for a decode loop: exchanges are short-lived and
    hardly ever cyclic, so full collections walking start-up's objects (the
    schemas, ~25k of them, frozen here) and a young-generation pass every
    700 allocations cost ~6 % of a decode and find almost nothing. And the
    heap a chunk's frames freed kept for the next chunk's, not faulted in
    again (kproto.memory: ~8 % of a decode)."""
    threshold = gc.get_threshold()
    keep_freed_memory()                     # glibc only; for the process
    gc.freeze()
    gc.set_threshold(20_000, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


@click.command("decode", cls=OneLineCommand,
               epilog=exit_status_help("the capture cannot be read (missing, unreadable)",
                                       corrupt="CAPTURE is not a pcap or pcapng capture (in one, "
                                       "anything that does not decode is a warning)"))
@click.argument("capture", metavar="CAPTURE")
@click.option("-p", "--port", "ports", type=int, multiple=True,
              help="Kafka port (repeatable). Default 9092, plus every port brokers announce in the capture.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per exchange (full bodies).")
@click.option("-v", "--verbose", is_flag=True, help="The summary line, then request and response trees.")
@click.option("--api", "apis", multiple=True, help="Only this API (name or key; repeatable).")
@click.option("--topic", "topics", multiple=True, help="Only exchanges naming this topic (repeatable).")
@click.option("--client-id", "client_ids", multiple=True, help="Only this client id (repeatable).")
@click.option("--errors-only", is_flag=True, help="Only exchanges whose response carries an error code.")
@click.option("--stats", is_flag=True, help="Counts, latency p50/p99 (nearest-rank percentiles) and max, bytes, errors, client versions.")
def decode(capture: str, ports: tuple[int, ...], as_json: bool, verbose: bool, apis, topics, client_ids,
           errors_only: bool, stats: bool) -> None:
    """Decode the Kafka traffic in CAPTURE (pcap or pcapng, plain or gzip; - for stdin).

    \b
    Examples:
      kproto decode kafka.pcap
      kproto decode -p 19092 --api Produce --topic orders -v kafka.pcapng.gz
      tcpdump -i any -U -w - port 9092 | kproto decode -
      kproto decode --json kafka.pcap | jq 'select(.api_name=="Fetch") | .latency_ms'
    """
    known = {spec.name.lower() for spec in API_KEYS.values()} | {str(k) for k in API_KEYS} if apis else ()
    for a in apis:
        if a.lower() not in known:
            raise UsageProblem(f"kproto decode: --api: no API named {a!r} in kproto's registry")
    keep = _Filter(apis, topics, client_ids, errors_only)
    bar, advance = _progress(capture)
    cap = Capture(capture, ports or (9092,), progress=advance, binary="json" if as_json and not stats else "bytes")
    summary = _Stats() if stats else None
    out = sys.stdout
    out.flush()
    binary = getattr(out, "buffer", None)
    shown = 0
    try:
        if bar is not None:
            bar.start()
        try:
            with _short_lived():
                for batch in cap.batches():        # one write per chunk read, not per exchange
                    text: list[str] = []
                    lines: list[bytes] = []
                    for ex in batch:
                        if keep.active and not keep(ex):
                            continue
                        shown += 1
                        if summary is not None:
                            summary.add(ex)
                        elif as_json:
                            lines.append(dumps_bytes(ex.to_json()))
                        else:
                            text += [line(ex)] + [f"  ! {w}" for w in ex.warnings]
                            if verbose:
                                for side in ("request", "response"):
                                    body = getattr(ex, side)
                                    text += [f"  {side}:"] + (tree(body, "    ") if body is not None else ["    null"])
                    if text:
                        out.write("\n".join(text) + "\n")
                    if lines:                      # JSON is ASCII: bytes straight to the binary stream
                        lines.append(b"")          # the last newline, without another copy of it all
                        data = b"\n".join(lines)
                        if binary is None:
                            out.write(data.decode("ascii"))
                        else:
                            binary.write(data)
        finally:
            if bar is not None:
                bar.stop()
        if summary is not None:
            out.write((json.dumps(summary.as_dict()) if as_json else "\n".join(summary.lines())) + "\n")
        out.flush()
    except BrokenPipeError:           # `| head`: the reader is gone, which is fine
        sys.stderr.close()
        return
    dec = cap.decoder
    for note in dec.notes:
        click.echo(f"kproto decode: {cap.name}: {note}", err=True)
    if dec.kafka_connections == 0 and dec.tls_connections == 0:
        click.echo(f"kproto decode: {cap.name}: no Kafka traffic found ({dec.packets} packets, "
                   f"{dec.connections} TCP connections; Kafka ports looked for: "
                   f"{','.join(map(str, sorted(dec.ports)))})", err=True)
