"""A node's storage as ``kafka-storage.sh`` (kafka.tools.StorageTool, Kafka 4.4) formats it.

* ``format_storage`` is Formatter.run: each directory of ``log.dirs`` (and ``metadata.log.dir``)
  gets ``meta.properties`` (node id, cluster id, a fresh directory id); the metadata log directory
  of a controller also gets the bootstrap snapshot
  ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``: the FeatureLevelRecords of
  the release version (level 0 left out, metadata.version first, then by name) and the SCRAM
  credentials of ``--add-scram``, framed as every snapshot is (kproto.server.cluster.snapshot).
  A broker-only node gets no snapshot: it learns metadata from the controllers, as Kafka's.
* ``storage_info`` is StorageTool's ``info``.
* A kproto broker starting on such a directory takes its fresh cluster's features and SCRAM
  credentials from the bootstrap snapshot (``bootstrap_features`` / ``bootstrap_scram``), as
  Kafka's controller applies BootstrapMetadata once, on its first start.

Texts are Kafka 4.4's, measured with its StorageTool (tests/tools/test_storage.py diffs them).
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kproto import features as F
from kproto.common import CLUSTER_METADATA_TOPIC_NAME, now_ms
from kproto.errors import KprotoError
from kproto.jvm import java_hashmap_order, java_string_hash
from kproto.log import checkpoint as ckpt
from kproto.properties import parse_properties
from kproto.security.scram import BY_TYPE, MECHANISMS, ScramCredential, ScramMechanism, normalize

__all__ = ["StorageError", "BOOTSTRAP_SNAPSHOT", "parse_feature", "parse_scram", "effective_features",
           "bootstrap_records", "format_storage", "storage_info", "bootstrap_features", "bootstrap_scram"]

#: Where the format command leaves the bootstrap metadata (Kafka 4.4: a snapshot at offset 0, epoch 0).
#: The cluster modules load lazily: every broker start looks for this file.
BOOTSTRAP_SNAPSHOT = Path(f"{CLUSTER_METADATA_TOPIC_NAME}-0") / "00000000000000000000-0000000000.checkpoint"
FEATURE_LEVEL, USER_SCRAM_CREDENTIAL = 12, 11       # MetadataRecordType ids (kproto.server.cluster.image)
DEFAULT_LOG_DIRS = "/tmp/kafka-logs"          # ServerLogConfigs.LOG_DIR_DEFAULT
SCRAM_SINCE = 11                               # MetadataVersion.IBP_3_5_IV2: SCRAM in KRaft


class StorageError(KprotoError):
    """A refusal of the storage tool: Kafka's message, one line."""


# -- the flags ---------------------------------------------------------------------------------

def parse_feature(text: str) -> tuple[str, int]:
    """StorageTool.parseNameAndLevel: ``name=level``."""
    name, eq, level = text.partition("=")
    if not eq:
        raise StorageError(f"Can't parse feature=level string {text}: equals sign not found.")
    try:
        value = int(level.strip())
        if not -32768 <= value <= 32767:
            raise ValueError
    except ValueError:
        raise StorageError(f"Can't parse feature=level string {text}: unable to parse {level.strip()} "
                           f"as a short.") from None
    return name.strip(), value


def _secure_random_salt() -> bytes:
    """ScramFormatter.secureRandomBytes: a 130-bit random number in base 36, as bytes."""
    n, digits = secrets.randbits(130), "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, d = divmod(n, 36)
        out = digits[d] + out
    return (out or "0").encode()


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise StorageError(f"Failed to parse {what} value {text} as base64.") from None


