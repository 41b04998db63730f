"""kproto configs --entity-type client-metrics (KIP-714 subscriptions) against Kafka 4.4's
ConfigCommand, on kproto's broker and Kafka's: the same lines for alter, describe (one,
every, --all, a missing one) and the same refusal."""

from __future__ import annotations

import pytest

from tests.components import KAFKA, KPROTO, Peer
from tests.helpers import until
from tests.tools.helpers import run_command

CC = "org.apache.kafka.tools.ConfigCommand"
pytestmark = pytest.mark.brokers(KPROTO, KAFKA)


def both(kafka_ref, bootstrap: str, *args: str) -> tuple[tuple, tuple]:
    """(kproto configs, Kafka's ConfigCommand): each (status, stdout, last stderr line)."""
    status, out, err = run_command("configs", bootstrap, *args)
    r = kafka_ref.run_tool(CC, "--bootstrap-server", bootstrap, *args)
    theirs = (r.returncode, r.stdout, (r.stderr.strip().splitlines() or [""])[-1])
    return (status, out, err.strip()), theirs


def same(kafka_ref, bootstrap: str, *args: str, applied=lambda out: True) -> str:
    """Both print the same. Kafka's broker applies an alter through its controller after it
    answered, and both tools would agree on the old value: ask until they agree on an output
    that shows the change (``applied``)."""
    def equal():
        ours, theirs = both(kafka_ref, bootstrap, *args)
        return ours[:2] == theirs[:2] and applied(ours[1]) and ours[1] + "\0"
    return until(equal, what=f"equal output of {args}, the change applied")[:-1]


def test_client_metrics_configs_as_config_command(broker, kafka_ref):
    name = Peer.unique("cm")
    entity = ["--entity-type", "client-metrics", "--entity-name", name]
    try:
        _alter_and_describe(kafka_ref, broker, name, entity)
    finally:
        # the subscription matches every client (no match=): on the session's shared Kafka broker
        # it would make every later client push metrics (test_client_telemetry), so it goes
        run_command("configs", broker.bootstrap, "--alter", *entity, "--delete-config", "metrics,interval.ms")


def _alter_and_describe(kafka_ref, broker, name: str, entity: list[str]) -> None:
    status, out, err = run_command("configs", broker.bootstrap, "--alter", *entity, "--add-config",
                                   "metrics=[a.,b.],interval.ms=1000")
    assert (status, out, err) == (0, f"Completed updating config for client-metric {name}.\n", "")
    assert same(kafka_ref, broker.bootstrap, "--describe", *entity, applied=lambda out: "interval.ms=1000" in out) == (
        f"Dynamic configs for client-metric {name} are:\n"
        "  interval.ms=1000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=1000}\n"
        "  metrics=a.,b. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=a.,b.}\n")
    every = same(kafka_ref, broker.bootstrap, "--describe", "--entity-type", "client-metrics",
                 applied=lambda out: f"client-metric {name} are:" in out)
    assert f"Dynamic configs for client-metric {name} are:\n" in every
    r = kafka_ref.run_tool(CC, "--bootstrap-server", broker.bootstrap, "--alter", *entity,
                           "--delete-config", "interval.ms,match")      # match was never set: no error
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for client-metric {name}.\n")
    assert same(kafka_ref, broker.bootstrap, "--describe", *entity, "--all",
                applied=lambda out: "interval.ms=300000" in out) == (
        f"All configs for client-metric {name} are:\n  interval.ms=300000 sensitive=false synonyms={{}}\n"
        "  match= sensitive=false synonyms={}\n"
        "  metrics=a.,b. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=a.,b.}\n")
    missing = ["--entity-type", "client-metrics", "--entity-name", name + "-none"]
    assert same(kafka_ref, broker.bootstrap, "--describe", *missing) == (
        f"The client-metric '{name}-none' doesn't exist and doesn't have dynamic config.\n")
    ours, theirs = both(kafka_ref, broker.bootstrap, "--alter", *entity, "--add-config", "interval.ms=5")
    text = "InvalidRequestException: Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)"
    assert ours == (1, "", "kproto: error: " + text)
    assert (theirs[0], theirs[1], theirs[2]) == (1, "", "Caused by: org.apache.kafka.common.errors." + text)
