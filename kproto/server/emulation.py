"""``kproto serve --kafka-version X.Y``: answer ApiVersions as Apache Kafka X.Y's broker did.

The advertised range of each API is the intersection of what that release's broker
advertised (server/kafka_versions.py, generated from Kafka's own definitions) and what
kproto serves; APIs the release did not have are not advertised (and a request for one
closes the connection, as a broker does for an API its listener does not serve), a
version outside the range is answered UNSUPPORTED_VERSION. So a client negotiates
exactly what it would have with that release: no KIP-848 groups before 4.0, no
DescribeTopicPartitions before 3.8, no Fetch v0-3 from 4.0 (KIP-896).

Without ``--kafka-version`` the broker answers as the newest release it has a table for
(``CURRENT``, Kafka 4.4): each API from that release's oldest version (KIP-896 removed
the older ones; ``current``), up to the newest kproto serves. The versions below stay
decodable and reachable by naming an older release.
"""

from __future__ import annotations

from typing import Mapping

from kproto.errors import UsageError
from kproto.server.kafka_versions import RELEASES

__all__ = ["CURRENT", "RELEASES", "release", "advertised", "current"]

CURRENT = "4.4"     # the release kproto answers as unless told another


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


def current(served: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """API key -> (oldest, newest) kproto advertises by default: what it serves, from
    ``CURRENT``'s oldest version where that release has the API (KIP-896's removals)."""
    table = RELEASES[CURRENT]
    return {key: (max(lo, table[key][0]) if key in table else lo, hi) for key, (lo, hi) in served.items()}