def parse_scram(text: str) -> tuple[str, ScramMechanism, ScramCredential]:
    """ScramParser.parse of one ``--add-scram`` argument:
    ``SCRAM-SHA-256=[name=alice,password=alice-secret]`` or
    ``SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="YCE="]``."""
    mech_name, eq, rest = text.partition("=")
    if not eq:
        raise StorageError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = MECHANISMS.get(mech_name)
    if mechanism is None:
        raise StorageError(f"The add-scram mechanism {mech_name} is not supported.")
    if not (rest.startswith("[") and rest.endswith("]")):
        raise StorageError(f"Expected configuration string to start with [ and end with ] in SCRAM argument "
                           f"'{text}'")
    fields: dict[str, str] = {}
    for item in filter(None, rest[1:-1].split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise StorageError(f"Failed to find equals sign in SCRAM argument '{item}'")
        fields[key] = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if "name" not in fields:
        raise StorageError("You must supply 'name' to add-scram")
    iterations = mechanism.min_iterations
    if "iterations" in fields:
        try:
            iterations = int(fields["iterations"])
        except ValueError:
            raise StorageError(f"Failed to parse iterations value {fields['iterations']}") from None
        java_name = mechanism.name.replace("-", "_")
        if iterations < mechanism.min_iterations:
            raise StorageError(f"The 'iterations' value must be >= {mechanism.min_iterations} for add-scram "
                               f"using {java_name}")
        if iterations > mechanism.max_iterations:
            raise StorageError(f"The 'iterations' value must be <= {mechanism.max_iterations} for add-scram "
                               f"using {java_name}")
    salt = _b64(fields["salt"], "salt") if "salt" in fields else _secure_random_salt()
    if "saltedpassword" in fields:
        if "password" in fields:
            raise StorageError("You must only supply one of 'password' or 'saltedpassword' to add-scram")
        credential = ScramCredential.from_salted_password(mechanism, _b64(fields["saltedpassword"],
                                                                          "saltedpassword"), salt, iterations)
    elif "password" in fields:
        salted = mechanism.salted_password(normalize(fields["password"]), salt, iterations)
        credential = ScramCredential.from_salted_password(mechanism, salted, salt, iterations)
    else:
        raise StorageError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    return fields["name"], mechanism, credential


def _unknown_release(version: str, *, with_unstable: bool) -> StorageError:
    known = [name for level, name in F.METADATA_VERSIONS.items() if with_unstable or level <= F.LATEST_PRODUCTION]
    return StorageError(f"Unknown metadata.version '{version}'. Supported metadata.version are: {', '.join(known)}")


def release_level(version: str, *, with_unstable: bool = False) -> int:
    """MetadataVersion.fromVersionString as the format command takes it (production levels only)."""
    level = F.metadata_version_level(version)
    if level is None or (not with_unstable and level > F.LATEST_PRODUCTION):
        raise _unknown_release(version, with_unstable=with_unstable)
    return level


def effective_features(release_version: str | None, features: Sequence[tuple[str, int]],
                       dynamic_quorum: bool = False) -> dict[str, int]:
    """Formatter.calculateEffectiveReleaseVersion and calculateEffectiveFeatureLevels: the
    release's defaults under the ``--feature`` settings, each checked."""
    levels = dict(features)
    if F.METADATA_VERSION in levels:
        if release_version is not None:
            raise StorageError(f"Use --release-version instead of --feature {F.METADATA_VERSION}=X to avoid "
                               f"ambiguity.")
        mv = levels[F.METADATA_VERSION]
        if mv not in F.METADATA_VERSIONS or mv > F.LATEST_PRODUCTION:
            raise StorageError(f"No MetadataVersion with feature level {mv}. Valid feature levels are from "
                               f"{min(F.METADATA_VERSIONS)} to {F.LATEST_PRODUCTION}.")
    else:
        mv = F.LATEST_PRODUCTION if release_version is None else release_level(release_version)
    known = sorted(n for n in F.SUPPORTED if n != F.METADATA_VERSION)
    for name in levels:
        if name != F.METADATA_VERSION and name not in F.SUPPORTED:
            raise StorageError(f"Unsupported feature: {name}. Supported features are: {', '.join(known)}")
    out = {F.METADATA_VERSION: mv, **{n: lv for n, lv in levels.items() if n != F.METADATA_VERSION}}
    kraft = levels.get(F.KRAFT_VERSION)
    if kraft is not None and (kraft == 0) == dynamic_quorum:
        raise StorageError(
            f"Cannot set kraft.version to {kraft} unless controller.quorum.voters is empty and one of the flags "
            "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers "
            "support, try using one of --standalone, --initial-controllers, or --no-initial-controllers and "
            "removing controller.quorum.voters." if kraft else
            f"Cannot set kraft.version to {kraft} if controller.quorum.voters is empty and one of the flags "
            "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers "
            "support, try removing the --feature flag for kraft.version.")
    out[F.KRAFT_VERSION] = kraft if kraft is not None else int(dynamic_quorum)
    for name, default in F.release_defaults(mv).items():
        out.setdefault(name, default)
    for name, level in sorted(out.items()):                 # Feature.fromFeatureLevel, validateVersion
        if name == F.METADATA_VERSION:
            continue
        lo, hi = F.SUPPORTED[name]
        if not lo <= level <= hi:
            raise StorageError(f"No feature:{name} with feature level {level}")
        for dep, dep_level in F.DEPENDENCIES.get((name, level), {}).items():
            if out.get(dep, 0) < dep_level:
                raise StorageError(f"{name} could not be set to {level} because it depends on {dep} level "
                                   f"{dep_level}")
    return out


def bootstrap_records(levels: Mapping[str, int],
                      scram: Sequence[tuple[str, ScramMechanism, ScramCredential]] = ()) -> list[tuple[int, dict]]:
    """BootstrapMetadata.fromVersions: metadata.version, then every other feature above 0 by name
    but kraft.version (a KRaftVersion control record when 1); then the SCRAM credentials
    (ScramParser's records)."""
    names = [F.METADATA_VERSION] + sorted(n for n, lv in levels.items()
                                          if n not in (F.METADATA_VERSION, F.KRAFT_VERSION) and lv > 0)
    out = [(FEATURE_LEVEL, {"name": n, "feature_level": levels[n]}) for n in names]
    out += [(USER_SCRAM_CREDENTIAL, {"name": user, "mechanism": m.type, "salt": c.salt, "stored_key": c.stored_key,
                                       "server_key": c.server_key, "iterations": c.iterations})
            for user, m, c in scram]
    return out


def _java_bytes(b: bytes) -> str:
    return "[" + ", ".join(str(x - 256 if x > 127 else x) for x in b) + "]"


def bootstrap_text(records: Sequence[tuple[int, dict]]) -> str:
    """BootstrapMetadata.toString, as the format command prints it."""
    parts, mv = [], 0
    for kind, r in records:
        if kind == FEATURE_LEVEL:
            text = f"FeatureLevelRecord(name='{r['name']}', featureLevel={r['feature_level']})"
            mv = r["feature_level"] if r["name"] == F.METADATA_VERSION else mv
        else:
            text = (f"UserScramCredentialRecord(name='{r['name']}', mechanism={r['mechanism']}, "
                    f"salt={_java_bytes(r['salt'])}, storedKey={_java_bytes(r['stored_key'])}, "
                    f"serverKey={_java_bytes(r['server_key'])}, iterations={r['iterations']})")
        parts.append(f"ApiMessageAndVersion({text} at version 0)")
    return f"BootstrapMetadata(records=[{', '.join(parts)}], metadataVersionLevel={mv}, source=format command)"


# -- the directories -----------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeStorage:
    """What the format and info commands read from a node's config."""

    node_id: int
    roles: frozenset[str]
    log_dirs: tuple[str, ...]
    metadata_log_dir: str

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> NodeStorage:
        for required in ("node.id", "process.roles"):
            if required not in config:
                raise StorageError(f'Missing required configuration "{required}" which has no default value.')
        try:
            node_id = int(config["node.id"])
        except ValueError:
            raise StorageError(f"Invalid value {config['node.id']} for configuration node.id: Not a number of "
                               f"type INT") from None
        roles = frozenset(r.strip() for r in config["process.roles"].split(",") if r.strip())
        if not roles <= {"broker", "controller"}:
            bad = sorted(roles - {"broker", "controller"})[0]
            raise StorageError(f"Unknown process role '{bad}' (only 'broker' and 'controller' are allowed roles)")
        voters = {v.split("@", 1)[0].strip() for v in config.get("controller.quorum.voters", "").split(",") if v}
        if roles == {"broker"} and str(node_id) in voters:
            raise StorageError(f"requirement failed: If process.roles contains just the 'broker' role, the node id "
                               f"{node_id} must not be included in the set of voters controller.quorum.voters="
                               f"Set({', '.join(sorted(voters))})")
        if "controller" in roles and str(node_id) not in voters and voters:
            raise StorageError(f"requirement failed: If process.roles contains the 'controller' role, the node id "
                               f"{node_id} must be included in the set of voters controller.quorum.voters="
                               f"Set({', '.join(sorted(voters))})")
        dirs = tuple(d.strip() for d in (config.get("log.dirs") or config.get("log.dir")
                                         or DEFAULT_LOG_DIRS).split(",") if d.strip())
        return cls(node_id, roles, dirs, config.get("metadata.log.dir") or dirs[0])

    @property
    def directories(self) -> list[str]:
        return sorted({*self.log_dirs, self.metadata_log_dir})


def read_config(path: str) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text(), path, strict=False)
    except OSError as e:
        raise StorageError(f"{path} ({e.strerror})") from None


