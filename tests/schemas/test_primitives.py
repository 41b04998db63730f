"""Kafka primitive types: exact bytes, bounds, null markers, tagged fields."""

import uuid

import pytest
from construct import Struct
from hypothesis import given
from hypothesis import strategies as st

from kproto import schemas
from kproto.errors import CorruptRecordError
from kproto.schemas import primitives as P


@pytest.mark.parametrize("con, value, data", [
    (P.UVarInt, 0, b"\x00"), (P.UVarInt, 127, b"\x7f"), (P.UVarInt, 128, b"\x80\x01"),
    (P.UVarInt, 2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    (P.VarInt, 0, b"\x00"), (P.VarInt, -1, b"\x01"), (P.VarInt, 1, b"\x02"), (P.VarInt, -64, b"\x7f"),
    (P.VarInt, 2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (P.VarInt, -2**31, b"\xff\xff\xff\xff\x0f"),
    (P.VarLong, -2**63, b"\xff" * 9 + b"\x01"),
    (P.String, "ab", b"\x00\x02ab"), (P.NullableString, None, b"\xff\xff"),
    (P.Bytes, b"", b"\x00\x00\x00\x00"), (P.NullableBytes, None, b"\xff\xff\xff\xff"),
    (P.CompactString, "ab", b"\x03ab"), (P.CompactNullableString, None, b"\x00"),
    (P.CompactBytes, b"", b"\x01"), (P.CompactNullableBytes, None, b"\x00"),
    (P.VarBytes, None, b"\x01"), (P.VarBytes, b"xyz", b"\x06xyz"), (P.VarString, "é", b"\x04\xc3\xa9"),
    (P.Array(P.Int16), [1, 2], b"\x00\x00\x00\x02\x00\x01\x00\x02"),
    (P.Array(P.Int16, nullable=True), None, b"\xff\xff\xff\xff"),
    (P.CompactArray(P.Int8), [5], b"\x02\x05"), (P.CompactArray(P.Int8, nullable=True), None, b"\x00"),
    (P.UUID, uuid.UUID(int=1), bytes(15) + b"\x01"),
])
def test_exact_bytes(con, value, data):
    assert schemas.build(con, value) == data
    assert schemas.parse(con, data) == value


@pytest.mark.parametrize("con, data, reason", [
    (P.UVarInt, b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"),
    (P.VarLong, b"\x80" * 10 + b"\x01", "longer than 10 bytes"),
    (P.UVarInt, b"\xff\xff\xff\xff\x7f", "out of range"),
    (P.String, b"\xff\xff", "invalid length"),
    (P.Bytes, b"\xff\xff\xff\xfe", "invalid length"),
    (P.Array(P.Int8), b"\xff\xff\xff\xfe", "invalid array count"),
    (P.Array(P.Int8), b"\xff\xff\xff\xff", "invalid array count"),
    (P.String, b"\x00\x02\xff\xfe", "invalid UTF-8"),
    (P.Bytes, b"\x00\x00\x00\x05ab", "stream read less"),
])
def test_rejects(con, data, reason):
    with pytest.raises(CorruptRecordError, match=reason):
        schemas.parse(con, data)


def test_error_names_field_path_and_position():
    s = Struct("a" / P.Int32, "b" / Struct("c" / P.String))
    with pytest.raises(CorruptRecordError) as e:
        schemas.parse(s, b"\x00\x00\x00\x01\x00\x09ab", position=100)
    assert e.value.path == "b.c" and e.value.position == 108


@given(st.integers(-2**31, 2**31 - 1))
def test_varint_round_trip(v):
    assert schemas.parse(P.VarInt, schemas.build(P.VarInt, v)) == v


@given(st.integers(-2**63, 2**63 - 1))
def test_varlong_round_trip(v):
    assert schemas.parse(P.VarLong, schemas.build(P.VarLong, v)) == v


def test_varint_out_of_range_on_build():
    with pytest.raises(CorruptRecordError):
        schemas.build(P.VarInt, 2**31)


def test_tagged_fields_keep_unknown_tags_in_order():
    tf = P.TaggedFields()
    data = b"\x02\x00\x03\x02hi\x09\x02\xab\xcd"
    parsed = schemas.parse(tf, data)
    assert parsed._unknown == {0: b"\x02hi", 9: b"\xab\xcd"}
    assert schemas.build(tf, parsed) == data          # unknown tags written back (KIP-482)
    assert schemas.build(tf, {}) == b"\x00"


def test_tagged_fields_out_of_order_rejected():
    with pytest.raises(CorruptRecordError, match="out of order"):
        schemas.parse(P.TaggedFields(), b"\x02\x05\x00\x01\x00")
