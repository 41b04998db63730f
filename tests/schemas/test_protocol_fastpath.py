"""The generated protocol codecs (kproto.fastpath.protocol) equal the schema.

For every fixture captured from third-party clients and brokers, and for
hypothesis-generated messages of every API, version and direction: the fast
parser and the construct codec give equal objects (``_unknown`` tags
included), and the fast builder and the construct codec give identical bytes.
Where the fast path declines (damaged input), the registry falls back to the
schema, so its errors are the schema's; that is checked too.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto.errors import DecodeError
from kproto import protocol as P
from kproto.schemas import build, parse
from kproto.fastpath.protocol import Irregular, fast_builder, fast_parser
from kproto.schemas.message import StructCodec, present_only
from kproto.schemas.primitives import Deferred
from kproto.schemas.protocol.header import request_header, response_header
from tests.schemas.helpers import DEFAULT_TAGS_WRITTEN, plain, TRAILING_BYTES, values, WRITER_BUGS
from tests.schemas.helpers import PROTOCOL_CASES as CASES
from tests.schemas.helpers import PROTOCOL_SETTINGS as SETTINGS

from kproto.conformance import PROTOCOL_DIR as FIXTURES  # the corpus ships in the package


def fast_parse(con: StructCodec, data: bytes):
    value, end = fast_parser(con.spec, con.version, con.flexible)(data, 0)
    assert end == len(data)
    return value


def fast_build(con: StructCodec, value) -> bytes:
    out = bytearray()
    fast_builder(con.spec, con.version, con.flexible)(value, out)
    return bytes(out)


def assert_same(con: StructCodec, body: bytes, *, same_bytes: bool = True) -> None:
    slow = parse(con, body)
    fast = fast_parse(con, body)
    assert plain(fast) == plain(slow)
    # the capture decoder's parse: only the version's fields, in present_only's order
    present, end = fast_parser(con.spec, con.version, con.flexible, present=True)(body, 0)
    assert end == len(body)
    assert (json.dumps(plain(present), default=repr)
            == json.dumps(plain(present_only(con.spec, con.version, slow)), default=repr))
    assert fast_build(con, fast) == build(con, slow)
    if same_bytes:
        assert fast_build(con, fast) == body


FIXTURE_STEMS = sorted(p.stem for p in FIXTURES.glob("*.bin") if p.stem not in WRITER_BUGS)


@pytest.mark.parametrize("stem", FIXTURE_STEMS)
def test_fixture_fast_equals_schema(stem):
    side = json.loads((FIXTURES / f"{stem}.json").read_text())
    frame = (FIXTURES / f"{stem}.bin").read_bytes()
    frame = frame[:len(frame) - TRAILING_BYTES.get(stem, 0)]
    key, version, kind = side["api_key"], side["api_version"], side["direction"]
    spec = P.api(key)
    header_con = (request_header(spec.request_header_version(version)) if kind == "request"
                  else response_header(spec.response_header_version(version)))
    header, end = fast_parser(header_con.spec, header_con.version, header_con.flexible)(frame, 0)
    assert plain(header) == plain(parse(header_con, frame[:end]))
    assert fast_build(header_con, header) == frame[:end]
    # Some writers send default-valued tags, which Kafka and kproto omit on rebuild.
    assert_same(getattr(spec, kind)(version), frame[end:], same_bytes=stem not in DEFAULT_TAGS_WRITTEN)


def test_there_are_fixtures():
    assert len(FIXTURE_STEMS) >= 50


@pytest.mark.parametrize("spec, version, kind", CASES)
@SETTINGS
@given(data=st.data())
def test_generated_fast_equals_schema(spec, version, kind, data):
    schema = getattr(spec, f"{kind}_schema")
    value = data.draw(values(schema, version, spec.is_flexible(version)), label="value")
    con = getattr(spec, kind)(version)
    body = build(con, value)
    assert fast_build(con, value) == body
    assert_same(con, body)


@pytest.mark.parametrize("spec, version, kind", CASES[::7])
@SETTINGS
@given(data=st.data())
def test_damaged_bodies_give_the_schema_error(spec, version, kind, data):
    """Through the registry: a cut or changed body decodes as the schema
    decodes it, or raises the schema's error (same text, same position)."""
    schema = getattr(spec, f"{kind}_schema")
    value = data.draw(values(schema, version, spec.is_flexible(version)), label="value")
    con = getattr(spec, kind)(version)
    body = bytearray(build(con, value))
    if body and data.draw(st.booleans(), label="cut"):
        del body[data.draw(st.integers(0, len(body) - 1), label="at"):]
    elif body:
        body[data.draw(st.integers(0, len(body) - 1), label="at")] ^= data.draw(st.integers(1, 255))
    body = bytes(body)
    try:
        expected = ("ok", plain(parse(P._exact(con), body)))
    except DecodeError as e:
        expected = ("error", str(e))
    try:
        got = ("ok", plain(P._decode(con, body)[0]))
    except DecodeError as e:
        got = ("error", str(e))
    assert got == expected


def test_deferred_records_leave_a_hole_at_the_same_place():
    """Fetch responses splice segment bytes where a Deferred stands."""
    spec = P.api(1)
    for version in (4, 12):
        con = spec.response(version)
        body = {"responses": [{"topic": "t", "partitions": [
            {"partition_index": 0, "high_watermark": 5, "records": None}]}]}
        slow_d, fast_d = Deferred(123), Deferred(123)
        body["responses"][0]["partitions"][0]["records"] = slow_d
        slow = build(con, body)
        body["responses"][0]["partitions"][0]["records"] = fast_d
        fast = fast_build(con, body)
        assert fast == slow and fast_d.at == slow_d.at > 0