def format_storage(config: Mapping[str, str], cluster_id: str, *, ignore_formatted: bool = False,
                   release_version: str | None = None, features: Sequence[tuple[str, int]] = (),
                   scram: Sequence[str] = (), voters: Mapping[int, Any] | None = None,
                   no_initial_controllers: bool = False, now: int | None = None) -> list[str]:
    """Formatter.run: format the node's empty directories; -> the lines the tool prints.

    ``voters`` (raft.Voter by id: ``--standalone`` / ``--initial-controllers``, KIP-853) or
    ``no_initial_controllers`` make the quorum dynamic: kraft.version 1, a KRaftVersion control
    record in the bootstrap snapshot's header batch and, with voters, the Voters record; a voter's
    metadata directory takes the voter's directory id (Formatter.writeDynamicQuorumSnapshot)."""
    node = NodeStorage.from_config(config)
    dynamic_flag = voters is not None or no_initial_controllers
    if "controller" in node.roles and not config.get("controller.quorum.voters") and not dynamic_flag:
        raise StorageError("Because controller.quorum.voters is not set on this controller, you must specify one "
                           "of the following: --standalone, --initial-controllers, or --no-initial-controllers.")
    # --no-initial-controllers beside static voters leaves the quorum static, as Kafka's
    dynamic = voters is not None or (no_initial_controllers and not config.get("controller.quorum.voters"))
    levels = effective_features(release_version, features, dynamic_quorum=dynamic)
    credentials = [parse_scram(a) for a in scram]
    if credentials and levels[F.METADATA_VERSION] < SCRAM_SINCE:
        raise StorageError(f"SCRAM is only supported in metadata.version {F.metadata_version_name(SCRAM_SINCE)} "
                           f"or later.")
    records = bootstrap_records(levels, credentials)
    found: dict[str, dict[str, str]] = {}
    for d in node.directories:                      # MetaPropertiesEnsemble.verify
        props = ckpt.read_meta_properties(Path(d))
        if props is None:
            continue
        if props.get("cluster.id") != cluster_id:
            raise StorageError(f"Invalid cluster.id in: {Path(d) / ckpt.META_PROPERTIES}. Expected {cluster_id}, "
                               f"but read {props.get('cluster.id')}")
        if props.get("node.id") != str(node.node_id):
            raise StorageError(f"Stored node id {props.get('node.id')} doesn't match previous node id "
                               f"{node.node_id} in {Path(d) / ckpt.META_PROPERTIES}. If you moved your data, make "
                               f"sure your configured node id matches. If you intend to create a new node, you "
                               f"should remove all data in your data directories.")
        found[d] = props
    if found and not ignore_formatted:
        first = java_hashmap_order(sorted(found), java_string_hash, copy=True)[0]    # MetaPropertiesEnsemble.Copier's map
        raise StorageError(f"Log directory {first} is already formatted. Use --ignore-formatted to ignore this "
                           f"directory and format the others.")
    empty = [d for d in node.directories if d not in found]
    if not empty:
        return ["All of the log directories are already formatted."]
    lines = [f"Bootstrap metadata: {bootstrap_text(records)}"]
    mv_name = F.metadata_version_name(levels[F.METADATA_VERSION])
    stamp = now_ms() if now is None else now
    own = None if voters is None else voters.get(node.node_id)
    for d in java_hashmap_order(empty, java_string_hash):    # a HashMap of directories
        kind = "data directory"                     # Formatter.DirectoryType
        if d == node.metadata_log_dir:
            kind = ("metadata directory" if voters is None else
                    "dynamic metadata voter directory" if own is not None else "dynamic metadata directory")
        lines.append(f"Formatting {kind} {d} with metadata.version {mv_name}.")
        path = Path(d)
        path.mkdir(parents=True, exist_ok=True)
        if d == node.metadata_log_dir and "controller" in node.roles:
            from kproto.server.cluster.quorum import voters_record
            from kproto.server.cluster.snapshot import KRAFT_VERSION, KRAFT_VOTERS, SnapshotId, records_snapshot_bytes
            control = [(KRAFT_VERSION, {"k_raft_version": levels[F.KRAFT_VERSION]})] if levels[F.KRAFT_VERSION] else []
            if voters is not None:
                control.append((KRAFT_VOTERS, voters_record(dict(voters))))
            snapshot = path / BOOTSTRAP_SNAPSHOT
            snapshot.parent.mkdir(exist_ok=True)
            ckpt.write_atomically(snapshot, records_snapshot_bytes(records, SnapshotId(0, 0), stamp, control))
            os.chmod(snapshot, 0o400)               # FileRawSnapshotWriter.freeze leaves it read-only
        directory_id = None
        if own is not None and d == node.metadata_log_dir:
            from kproto.log.manager import format_topic_id
            directory_id = format_topic_id(own.directory_id)
        ckpt.write_meta_properties(path, cluster_id=cluster_id, node_id=node.node_id, directory_id=directory_id)
    return lines


