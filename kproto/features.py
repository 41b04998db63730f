"""Kafka 4.4's feature flags (KIP-584, KIP-778, KIP-1022): the one place kproto keeps them.

Facts, measured against Kafka 4.4.0's broker (ApiVersions v4) and its
org.apache.kafka.server.common.{MetadataVersion, Features} enums:

* ``SUPPORTED``: the (min, max) levels the broker advertises per feature
  (``SupportedFeatures``); metadata.version runs 7 (3.3-IV3) to 33 (4.4-IV2),
  the latest production level (4.5-IV0 is unstable and not advertised).
* ``FRESH_CLUSTER``: what a freshly formatted cluster finalizes — what
  ``kafka-storage.sh format`` with static ``controller.quorum.voters`` leaves:
  metadata.version 33 and every production feature at its default for it,
  except kraft.version, which static voters keep at 0.
* a finalized level of 0 means "not finalized": Kafka lists only features
  above 0 in ApiVersions' ``FinalizedFeatures`` (metadata.version is never 0).

``FinalizedFeatures`` keeps the levels and their epoch in the data directory's
``features.json`` (``{"version": 0, "epoch": N, "features": {name: level}}``):
Kafka keeps them as FeatureLevelRecords in ``__cluster_metadata`` and its epoch is
that log's offset; kproto has no metadata log (as ``topic-configs.json`` stands in
for topic configs), so its epoch counts the applied updates instead.

``validate_update`` is FeatureControlManager.updateFeature's checks in its order,
with Kafka 4.4's texts (measured through UpdateFeatures v2).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from pathlib import Path

from kproto.log.checkpoint import write_atomically

__all__ = ["METADATA_VERSION", "KRAFT_VERSION", "TRANSACTION_VERSION", "SUPPORTED", "FRESH_CLUSTER", "KRAFT_3X_FEATURES",
           "METADATA_VERSIONS", "UpgradeType", "FinalizedFeatures", "metadata_version_name",
           "metadata_version_level", "release_defaults", "validate_update", "UPDATE_FAILED"]

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

# MetadataVersion's enum in Kafka 4.4, feature level -> version string (IBP_3_3_IV3 = 7 ...).
METADATA_VERSIONS: dict[int, str] = dict(enumerate((
    "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
    "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1",
    "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2", "4.5-IV0"), start=7))
LATEST_PRODUCTION = 33          # MetadataVersion.LATEST_PRODUCTION: 4.4-IV2
# Kafka 4.4 supports transaction.version 0-2 and finalizes 2 in a fresh cluster. Level 2 is
# KIP-890 part 2 (an epoch bump per transaction, partitions added by Produce v12+ and
# TxnOffsetCommit v5+, EndTxn v5): kproto.server.txn_coordinator.
TRANSACTION_VERSION_MAX = 2

SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (7, LATEST_PRODUCTION),
    KRAFT_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, TRANSACTION_VERSION_MAX),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 2),
    STREAMS_VERSION: (0, 1),
}

# Features.PRODUCTION_FEATURES in declaration order (`kafka-features.sh version-mapping` prints them
# so): per level, the first metadata.version it is the default for (FeatureVersion.bootstrapMetadataVersion,
# measured with version-mapping for each 4.4 metadata.version), and what a level depends on
# (FeatureVersion.dependencies, as `feature-dependencies` prints them).
_DEFAULT_FROM: dict[str, dict[int, int]] = {
    KRAFT_VERSION: {1: 21},                 # 3.9-IV0
    TRANSACTION_VERSION: {2: 24},           # 4.0-IV2
    GROUP_VERSION: {1: 22},                 # 4.0-IV0
    ELR_VERSION: {1: 26},                   # 4.1-IV0
    SHARE_VERSION: {1: 28, 2: 31},          # 4.2-IV0, 4.4-IV0
    STREAMS_VERSION: {1: 29},               # 4.2-IV1
}
DEPENDENCIES: dict[tuple[str, int], dict[str, int]] = {
    (ELR_VERSION, 1): {METADATA_VERSION: 23},     # 4.0-IV1
}


def release_defaults(metadata_level: int) -> dict[str, int]:
    """Features.defaultValue(metadataVersion) for every production feature, in declaration order."""
    return {name: max((lv for lv, mv in levels.items() if mv <= metadata_level), default=0)
            for name, levels in _DEFAULT_FROM.items()}


FRESH_CLUSTER: dict[str, int] = {METADATA_VERSION: LATEST_PRODUCTION,
                                 **release_defaults(LATEST_PRODUCTION), KRAFT_VERSION: 0,
                                 TRANSACTION_VERSION: TRANSACTION_VERSION_MAX}

# Kafka 3.3 .. 3.9's features, which no jar-derived table holds (kafka_versions.py has 4.0 on):
# release -> (SupportedFeatures, what a fresh cluster finalizes), measured on a freshly formatted
# KRaft node (static voters) of 3.3.2, 3.4.1, 3.5.2, 3.6.2, 3.7.2, 3.8.1 and 3.9.1 through
# tests/kafka_ref.py (ApiVersions v3; 3.9 also v4, where kraft.version 0-1 appears).
# BrokerFeatures.defaultSupportedFeatures: metadata.version from MINIMUM_KRAFT_VERSION (3.0-IV1 = 1)
# to the latest production level (KIP-778, 3.3 on); before 3.3 createDefault() was empty, so a
# 2.7 .. 3.2 broker listed no feature.
KRAFT_3X_FEATURES: dict[str, tuple[dict[str, tuple[int, int]], dict[str, int]]] = {
    release: ({METADATA_VERSION: (1, level), **extra}, {METADATA_VERSION: level})
    for release, level, extra in (
        ("3.3", 7, {}), ("3.4", 8, {}), ("3.5", 11, {}), ("3.6", 14, {}), ("3.7", 19, {}), ("3.8", 20, {}),
        ("3.9", 21, {KRAFT_VERSION: (0, 1)}))
}

# UpdateFeatures v2's top-level message when one update fails (the whole request fails).
UPDATE_FAILED = "The update failed for all features since the following feature had an error: "


class UpgradeType(enum.IntEnum):
    """FeatureUpdate.UpgradeType (UpdateFeatures v1+ ``upgrade_type``)."""
    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def of(cls, code: int) -> UpgradeType:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


def metadata_version_name(level: int) -> str:
    """FeatureCommand.levelToString for metadata.version: "4.4-IV2", or "UNKNOWN <level>"."""
    return METADATA_VERSIONS.get(level, f"UNKNOWN {level}")


def metadata_version_level(version: str) -> int | None:
    """MetadataVersion.fromVersionString: "3.9-IV0" exactly, "3.9" the last IV of that release
    (as "4.0" -> 4.0-IV3 = 25); None when Kafka 4.4 knows no such version."""
    for level, name in METADATA_VERSIONS.items():
        if name == version:
            return level
    release = [level for level, name in METADATA_VERSIONS.items() if name.split("-")[0] == version]
    return max(release) if release else None


def validate_update(name: str, level: int, upgrade_type: UpgradeType, current: Mapping[str, int],
                    proposed: Mapping[str, int], node_id: int,
                    supported_features: Mapping[str, tuple[int, int]] = SUPPORTED) -> str | None:
    """FeatureControlManager.updateFeature's checks, first failure wins: its INVALID_UPDATE_VERSION
    message, or None when the update may be applied. ``supported_features``: what the node
    advertises (an emulated release's, kproto.server.emulation)."""
    def invalid(why: str) -> str:
        return f"Invalid update version {level} for feature {name}. {why}"

    if upgrade_type is UpgradeType.UNKNOWN:
        return invalid("The controller does not support the given upgrade type.")
    if level < 0:
        return invalid("A feature version cannot be less than 0.")
    supported = supported_features.get(name)        # QuorumFeatures.reasonNotLocallySupported
    if supported is None and level != 0:
        return invalid(f"Local controller {node_id} does not support this feature.")
    if supported is not None and not supported[0] <= level <= supported[1]:
        return invalid(f"Local controller {node_id} only supports versions {supported[0]}-{supported[1]}")
    now = current.get(name, 0)
    if level < now and upgrade_type is UpgradeType.UPGRADE:
        return invalid("Can't downgrade the version of this feature without setting the upgrade type "
                       "to either safe or unsafe downgrade.")
    if level > now and upgrade_type is not UpgradeType.UPGRADE:
        return invalid("Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        if level < now:     # Kafka 4.4 refuses every metadata.version downgrade that may lose metadata
            why = ("Unsafe metadata downgrade is not supported in this version."
                   if upgrade_type is UpgradeType.UNSAFE_DOWNGRADE else
                   "Refusing to perform the requested downgrade because it might delete metadata information.")
            return f"Unsupported metadata.version downgrade from {now} to {level}. {why}"
        return None
    if supported is None:                           # Features.featureFromName
        return invalid(f"Feature {name} not found.")
    for dep, dep_level in DEPENDENCIES.get((name, level), {}).items():     # Features.validateVersion
        if proposed.get(dep, 0) < dep_level:
            return invalid(f"{name} could not be set to {level} because it depends on {dep} level {dep_level}")
    return None


class FinalizedFeatures:
    """The cluster's finalized levels and their epoch, kept in ``<data_dir>/features.json``."""

    FILE = "features.json"

    def __init__(self, data_dir: Path, fresh: Mapping[str, int] = FRESH_CLUSTER) -> None:
        """``fresh``: the levels a new data directory starts at (an emulated release's, see
        kproto.server.emulation.fresh_features)."""
        self.path = Path(data_dir) / self.FILE
        try:
            stored = json.loads(self.path.read_text())
            self.epoch = int(stored["epoch"])
            self.levels = {str(k): int(v) for k, v in stored["features"].items()}
        except FileNotFoundError:
            self.epoch, self.levels = 1, dict(fresh)
            self._write()

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)

    def update(self, updates: Mapping[str, int], upgrade_types: Mapping[str, UpgradeType], *,
               validate_only: bool, node_id: int,
               supported: Mapping[str, tuple[int, int]] = SUPPORTED) -> str | None:
        """FeatureControlManager.updateFeatures: all or nothing; the first failing update's
        message (without UPDATE_FAILED's prefix), else None (applied unless ``validate_only``)."""
        proposed = {**self.levels, **updates}
        for name in sorted(updates):
            error = validate_update(name, updates[name], upgrade_types.get(name, UpgradeType.UPGRADE),
                                    self.levels, proposed, node_id, supported)
            if error is not None:
                return error
        if not validate_only and updates:
            self.levels.update(updates)
            self.epoch += 1
            self._write()
        return None

    def _write(self) -> None:
        write_atomically(self.path, json.dumps({"version": 0, "epoch": self.epoch, "features": self.levels},
                                               sort_keys=True))
