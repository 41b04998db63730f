"""KRaft's ``__cluster_metadata`` records: their framing.

A metadata record has no key; its value is framed by MetadataRecordSerde
(server-common AbstractApiMessageSerde)::

    value => frame_version UNSIGNED_VARINT (1)
             record_type   UNSIGNED_VARINT (TopicRecord = 2, PartitionRecord = 3, ...)
             version       UNSIGNED_VARINT
             the record of that type and version

The record tables are kproto.schemas.metadata_records (generated from Kafka's
metadata/*.json). dump-log's ``--cluster-metadata-decoder`` lines are
kproto.tools.dump_log.decoders; the reasons ``parse_metadata_record`` gives for a
bad frame are Kafka's.
"""

from __future__ import annotations

from construct import Container

from kproto import schemas
from kproto.errors import CorruptRecordError
from kproto.schemas.internal_records import kafka_uuid
from kproto.schemas.message import exact, snake
from kproto.schemas.metadata_records import METADATA_RECORDS
from kproto.schemas.primitives import encode_uvarint

__all__ = ["FRAME_VERSION", "TYPE_NAMES", "read_frame", "parse_metadata_record", "build_metadata_record",
           "kafka_uuid"]

FRAME_VERSION = 1
#: record type -> Kafka's MetadataRecordType name (TOPIC_RECORD, ...)
TYPE_NAMES = {t: snake(m.name).upper() for t, m in METADATA_RECORDS.items()}


def _uvarint_short(data: bytes, pos: int, entity: str) -> tuple[int, int]:
    """Kafka's unsignedIntToShort: an unsigned varint that must fit an int16."""
    value = shift = 0
    for i in range(5):
        if pos + i >= len(data):
            raise CorruptRecordError(f"Error while reading {entity}", position=pos + i, path=entity)
        b = data[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0x7FFF:
                raise CorruptRecordError(f"Value for {entity} was too large.", position=pos, path=entity)
            return value, pos + i + 1
        shift += 7
    raise CorruptRecordError(f"Error while reading {entity}", position=pos, path=entity)


def read_frame(value: bytes) -> tuple[int, int, int]:
    """AbstractApiMessageSerde.read's frame: (record type, version, where the body
    starts); ``CorruptRecordError`` with Kafka's reason for a bad frame. The same
    framing carries __remote_log_metadata's records (kproto.schemas.remote_log_metadata_records)."""
    frame, pos = _uvarint_short(value, 0, "frame version")
    if frame == 0:
        raise CorruptRecordError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
            "preview release of KRaft in 2.8 to newer versions are not supported.", position=0)
    if frame != FRAME_VERSION:
        raise CorruptRecordError(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {FRAME_VERSION} is supported)", position=0)
    record_type, pos = _uvarint_short(value, pos, "type")
    version, pos = _uvarint_short(value, pos, "version")
    return record_type, version, pos


def parse_metadata_record(value: bytes) -> tuple[int, int, Container]:
    """(record type, version, the record's fields) of one framed metadata record.
    ``CorruptRecordError`` (a DecodeError) names the byte position."""
    record_type, version, pos = read_frame(value)
    message = METADATA_RECORDS.get(record_type)
    if message is None:
        raise CorruptRecordError(f"Unknown metadata id {record_type}", position=pos, path="type")
    if version not in message.versions():
        raise CorruptRecordError(f"Can't read version {version} of {message.name}", position=pos,
                                 path="version")
    # the record must end the value (Kafka: "Found N byte(s) of garbage after")
    data = schemas.parse(exact(message.struct(version)), value[pos:], position=pos)
    return record_type, version, data


def build_metadata_record(record_type: int, version: int, data, records: dict = METADATA_RECORDS) -> bytes:
    """The framed value of one metadata record (what a controller appends)."""
    message = records[record_type]
    return (encode_uvarint(FRAME_VERSION) + encode_uvarint(record_type) + encode_uvarint(version)
            + schemas.build(message.struct(version), data))
