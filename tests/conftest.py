"""Fixtures shared by the tool and client tests."""

from __future__ import annotations

import pytest

from tests import components


@pytest.fixture(scope="module", params=["kproto", "tansu"])
def broker(request, tmp_path_factory):
    """(kind, "127.0.0.1:PORT"): the kproto broker, then tansu, each started
    once per test module; tests that need only kproto define their own."""
    start = components.kproto_broker if request.param == "kproto" else components.tansu
    with start(tmp_path_factory.mktemp(request.param)) as bootstrap:
        yield request.param, bootstrap


@pytest.fixture(scope="session")
def kafka_ref(tmp_path_factory):
    """Apache Kafka (tests/kafka_ref.py): run its tools, start its broker. A Kafka that
    cannot be fetched fails the run in CI (CI=true) and skips the test elsewhere."""
    from tests.kafka_ref import KafkaUnavailable, reference, unavailable
    try:
        return reference(tmp_path_factory.mktemp("kafka-ref"))
    except KafkaUnavailable as e:
        unavailable(e)

