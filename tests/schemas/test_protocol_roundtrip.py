"""Hypothesis round trips for every protocol schema and version.

One strategy generator, ``values(struct, version, flexible)``, is derived
from the field tables (types, versions, nullable versions, tags, defaults),
so every API and version gets the same checks:

* build -> parse gives the value back (``_unknown`` tags included);
* parse -> build gives the same bytes;
* the same through the registry's full frames (header + body);
* a frame cut short, or with a byte changed, either decodes or raises a
  ``kproto.errors.DecodeError`` with a position, never anything else;
* random garbage, likewise.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.errors import DecodeError, InvalidRequestError, UnsupportedVersionError
from kproto import protocol as P
from kproto.schemas import build
from kproto.schemas.message import MalformedMessageError
from tests.schemas.helpers import plain, values
from tests.schemas.helpers import PROTOCOL_CASES as CASES
from tests.schemas.helpers import PROTOCOL_SETTINGS as SETTINGS
from tests.schemas.helpers import PROTOCOL_TEXT as _TEXT


def _check_damaged(decode, frame: bytes):
    try:
        decode(frame)
    except DecodeError as e:
        assert isinstance(e, MalformedMessageError), type(e)
        assert e.position is not None and 0 <= e.position <= len(frame), (e.position, len(frame))


@pytest.mark.parametrize("spec, version, kind", CASES)
@SETTINGS
@given(data=st.data())
def test_round_trip(spec, version, kind, data):
    schema = getattr(spec, f"{kind}_schema")
    value = data.draw(values(schema, version, spec.is_flexible(version)), label="value")
    con = getattr(spec, kind)(version)

    raw = build(con, value)
    assert plain(P._parse(con, raw)) == value
    assert build(con, P._parse(con, raw)) == raw

    cid = data.draw(st.integers(-2**31, 2**31 - 1), label="correlation_id")
    if kind == "request":
        client_id = data.draw(st.none() | _TEXT, label="client_id")
        frame = P.encode_request(spec.key, version, cid, client_id, value)
        header, body = P.decode_request(frame)
        if P.request_header_version(spec.key, version) == 0:
            client_id = ""      # ControlledShutdown v0: header v0 has no client_id
        assert (header.request_api_key, header.request_api_version, header.correlation_id,
                header.client_id) == (spec.key, version, cid, client_id)
        decode = P.decode_request
    else:
        if spec.unsupported_version_body is not None and value.get("error_code") == 35:
            version = spec.unsupported_version_body  # KIP-511: written as v0
            value = plain(P._parse(spec.response(version), build(spec.response(version), value)))
        frame = P.encode_response(spec.key, version, cid, value)
        header, body = P.decode_response(spec.key, version, frame)
        assert header.correlation_id == cid

        def decode(f, _k=spec.key, _v=version):
            return P.decode_response(_k, _v, f)
    assert plain(body) == value

    cut = data.draw(st.integers(0, len(frame) - 1), label="cut")
    with pytest.raises(MalformedMessageError) as e:
        decode(frame[:cut])
    assert e.value.position is not None and e.value.position <= cut

    at = data.draw(st.integers(0, len(frame) - 1), label="at")
    byte = data.draw(st.integers(0, 255), label="byte")
    damaged = frame[:at] + bytes([byte]) + frame[at + 1:]
    try:
        _check_damaged(decode, damaged)
    except (UnsupportedVersionError, InvalidRequestError):
        assert kind == "request" and at < 4  # the header's api key / version was hit

    with pytest.raises(MalformedMessageError) as e:
        decode(frame + b"\x00")
    assert e.value.position == len(frame)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.sampled_from([(s, v) for s in P.API_KEYS.values() for v in s.versions]),
       st.sampled_from(["request", "response"]), st.binary(max_size=64))
def test_garbage_bodies(spec_version, kind, garbage):
    spec, version = spec_version
    con = getattr(spec, kind)(version)
    try:
        value = P._parse(con, garbage)
    except DecodeError as e:
        assert isinstance(e, MalformedMessageError)
        assert e.position is not None and 0 <= e.position <= len(garbage)
        return
    build(con, value)  # whatever decodes can be written again


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.binary(max_size=48), st.sampled_from(sorted(P.API_KEYS)), st.integers(-1, 20))
def test_garbage_frames(garbage, key, version):
    frame = key.to_bytes(2, "big") + version.to_bytes(2, "big", signed=True) + garbage
    for candidate in (garbage, frame):
        try:
            P.decode_request(candidate)
        except DecodeError as e:
            assert isinstance(e, MalformedMessageError) and e.position is not None
        except (UnsupportedVersionError, InvalidRequestError):
            pass
    if 0 <= version <= 20 and key in P.API_KEYS and version in P.API_KEYS[key].versions:
        try:
            P.decode_response(key, version, garbage)
        except DecodeError as e:
            assert isinstance(e, MalformedMessageError) and e.position is not None