def test_bad_values_raise_the_schema_error():
    con = P.api(3).request(1)
    with pytest.raises(DecodeError, match=r"topics\[0\]\.name: null where a value is required") as slow:
        build(con, {"topics": [{"name": None}]})
    with pytest.raises(DecodeError) as fast:
        P._encode(con, {"topics": [{"name": None}]})
    assert str(fast.value) == str(slow.value)


def test_irregular_input_is_the_only_fallback(monkeypatch):
    """The generated code signals input it declines with Irregular alone (the
    registry falls back to the schema for that and nothing else): a bug in
    generated code surfaces instead of quietly taking the slow path."""
    con = P.api(3).request(12)
    frame = P.encode_request(3, 12, 1, "c", {"topics": [{"name": "t", "topic_id": None}]})
    header, offset = P.decode_request_header(frame)
    with pytest.raises(Irregular):
        fast_parser(con.spec, con.version, con.flexible)(frame[:-3], offset)      # cut short
    with pytest.raises(Irregular):
        fast_builder(con.spec, con.version, con.flexible)({"topics": [{"name": 5}]}, bytearray())

    def broken(buf, pos):
        raise NameError("a bug in generated code")

    monkeypatch.setattr(P, "fast_parser", lambda *spec: broken)
    monkeypatch.setattr(P, "_PARSERS", {})       # parsers already looked up are cached there
    with pytest.raises(NameError):
        P.decode_request(frame)


def test_present_parse_falls_back_to_the_schema_projected(monkeypatch):
    """``present=True`` bodies are present_only's also when the schema parses them."""
    frame = P.encode_request(3, 12, 1, "c", {"topics": [{"name": "t", "topic_id": None}]})
    header, offset = P.decode_request_header(frame)
    full = P.decode_request_body(header, frame, offset)
    fast = P.decode_request_body(header, frame, offset, present=True)

    def declines(buf, pos):
        raise Irregular

    monkeypatch.setattr(P, "fast_parser", lambda *spec: declines)
    monkeypatch.setattr(P, "_PARSERS", {})       # parsers already looked up are cached there
    slow = P.decode_request_body(header, frame, offset, present=True)
    assert json.dumps(plain(slow), default=repr) == json.dumps(plain(fast), default=repr)
    assert "include_cluster_authorized_operations" in full and "include_cluster_authorized_operations" not in slow


# -- the on-disk cache of generated code (kproto.fastpath.walk.compiled) -----------------------

def _run(code) -> object:
    ns: dict = {}
    exec(code, ns)
    return ns["f"]()


def test_compiled_code_is_kept_and_read_back(tmp_path, monkeypatch):
    from kproto.fastpath.walk import cache_dir, compiled
    monkeypatch.setenv("KPROTO_CODEC_CACHE", str(tmp_path))
    assert _run(compiled("def f():\n    return 41", "<gen f>")) == 41
    [entry] = cache_dir().iterdir()
    assert entry.parent.parent == tmp_path and not entry.name.endswith(".tmp")
    # what is read back is the entry, not a new compile: swap in other code under the same key
    import marshal
    entry.write_bytes(marshal.dumps(compile("def f():\n    return 42", "<gen f>", "exec")))
    assert _run(compiled("def f():\n    return 41", "<gen f>")) == 42
    # another source, or the same source under another name, is another entry
    assert _run(compiled("def f():\n    return 43", "<gen f>")) == 43
    assert _run(compiled("def f():\n    return 41", "<gen g>")) == 41
    assert len(list(cache_dir().iterdir())) == 3


@pytest.mark.parametrize("damage", [b"", b"\x00garbage", b"\xe3\x00"])
def test_an_unreadable_entry_is_compiled_again_and_replaced(tmp_path, monkeypatch, damage):
    import marshal
    from kproto.fastpath.walk import cache_dir, compiled
    monkeypatch.setenv("KPROTO_CODEC_CACHE", str(tmp_path))
    compiled("def f():\n    return 7", "<gen f>")
    [entry] = cache_dir().iterdir()
    entry.write_bytes(damage)
    assert _run(compiled("def f():\n    return 7", "<gen f>")) == 7
    assert _run(marshal.loads(entry.read_bytes())) == 7


def test_no_cache_when_disabled_or_unwritable(tmp_path, monkeypatch):
    from kproto.fastpath.walk import cache_dir, compiled
    monkeypatch.setenv("KPROTO_CODEC_CACHE", "0")
    assert cache_dir() is None and _run(compiled("def f():\n    return 1", "<gen f>")) == 1
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("KPROTO_CODEC_CACHE", str(blocked))
    assert _run(compiled("def f():\n    return 2", "<gen f>")) == 2
    assert blocked.read_text() == "not a directory" and list(tmp_path.iterdir()) == [blocked]


def test_the_cache_defaults_to_the_user_cache_directory(tmp_path, monkeypatch):
    from kproto.fastpath.walk import cache_dir
    monkeypatch.delenv("KPROTO_CODEC_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir().parent == tmp_path / "kproto" / "codecs"
