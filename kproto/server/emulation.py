"""``kproto serve --kafka-version X.Y``: answer ApiVersions as Apache Kafka X.Y's broker did.

The advertised range of each API is the intersection of what that release's broker
advertised (server/kafka_versions.py, generated from Kafka's own definitions) and what
kproto serves; APIs the release did not have are not advertised (and a request for one
closes the connection, as a broker does for an API its listener does not serve), a
version outside the range is answered UNSUPPORTED_VERSION. So a client negotiates
exactly what it would have with that release: no KIP-848 groups before 4.0, no
DescribeTopicPartitions before 3.8, no Produce v0-2 from 4.0 (KIP-896).
"""

from __future__ import annotations

from typing import Mapping

from kproto.errors import UsageError
from kproto.server.kafka_versions import RELEASES

__all__ = ["RELEASES", "release", "advertised"]


def release(version: str) -> str:
    """"2.8", "2.8.1" -> "2.8"; a release without a table is a usage error naming those there are."""
    parts = version.strip().split(".")
    name = ".".join(parts[:2])
    if len(parts) < 2 or not all(p.isdigit() for p in parts) or name not in RELEASES:
        raise UsageError(f"--kafka-version: no API table for Apache Kafka {version!r}; known: "
                         f"{', '.join(RELEASES)}")
    return name


def advertised(name: str, served: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """API key -> (oldest, newest) both release ``name`` and kproto (``served``) answer."""
    out = {}
    for key, (lo, hi) in RELEASES[name].items():
        if key in served:
            s_lo, s_hi = served[key]
            if max(lo, s_lo) <= min(hi, s_hi):
                out[key] = (max(lo, s_lo), min(hi, s_hi))
    return out
