"""kproto's broker serving a data dir Apache Kafka's broker wrote (KRaft, combined mode)."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kproto.common import CLUSTER_METADATA_TOPIC_NAME
from tests.components import kproto_broker
from tests.kafka_ref import KafkaUnavailable, unavailable


def test_kraft_metadata_log_is_not_a_topic(kafka_ref, tmp_path):
    """A KRaft log dir holds __cluster_metadata-0, the controller's metadata log. Kafka's
    LogManager.loadLogs leaves it out of the logs it serves; so does kproto's: Metadata lists
    the topic Kafka's clients made and no __cluster_metadata."""
    try:
        with kafka_ref.broker(tmp_path / "kafka") as b:
            a = AdminClient({"bootstrap.servers": b.bootstrap})
            a.create_topics([NewTopic("written-by-kafka", 2, 1)])["written-by-kafka"].result(timeout=30)
            assert CLUSTER_METADATA_TOPIC_NAME not in a.list_topics(timeout=10).topics
            p = Producer({"bootstrap.servers": b.bootstrap})
            for i in range(3):
                p.produce("written-by-kafka", value=b"v%d" % i, partition=1)
            assert p.flush(30) == 0
    except KafkaUnavailable as e:
        unavailable(e)
    assert (b.log_dir / f"{CLUSTER_METADATA_TOPIC_NAME}-0").is_dir()
    with kproto_broker(tmp_path, data_dir=b.log_dir) as bs:
        md = AdminClient({"bootstrap.servers": bs}).list_topics(timeout=10)
    assert CLUSTER_METADATA_TOPIC_NAME not in md.topics
    assert sorted(md.topics["written-by-kafka"].partitions) == [0, 1]
