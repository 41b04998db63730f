"""``kproto serve --kafka-version X.Y``: answer ApiVersions as Apache Kafka X.Y's broker did.

The advertised range of each API is the intersection of what that release's broker
advertised (server/kafka_versions.py, generated from Kafka's own definitions) and what
kproto serves; APIs the release did not have are not advertised (and a request for one
closes the connection, as a broker does for an API its listener does not serve), a
version outside the range is answered UNSUPPORTED_VERSION. So a client negotiates
exactly what it would have with that release: no KIP-848 groups before 4.0, no
DescribeTopicPartitions before 3.8, no Fetch v0-3 from 4.0 (KIP-896).

Features (ApiVersions v3+, KIP-584): an emulated release advertises the SupportedFeatures its
broker did (4.x: kafka_versions.SUPPORTED_FEATURES, from its server-common jar, no share.version
before 4.1, no streams.version before 4.2; 3.3 .. 3.9: kproto.features.KRAFT_3X_FEATURES,
measured on KRaft nodes: metadata.version, and kraft.version from 3.9), within kproto's own
(so metadata.version from kproto's oldest, 7, not 1; transaction.version up to 1), and the
finalized levels of those only, each at most that release's newest; a fresh data directory
starts at what a freshly formatted cluster of the release finalized. 2.1 .. 3.2 write no
feature fields, as their brokers had none to list (KIP-584's fields came in 2.7, the first
feature, metadata.version, in 3.3).

Without ``--kafka-version`` the broker answers as the newest release it has a table for
(``CURRENT``, Kafka 4.4): each API from that release's oldest version (KIP-896 removed
the older ones; ``current``), up to the newest kproto serves. The versions below stay
decodable and reachable by naming an older release.
"""

from __future__ import annotations

from typing import Mapping

from kproto.errors import UsageError
from kproto.features import KRAFT_3X_FEATURES
from kproto.server.kafka_versions import FRESH_FEATURES, RELEASES, SUPPORTED_FEATURES

__all__ = ["CURRENT", "RELEASES", "release", "advertised", "current", "supported_features",
           "finalized_features", "fresh_features"]

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


def supported_features(name: str | None, own: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]] | None:
    """Feature -> (min, max) advertised: kproto's own (``own``) without emulation, else those both
    release ``name`` and kproto support; None for a release without feature facts (no fields)."""
    if name is None:
        return dict(own)
    facts = _features_of(name)
    if facts is None:
        return None
    out = {}
    for feature, (lo, hi) in facts[0].items():
        if feature in own and max(lo, own[feature][0]) <= min(hi, own[feature][1]):
            out[feature] = (max(lo, own[feature][0]), min(hi, own[feature][1]))
    return out


def finalized_features(supported: Mapping[str, tuple[int, int]], levels: Mapping[str, int]) -> dict[str, int]:
    """The finalized levels above 0 of the ``supported`` features, each at most its newest."""
    out = {}
    for feature, level in levels.items():
        if feature in supported and min(level, supported[feature][1]) > 0:
            out[feature] = min(level, supported[feature][1])
    return out


def fresh_features(name: str, own: Mapping[str, tuple[int, int]]) -> dict[str, int] | None:
    """What a freshly formatted cluster of release ``name`` finalized, within kproto's support
    (``own``); None for a release without feature facts."""
    supported = supported_features(name, own)
    return None if supported is None else finalized_features(supported, _features_of(name)[1])


def _features_of(name: str) -> tuple[Mapping[str, tuple[int, int]], Mapping[str, int]] | None:
    """Release ``name``'s (SupportedFeatures, fresh cluster's finalized levels), or None (2.1 .. 3.2)."""
    if name in SUPPORTED_FEATURES:
        return SUPPORTED_FEATURES[name], FRESH_FEATURES[name]
    return KRAFT_3X_FEATURES.get(name)
