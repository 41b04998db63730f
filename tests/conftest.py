"""Fixtures shared by the tool and client tests."""

from __future__ import annotations

import pytest

from tests import components


DEFAULT_BROKERS = (components.KPROTO, components.TANSU)


def pytest_configure(config):
    config.addinivalue_line("markers", "brokers(*kinds): the brokers (kproto, tansu, kafka) the "
                            "`broker` fixture runs a test against; default kproto and tansu")
    config.addinivalue_line("markers", "differs(kind, reason): that broker answers differently, "
                            "deliberately: its side is a strict xfail saying why")


def pytest_generate_tests(metafunc):
    """One mechanism for every peer: the conftest ``broker`` fixture is parametrised by the
    closest ``brokers`` mark (a test's, else its module's pytestmark); a ``differs`` mark
    makes that side a strict xfail. Modules defining their own ``broker`` are kproto-only."""
    if "_peer_cluster" in metafunc.fixturenames:
        _parametrize_peer_cluster(metafunc)
    if "broker" not in metafunc.fixturenames or hasattr(metafunc.module, "broker"):
        return
    mark = metafunc.definition.get_closest_marker("brokers")
    kinds = mark.args if mark else DEFAULT_BROKERS
    differs = {m.args[0]: m.args[1] for m in metafunc.definition.iter_markers("differs")}
    unknown = set(differs) - set(kinds)
    assert not unknown, f"differs mark for a broker the test does not run against: {unknown}"
    metafunc.parametrize("broker", [
        pytest.param(k, id=k, marks=[pytest.mark.xfail(strict=True, reason=differs[k])] if k in differs else [])
        for k in kinds], indirect=True, scope="module")


#: what both of ``peer_cluster``'s clusters start with (beside kproto.testing.CLUSTER_DEFAULTS /
#: tests/kafka_ref.py CLUSTER_CONFIGS, which match each other)
PEER_CLUSTER_CONFIG = {"offsets.topic.num.partitions": "3"}


def _parametrize_peer_cluster(metafunc) -> None:
    """``peer_cluster``: kproto's cluster, then Kafka's; a ``differs`` mark makes that side a strict xfail."""
    differs = {m.args[0]: m.args[1] for m in metafunc.definition.iter_markers("differs")}
    metafunc.parametrize("_peer_cluster", [
        pytest.param(k, id=k, marks=[pytest.mark.xfail(strict=True, reason=differs[k])] if k in differs else [])
        for k in (components.KPROTO, components.KAFKA)], indirect=True, scope="module")


@pytest.fixture(scope="module")
def _peer_cluster(request, tmp_path_factory):
    if request.param == components.KAFKA:
        yield request.getfixturevalue("kafka_cluster_ref")
        return
    from kproto.testing import Cluster
    with Cluster(brokers=3, data_dir=tmp_path_factory.mktemp("kproto-cluster"), config=PEER_CLUSTER_CONFIG) as c:
        yield c


@pytest.fixture
def peer_cluster(_peer_cluster):
    """Three nodes (1: broker and the one controller, 2-3: brokers) of kproto's cluster, then of
    Apache Kafka's (tests/kafka_ref.py KafkaCluster), each started once per module; the nodes a
    test killed or stopped are started again after it, and it waits until all three are unfenced."""
    yield _peer_cluster
    _peer_cluster.start()
    _peer_cluster.wait_for(lambda md: len(md.brokers) == 3 or None, "every broker unfenced again", timeout=120)


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory) -> components.Peer:
    """A :class:`components.Peer`: the kproto broker or tansu started once per test module,
    or the session's Apache Kafka broker (``kafka_server``)."""
    kind = request.param
    if kind == components.KAFKA:
        yield components.Peer(kind, request.getfixturevalue("kafka_server").bootstrap)
        return
    start = components.kproto_broker if kind == components.KPROTO else components.tansu
    with start(tmp_path_factory.mktemp(kind)) as bootstrap:
        yield components.Peer(kind, bootstrap)


@pytest.fixture(scope="session")
def kafka_server(kafka_ref, tmp_path_factory):
    """One Apache Kafka broker (KRaft, combined mode) for the whole session."""
    from tests.kafka_ref import KafkaUnavailable, unavailable
    try:
        with kafka_ref.broker(tmp_path_factory.mktemp("kafka-server")) as b:
            yield b
    except KafkaUnavailable as e:
        unavailable(e)


@pytest.fixture(scope="module")
def kafka_cluster_ref(kafka_ref, tmp_path_factory):
    """A 3-node Apache Kafka cluster (tests/kafka_ref.py KafkaCluster: node 1 broker and the
    one controller, nodes 2-3 brokers; PEER_CLUSTER_CONFIG) for a test module; unavailable as ``kafka_ref``."""
    from tests.kafka_ref import KafkaUnavailable, unavailable
    try:
        with kafka_ref.cluster(tmp_path_factory.mktemp("kafka-cluster"),
                               **{k.replace(".", "_"): v for k, v in PEER_CLUSTER_CONFIG.items()}) as c:
            yield c
    except KafkaUnavailable as e:
        unavailable(e)


@pytest.fixture(scope="session")
def kafka_ref(tmp_path_factory):
    """Apache Kafka (tests/kafka_ref.py): run its tools, start its broker. A Kafka that
    cannot be fetched fails the run in CI (CI=true) and skips the test elsewhere."""
    from tests.kafka_ref import KafkaUnavailable, reference, unavailable
    try:
        return reference(tmp_path_factory.mktemp("kafka-ref"))
    except KafkaUnavailable as e:
        unavailable(e)



@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory) -> str:
    """A Confluent-compatible Schema Registry (tests/schema_registry.py: Apicurio Registry, in
    memory) for the session: its Confluent API URL. One that cannot be built or started fails the
    run in CI (CI=true) and skips the test elsewhere."""
    import os
    from tests.schema_registry import RegistryUnavailable, running
    try:
        with running(tmp_path_factory.mktemp("schema-registry") / "registry.log") as url:
            yield url
    except RegistryUnavailable as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Schema Registry unavailable: {e}", pytrace=False)
        pytest.skip(f"Schema Registry unavailable (make schema-registry builds it): {e}")
