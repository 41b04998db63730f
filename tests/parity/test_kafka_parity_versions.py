"""``--kafka-version 4.0`` against Apache Kafka 4.0's own broker: its ApiVersions answer, v3 and
v4, measured on a freshly formatted KRaft node (the release kproto/server/kafka_versions.py
read 4.0's table from, fetched into ``.kafka/<version>/lib`` like 4.4's), diffed with the
generated 4.0 row and with what kproto answers when it emulates 4.0: the same.
"""

from __future__ import annotations

import re

import pytest

import kproto.testing
from kproto.schemas import protocol as P
from kproto.server.emulation import advertised
from kproto.server.kafka_versions import FRESH_FEATURES, RELEASES, SOURCES, SUPPORTED_FEATURES
from tests.helpers import request_raw
from tests.kafka_ref import KafkaReference, KafkaUnavailable, fetch, java, unavailable

# the patch release the 4.0 table was generated from ("kafka-clients-4.0.2.jar: ...")
KAFKA_40 = re.match(r"kafka-clients-(4\.0\.\d+)\.jar", SOURCES["4.0"]).group(1)


@pytest.fixture(scope="module")
def kafka_40(tmp_path_factory) -> str:
    """The bootstrap address of a fresh Kafka 4.0 broker."""
    try:
        java()
        ref = KafkaReference(fetch(KAFKA_40), tmp_path_factory.mktemp("kafka-40-ref"), KAFKA_40)
        with ref.broker(tmp_path_factory.mktemp("kafka-40"), timeout=300) as b:
            yield b.bootstrap
    except KafkaUnavailable as e:
        unavailable(e)


def answer(bootstrap: str, version: int) -> tuple:
    """ApiVersions ``version``: (api key -> range, feature -> supported range, finalized levels)."""
    r = request_raw(bootstrap, 18, version, {"client_software_name": "t", "client_software_version": "1"})
    return ({k.api_key: (k.min_version, k.max_version) for k in r.api_keys},
            {f.name: (f.min_version, f.max_version) for f in r.supported_features},
            {f.name: f.max_version_level for f in r.finalized_features if f.min_version_level == f.max_version_level})


def test_kafka_4_0_answers_as_the_generated_table(kafka_40):
    apis, supported, finalized = answer(kafka_40, 4)
    assert apis == RELEASES["4.0"]
    assert supported == SUPPORTED_FEATURES["4.0"]
    assert finalized == FRESH_FEATURES["4.0"]
    assert apis[0] == (0, 12) and 68 in apis and 76 not in apis and 71 not in apis


@pytest.mark.parametrize("version", [3, 4])
def test_emulated_4_0_answers_as_kafka_4_0(kafka_40, tmp_path, version):
    """The same features (below v4 without those from level 0), and every API kproto serves
    in Kafka 4.0's range: all of 4.0's but those kproto does not serve."""
    kafka_apis, *kafka_features = answer(kafka_40, version)
    with kproto.testing.broker(data_dir=tmp_path / "data", in_process=True, kafka_version="4.0") as b:
        apis, *features = answer(b.bootstrap_servers, version)
    assert features == kafka_features
    served = P.served_versions()
    assert apis == advertised("4.0", served)
    assert {k: r for k, r in kafka_apis.items() if k not in served} == {k: r for k, r in kafka_apis.items()
                                                                        if k not in apis}