def storage_info(config: Mapping[str, str]) -> tuple[list[str], bool]:
    """StorageTool.infoCommand: the formatted directories, their meta.properties and the problems
    found; -> (lines, no problem)."""
    node = NodeStorage.from_config(config)
    found, problems, metas = [], [], []
    for d in node.directories:
        path = Path(d)
        if not path.is_dir():
            problems.append(f"{d} does not exist" if not path.exists() else f"{d} is not a directory")
            continue
        props = ckpt.read_meta_properties(path)
        if props is None:
            problems.append(f"{d} is not formatted.")
            continue
        found.append(d)
        metas.append(props)
    lines: list[str] = []
    if found:
        lines += ["Found log director" + ("y:" if len(found) == 1 else "ies:")] + [f"  {d}" for d in found] + [""]
        shown = "{" + ", ".join(f"{k}={v}" for k, v in sorted(metas[0].items())) + "}"
        lines += [f"Found metadata: {shown}", ""]
    if problems:
        lines += ["Found problem" + (":" if len(problems) == 1 else "s:")] + [f"  {p}" for p in problems] + [""]
    return lines, not problems


# -- a kproto broker on a formatted directory -----------------------------------------------------------

def _bootstrap_image(data_dir: Path) -> list[tuple[int, object]]:
    path = Path(data_dir) / BOOTSTRAP_SNAPSHOT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    from kproto.server.cluster import image as I
    from kproto.server.cluster.snapshot import SnapshotId, read_snapshot
    try:
        read_snapshot(data, SnapshotId(0, 0))        # header and footer there, CRCs right
    except (KprotoError, ValueError) as e:
        raise StorageError(f"{path}: {e}") from None
    return [(kind, r) for _, kind, r in I.iter_records(data)]


def bootstrap_features(data_dir: Path) -> dict[str, int] | None:
    """The finalized levels the format command chose (metadata.version and the features above 0;
    kraft.version 0 unless given), or None without a bootstrap snapshot."""
    records = _bootstrap_image(data_dir)
    if not records:
        return None
    levels = {r.name: r.feature_level for kind, r in records if kind == FEATURE_LEVEL}
    return {F.KRAFT_VERSION: 0, **{n: 0 for n in F.SUPPORTED}, **levels}


def bootstrap_scram(data_dir: Path) -> list[tuple[str, ScramMechanism, ScramCredential]]:
    """The ``--add-scram`` credentials of the bootstrap snapshot."""
    return [(r.name, BY_TYPE[r.mechanism], ScramCredential(bytes(r.salt), bytes(r.stored_key), bytes(r.server_key),
                                                           r.iterations))
            for kind, r in _bootstrap_image(data_dir) if kind == USER_SCRAM_CREDENTIAL]

