"""The conformance corpus read by Apache Kafka itself: its generated message classes.

tests/java/KprotoClient.java ``decode`` reads every frame of the corpus with Kafka's
RequestHeaderData/ResponseHeaderData and the API's generated data class, and prints
it with the generated JsonConverter (``write(data, version, false)``). kproto's own
decoding, put in that form by ``kproto.conformance.decode.decode_frame_as_kafka``
(the one mapping: ``kafka_json``'s camelCase names, Uuid.toString(), base64 bytes,
tagged fields at their default left out, records as ``recordsSizeInBytes``), must
be the same, whole. The frames captured from Kafka's Java client also carry Kafka's
answer in their sidecar (``kafka``), checked here without a JVM.
"""

from __future__ import annotations

import pytest

from kproto.conformance import differences, fixtures
from kproto.conformance.decode import decode_frame_as_kafka
from tests import java_client
from tests.kafka_ref import KafkaUnavailable, unavailable

# Field names Kafka 4.4 and kproto spell differently, (api_key, kind) -> {Kafka's: kproto's}.
# None now: TxnOffsetCommit's GenerationIdOrMemberEpoch (KIP-848) is kproto's name too.
RENAMED: dict[tuple[int, str], dict[str, str]] = {}


def as_kproto_names(api_key: int, kind: str, kafka: dict) -> dict:
    renames = RENAMED.get((api_key, kind), {})
    return {"header": kafka["header"], "body": {renames.get(k, k): v for k, v in kafka["body"].items()}}


@pytest.fixture(scope="module")
def kafkas_reading(kafka_ref) -> dict[str, dict]:
    """Kafka's answer for every corpus frame, by fixture id (one JVM for all)."""
    frames = fixtures(["frames"])
    try:
        answers = java_client.decode(kafka_ref, [(f.kind, f.api_key, f.api_version, f.path) for f in frames])
    except KafkaUnavailable as e:
        unavailable(e)
    return {f.id: a for f, a in zip(frames, answers)}


@pytest.mark.parametrize("fixture", fixtures(["frames"]), ids=lambda f: f.name)
def test_kafkas_classes_read_the_frame_as_kproto_does(kafkas_reading, fixture):
    kafka = kafkas_reading[fixture.id]
    assert "error" not in kafka, kafka["error"]
    mine = decode_frame_as_kafka(fixture.path.read_bytes(), fixture.kind, fixture.api_key, fixture.api_version)
    expected = as_kproto_names(fixture.api_key, fixture.kind, kafka)
    assert differences(expected, mine, limit=20) == []
    assert mine == expected        # whole, the header's fields included


def test_every_renamed_field_is_still_renamed(kafkas_reading):
    """A RENAMED entry kproto no longer needs (or Kafka no longer has) is an error to remove."""
    by_id = {f.id: f for f in fixtures(["frames"])}
    for (api_key, kind), renames in RENAMED.items():
        bodies = [a["body"] for i, a in kafkas_reading.items()
                  if (by_id[i].api_key, by_id[i].kind) == (api_key, kind)]
        assert bodies, f"no corpus frame of API {api_key} {kind}"
        for body in bodies:
            assert set(renames) <= set(body) and not set(renames.values()) & set(body)


JAVA_CAPTURES = [f for f in fixtures(["frames"]) if "kafka" in f.meta]


def test_there_are_java_captures():
    assert {(f.written_by, f.kind) for f in JAVA_CAPTURES} == {("kafka-clients-4.4.0", "request"),
                                                              ("kafka-4.4.0", "response")}
    assert len(JAVA_CAPTURES) >= 20


@pytest.mark.parametrize("fixture", JAVA_CAPTURES, ids=lambda f: f.name)
def test_the_sidecar_records_kafkas_reading(fixture):
    """The sidecar's ``kafka`` (what KprotoClient decode printed when the maker ran;
    ``make_fixtures.py --verify`` re-runs it) is kproto's reading in Kafka's form."""
    mine = decode_frame_as_kafka(fixture.path.read_bytes(), fixture.kind, fixture.api_key, fixture.api_version)
    assert mine == as_kproto_names(fixture.api_key, fixture.kind, fixture.meta["kafka"])
