"""Real frames from librdkafka 2.16 / 2.0.2, kafka-python, aiokafka and tansu.

Every fixture in kproto/conformance/corpus/protocol decodes, and encodes back to the
same bytes, except where the writer put default-valued tagged fields on the
wire (Kafka and kproto omit them); see the fixtures README.
"""

from __future__ import annotations

import json
import re

import pytest

from kproto.records import iter_batches
from kproto import protocol as P
from kproto.schemas.message import MalformedMessageError

from kproto.conformance import PROTOCOL_DIR as FIXTURES  # the corpus ships in the package

from tests.schemas.helpers import DEFAULT_TAGS_WRITTEN, TRAILING_BYTES, WRITER_BUGS

CASES = sorted(p.stem for p in FIXTURES.glob("*.bin") if p.stem not in WRITER_BUGS)


def _decode(stem: str):
    frame = (FIXTURES / f"{stem}.bin").read_bytes()
    side = json.loads((FIXTURES / f"{stem}.json").read_text())
    frame = frame[:len(frame) - TRAILING_BYTES.get(stem, 0)]
    if side["direction"] == "request":
        header, body = P.decode_request(frame)
        assert (header.request_api_key, header.request_api_version) == \
            (side["api_key"], side["api_version"])
        again = P.encode_request(header.request_api_key, header.request_api_version,
                                 header.correlation_id, header.client_id, body)
        redecoded = P.decode_request(again)[1]
    else:
        header, body = P.decode_response(side["api_key"], side["api_version"], frame)
        again = P.encode_response(side["api_key"], side["api_version"], header.correlation_id, body)
        redecoded = P.decode_response(side["api_key"], side["api_version"], again)[1]
    return side, frame, body, again, redecoded


def test_there_are_fixtures_from_every_writer():
    writers = {json.loads(p.read_text())["written_by"] for p in FIXTURES.glob("*.json")}
    assert writers == {"librdkafka-2.16.0", "librdkafka-2.0.2", "kafka-python-3.0.12",
                       "aiokafka-0.14.0", "tansu-0.6.0", "kafka-clients-4.4.0", "kafka-4.4.0"}


@pytest.mark.parametrize("stem", CASES)
def test_fixture(stem):
    side, frame, body, again, redecoded = _decode(stem)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", side["api"]).lower()
    assert stem.rsplit("_", 1)[0] == \
        f"{snake}_{side['direction']}_v{side['api_version']}_{side['written_by']}"
    assert redecoded == body
    if stem in DEFAULT_TAGS_WRITTEN:
        assert len(again) < len(frame)  # only defaults were dropped: same values, fewer bytes
    else:
        assert again == frame
    assert "_unknown" not in repr(body)  # no writer used tags unknown to Kafka 4.x


@pytest.mark.parametrize("stem", sorted(TRAILING_BYTES))
def test_trailing_bytes_are_refused_unless_allowed(stem):
    frame = (FIXTURES / f"{stem}.bin").read_bytes()
    with pytest.raises(MalformedMessageError) as e:
        P.decode_request(frame)
    assert e.value.position == len(frame) - TRAILING_BYTES[stem]
    assert P.decode_request(frame, allow_trailing=True) == P.decode_request(frame[:e.value.position])


@pytest.mark.parametrize("stem", sorted(WRITER_BUGS))
def test_writer_bugs_are_refused_with_a_position(stem):
    side = json.loads((FIXTURES / f"{stem}.json").read_text())
    frame = (FIXTURES / f"{stem}.bin").read_bytes()
    with pytest.raises(MalformedMessageError) as e:
        P.decode_response(side["api_key"], side["api_version"], frame)
    assert e.value.position == WRITER_BUGS[stem][0]


def test_default_valued_tags_decode_to_defaults():
    _, _, body, _, _ = _decode("api_versions_response_v3_tansu-0.6.0_000")
    assert (body.supported_features, body.finalized_features_epoch, body.finalized_features,
            body.zk_migration_ready) == ([], -1, [], False)
    assert {k.api_key for k in body.api_keys} >= {0, 1, 3, 18}


@pytest.mark.parametrize("stem", [s for s in CASES if s.startswith(("produce_request", "fetch_response"))])
def test_records_fields_hold_record_batches(stem):
    """The raw records bytes are what the record layer reads (CRC-checked)."""
    _, _, body, _, _ = _decode(stem)
    if stem.startswith("produce"):
        chunks = [p.records for t in body.topic_data for p in t.partition_data]
    else:
        chunks = [p.records for t in body.responses for p in t.partitions]
    batches = [b for c in chunks if c for b in iter_batches(c, allow_incomplete=True)]
    assert batches and all(b.magic == 2 for b in batches)
