"""The small files of a data directory, in Kafka's formats.

* offset checkpoints (CheckpointFile / OffsetCheckpointFile):
  ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``cleaner-offset-checkpoint``: a version line ``0``, a count line, then
  ``<topic> <partition> <offset>`` lines, LF-terminated;
* ``meta.properties`` (java.util.Properties.store, kproto.properties; KRaft version 1:
  ``node.id``, ``directory.id``, ``version``, ``cluster.id``);
* ``.kafka_cleanshutdown``: ``{"version":0,"brokerEpoch":N}`` (CleanShutdownFileHandler).

Every write goes to ``<name>.tmp``, is fsynced and renamed over the file, as
Kafka's writes do, so a crash leaves the old or the new file, never half.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path
from typing import Mapping

from kproto.errors import DecodeError
from kproto.properties import format_properties, parse_properties

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]


class CorruptCheckpointError(DecodeError):
    """A checkpoint or properties file that does not parse."""


def write_atomically(path: Path, text: str | bytes) -> None:
    """Write ``<path>.tmp``, fsync it, rename it over ``path``, fsync the directory."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode() if isinstance(text, str) else text)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# --- offset checkpoints -----------------------------------------------------------

def format_offset_checkpoint(offsets: Mapping[TopicPartition, int]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    return "\n".join(lines) + "\n"


def parse_offset_checkpoint(text: str, path: str = "") -> dict[TopicPartition, int]:
    """CheckpointFile.read, with Kafka's error messages (positions are bytes)."""
    if not text:
        return {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pos = 0

    def bad(reason: str, at: int) -> CorruptCheckpointError:
        return CorruptCheckpointError(reason, file=path, position=at)

    try:
        version = int(lines[0].strip())
    except ValueError:
        raise bad(f"Malformed line in checkpoint file [{path}]: {lines[0]}", 0) from None
    if version != CHECKPOINT_VERSION:
        raise bad(f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} in "
                  f"checkpoint file at: {path}", 0)
    pos += len(lines[0]) + 1
    if len(lines) < 2:
        raise bad(f"Malformed line in checkpoint file [{path}]: (missing count)", pos)
    try:
        expected = int(lines[1].strip())
    except ValueError:
        raise bad(f"Malformed line in checkpoint file [{path}]: {lines[1]}", pos) from None
    pos += len(lines[1]) + 1
    out: dict[TopicPartition, int] = {}
    for line in lines[2:]:
        parts = line.split()
        try:
            if len(parts) != 3:
                raise ValueError
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise bad(f"Malformed line in checkpoint file [{path}]: {line}", pos) from None
        pos += len(line) + 1
    if len(out) != expected:
        raise bad(f"Expected [{expected}] entries in checkpoint file [{path}], but found only "
                  f"[{len(out)}]", pos)
    return out


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Entries of a checkpoint file; a missing file has none."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    return parse_offset_checkpoint(text, str(path))


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    write_atomically(path, format_offset_checkpoint(offsets))


# --- meta.properties ----------------------------------------------------------------

def random_uuid() -> str:
    """Kafka's Uuid.randomUuid().toString(): 22 chars of URL-safe base64, no padding."""
    while True:
        raw = uuid.uuid4().bytes
        if any(raw):                       # never the zero UUID
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_meta_properties(dir: Path) -> dict[str, str] | None:
    path = Path(dir) / META_PROPERTIES
    try:
        return parse_properties(path.read_text(), str(path), error=CorruptCheckpointError)
    except FileNotFoundError:
        return None


def write_meta_properties(dir: Path, *, cluster_id: str, node_id: int,
                          directory_id: str | None = None) -> dict[str, str]:
    """KRaft ``meta.properties`` (version 1), in the key order Kafka's hash table gives."""
    props = {"node.id": str(node_id), "directory.id": directory_id or random_uuid(),
             "version": "1", "cluster.id": cluster_id}
    write_atomically(Path(dir) / META_PROPERTIES, format_properties(props))
    return props


# --- clean shutdown marker --------------------------------------------------------------

def write_clean_shutdown_file(dir: Path, broker_epoch: int = -1) -> None:
    write_atomically(Path(dir) / CLEAN_SHUTDOWN_FILE,
                     json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")))


def had_clean_shutdown(dir: Path) -> bool:
    """True when the marker exists (an empty one, as older Kafka wrote, counts)."""
    return (Path(dir) / CLEAN_SHUTDOWN_FILE).exists()


def delete_clean_shutdown_file(dir: Path) -> None:
    (Path(dir) / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
