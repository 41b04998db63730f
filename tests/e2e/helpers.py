"""Helpers the e2e cluster tests share (kproto's cluster and Kafka's alike)."""

from __future__ import annotations

import threading

from confluent_kafka import Producer


def produce_across_leader_kill(cluster, topic: str, *, batch: int = 300) -> list[bytes]:
    """An idempotent acks=all producer writing ``topic``-0 (led by node 2, ISR [2, 3, 1]) from
    a thread: ``batch`` records acknowledged, node 2 SIGKILLed, node 3 elected (the next of the
    ISR in assignment order, PartitionChangeBuilder's election), ``batch`` more acknowledged.
    Returns the acknowledged values; no record failed."""
    acked: list[bytes] = []
    errors: list[str] = []
    enough = threading.Event()
    target = [batch]
    stop = threading.Event()

    def produce() -> None:
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 2, "message.timeout.ms": 120000, "topic.metadata.refresh.interval.ms": 500})

        def delivered(err, m) -> None:
            if err is None:
                acked.append(m.value())
                if len(acked) >= target[0]:
                    enough.set()
            else:
                errors.append(str(err))
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=b"%d" % i, partition=0, on_delivery=delivered)
                i += 1
            except BufferError:
                pass
            p.poll(0.001)
        assert p.flush(180) == 0

    t = threading.Thread(target=produce)
    t.start()
    try:
        assert enough.wait(120), f"{len(acked)} acknowledged before the kill"
        cluster.kill(2)
        assert cluster.wait_for_leader(topic, 0, not_in={2}) == 3
        enough.clear()
        target[0] = len(acked) + batch
        assert enough.wait(180), f"{len(acked)} acknowledged after the failover"
    finally:
        stop.set()
        t.join(240)
    assert errors == []
    return acked
