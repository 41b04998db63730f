"""kproto configs against Kafka 4.4's ConfigCommand, on kproto's broker and Kafka's: what one tool
alters the other describes, and both describe it in the same bytes (topics, --all, brokers, the
broker default, SCRAM users, user and client quotas, a missing topic); errors one line."""

from __future__ import annotations

import pytest

from kproto.testing import FIXTURE_DEFAULTS, Broker
from kproto.tools.configs import java_double, parse_add_config
from tests import components
from tests.helpers import until
from tests.tools.helpers import run_command
from tests.tools.test_console_tools import create

CC = "org.apache.kafka.tools.ConfigCommand"


def ours(bootstrap: str, *args: str) -> str:
    status, out, err = run_command("configs", bootstrap, *args)
    assert (status, err) == (0, ""), err
    return out


def theirs(kafka_ref, bootstrap: str, *args: str) -> str:
    r = kafka_ref.run_tool(CC, "--bootstrap-server", bootstrap, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def same(kafka_ref, bootstrap: str, *args: str, applied=lambda out: True) -> str:
    """Both tools print the same. Kafka's broker applies an alter through its controller and
    metadata log, so a describe right after it may still show the old value, and both tools
    would agree on it: ask again until they agree on an output that shows the change (``applied``)."""
    return until(lambda: (mine := ours(bootstrap, *args)) == theirs(kafka_ref, bootstrap, *args) and applied(mine)
                 and mine + "\0", what=f"equal output of {args}, the change applied")[:-1]


def check(kafka_ref, b: str) -> None:
    create(b, "ck", 1)
    create(b, "co", 1)
    add = ["--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]"]
    assert theirs(kafka_ref, b, "--alter", "--entity-type", "topics", "--entity-name", "ck", *add) == \
        "Completed updating config for topic ck.\n"
    assert ours(b, "--alter", "--entity-type", "topics", "--entity-name", "co", *add) == \
        "Completed updating config for topic co.\n"
    k = same(kafka_ref, b, "--describe", "--entity-type", "topics", "--entity-name", "ck",
             applied=lambda out: "retention.ms=1000" in out)
    o = same(kafka_ref, b, "--describe", "--topic", "co", applied=lambda out: "retention.ms=1000" in out)
    assert o == k.replace("topic ck", "topic co")
    assert o.splitlines()[:2] == ["Dynamic configs for topic co are:",
                                  "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                                  "cleanup.policy=compact,delete" + o.splitlines()[1].split("compact,delete", 2)[2]]
    assert ours(b, "--alter", "--topic", "co", "--delete-config", "retention.ms") == \
        "Completed updating config for topic co.\n"
    o = same(kafka_ref, b, "--describe", "--topic", "co", applied=lambda out: "retention.ms" not in out)
    assert o.startswith("Dynamic configs for topic co are:\n  cleanup.policy=compact,delete ")
    same(kafka_ref, b, "--describe", "--entity-type", "topics", "--entity-name", "co", "--all")
    assert same(kafka_ref, b, "--describe", "--topic", "nope") == \
        "The topic 'nope' doesn't exist and doesn't have dynamic config.\n"

    assert ours(b, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
                "log.cleaner.threads=2") == "Completed updating config for broker 1.\n"
    assert "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2" in \
        same(kafka_ref, b, "--describe", "--broker", "1", applied=lambda out: "log.cleaner.threads" in out)
    assert ours(b, "--alter", "--broker-defaults", "--add-config", "log.retention.ms=99999999") == \
        "Completed updating default config for brokers in the cluster.\n"
    assert same(kafka_ref, b, "--describe", "--entity-type", "brokers", "--entity-default",
                applied=lambda out: "log.retention.ms" in out).startswith(
        "Default configs for brokers in the cluster are:\n  log.retention.ms=99999999 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=99999999}\n")
    same(kafka_ref, b, "--describe", "--entity-type", "brokers")
    assert ours(b, "--alter", "--broker", "1", "--delete-config", "log.cleaner.threads") == \
        "Completed updating config for broker 1.\n"
    assert same(kafka_ref, b, "--describe", "--broker", "1", applied=lambda out: "log.cleaner.threads" not in out) \
        == "Dynamic configs for broker 1 are:\n"

    assert ours(b, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
                "SCRAM-SHA-256=[iterations=8192,password=pw]") == "Completed updating config for user alice.\n"
    scram = "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192\n"
    assert same(kafka_ref, b, "--describe", "--user", "alice", applied=lambda out: "SCRAM" in out) == scram
    assert ours(b, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=1024") == \
        "Completed updating config for user alice.\n"
    assert ours(b, "--alter", "--entity-type", "clients", "--entity-name", "c1", "--add-config",
                "consumer_byte_rate=20000000") == "Completed updating config for client c1.\n"
    assert same(kafka_ref, b, "--describe", "--entity-type", "users", applied=lambda out: "producer_byte_rate" in out) == \
        "Quota configs for user-principal 'alice' are producer_byte_rate=1024.0\n" + scram
    assert same(kafka_ref, b, "--describe", "--client", "c1", applied=lambda out: "consumer_byte_rate" in out) == \
        "Quota configs for client-id 'c1' are consumer_byte_rate=2.0E7\n"
    assert ours(b, "--alter", "--client", "c1", "--delete-config", "consumer_byte_rate") == \
        "Completed updating config for client c1.\n"
    assert same(kafka_ref, b, "--describe", "--client", "c1", applied=lambda out: "consumer_byte_rate" not in out) == ""


def test_kproto_broker(kafka_ref, tmp_path):
    with Broker(tmp_path / "data", FIXTURE_DEFAULTS, log_path=tmp_path / "broker.log") as b:
        check(kafka_ref, b.bootstrap_servers)


def test_kafka_broker(kafka_ref, tmp_path):
    with kafka_ref.broker(tmp_path / "kafka") as k:
        check(kafka_ref, k.bootstrap)


@pytest.mark.xfail(strict=True, reason="tansu 0.6 answers IncrementalAlterConfigs with NONE and keeps nothing: "
                   "DescribeConfigs right after shows no dynamic config (Kafka's tool prints the same)")
def test_tansu_broker(kafka_ref, tmp_path):
    with components.tansu(tmp_path) as b:
        check(kafka_ref, b, quotas=False)


def test_tansu_broker_same_lines(kafka_ref, tmp_path):
    """What tansu does answer, both tools print alike; where its answer does not decode, one line."""
    with components.tansu(tmp_path) as b:
        create(b, "co", 1)
        node = ours(b, "--describe", "--entity-type", "brokers").split()[4]
        for args in (["--alter", "--topic", "co", "--add-config", "retention.ms=1000"], ["--describe", "--topic", "co"],
                     ["--describe", "--topic", "co", "--all"], ["--describe", "--topic", "nope"],
                     ["--describe", "--entity-type", "brokers"], ["--describe", "--broker-defaults"],
                     ["--alter", "--broker", node, "--add-config", "log.cleaner.threads=2"],
                     ["--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=pw]"]):
            assert ours(b, *args) == theirs(kafka_ref, b, *args), args
        assert ours(b, "--describe", "--topic", "nope") == \
            "The topic 'nope' doesn't exist and doesn't have dynamic config.\n"
        # tansu answers DescribeUserScramCredentials with a null results array (not nullable in any version)
        assert run_command("configs", b, "--describe", "--user", "alice") == (
            4, "", "kproto: error: DescribeUserScramCredentials v0 response @ byte 13: results: invalid array count -1\n")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("configs")
    with Broker(base / "data", FIXTURE_DEFAULTS, log_path=base / "broker.log") as b:
        create(b.bootstrap_servers, "cerr", 1)
        yield b


@pytest.mark.parametrize("args, status, line", [
    (["--describe"], 2, "At least one entity type must be specified"),
    (["--describe", "--alter", "--topic", "t"], 2, "Command must include exactly one action: --describe, --alter"),
    (["--alter", "--entity-type", "topics"], 2, "An entity name must be specified for every entity type"),
    (["--alter", "--topic", "t", "--add-config", "a"], 2,
     'requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".'),
    (["--describe", "--entity-type", "brokers", "--entity-name", "b1"], 2,
     "The entity name for brokers must be a valid integer broker id, found: b1"),
    (["--alter", "--topic", "cerr", "--add-config", "bogus.x=1"], 1,
     "kproto: error: InvalidConfigurationException: Unknown topic config name: bogus.x"),
    (["--alter", "--topic", "cerr", "--delete-config", "retention.ms"], 1, "Invalid config(s): retention.ms"),
    (["--alter", "--user", "u", "--add-config", "bogus=1"], 1,
     "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. "
     "Unexpected config names: bogus"),
    (["--alter", "--ip", "not an address", "--add-config", "connection_creation_rate=1"], 1,
     "The entity name for ips must be a valid IP or resolvable host, but it is: not an address"),
    # Kafka 4.4's lines (its flag checks exit 1; kproto's bad flags exit 2)
    (["--describe", "--entity-type", "broker-loggers"], 2,
     "An entity name must be specified with --describe of broker-loggers"),
    (["--describe", "--entity-type", "broker-loggers", "--entity-name", "x"], 2,
     "The entity name for broker-loggers must be a valid integer broker id, but it is: x"),
    (["--alter", "--entity-type", "broker-loggers", "--entity-default", "--add-config", "root=DEBUG"], 2,
     "An entity name must be specified with --alter of broker-loggers"),
    (["--describe", "--entity-type", "groups", "--entity-default"], 2,
     "--entity-default must not be specified with --describe of groups"),
    (["--alter", "--entity-type", "groups", "--entity-default", "--add-config", "share.delivery.count.limit=4"], 2,
     "An entity name must be specified with --alter of groups"),
    (["--alter", "--group", "g", "--add-config", "no.such=1"], 1,
     "kproto: error: InvalidConfigurationException: Unknown group config name: no.such"),
    (["--alter", "--broker-logger", "1", "--add-config", "root=LOUD"], 1,
     "kproto: error: InvalidConfigurationException: Cannot set the log level of root to LOUD as it is not a "
     "supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"),
    (["--alter", "--broker-logger", "1", "--delete-config", "root"], 1,
     "kproto: error: InvalidRequestException: Removing the log level of the root logger is not allowed"),
    # only kproto's own loggers are the broker's
    (["--alter", "--broker-logger", "1", "--add-config", "asyncio=DEBUG,no.such=INFO"], 1,
     "Invalid broker logger(s): asyncio,no.such"),
])
def test_errors_are_one_line(broker, args, status, line):
    assert run_command("configs", broker.bootstrap_servers, *args) == (status, "", line + "\n")


def test_group_configs(broker):
    """A group's configs set, shown and removed (a key not set deletes as a no-op, as on Kafka's
    broker); a group without members or configs is missing."""
    b = broker.bootstrap_servers
    assert ours(b, "--describe", "--entity-type", "groups", "--entity-name", "gcfg") == \
        "The group 'gcfg' doesn't exist and doesn't have dynamic config.\n"
    assert ours(b, "--alter", "--entity-type", "groups", "--entity-name", "gcfg", "--add-config",
                "consumer.heartbeat.interval.ms=6000,share.delivery.count.limit=4") == \
        "Completed updating config for group gcfg.\n"
    shown = ("Dynamic configs for group gcfg are:\n"
             "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
             "consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n"
             "  share.delivery.count.limit=4 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
             "share.delivery.count.limit=4, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n")
    assert ours(b, "--describe", "--group", "gcfg") == shown
    assert ours(b, "--describe", "--entity-type", "groups") == shown       # listed by ListConfigResources
    assert ours(b, "--alter", "--group", "gcfg", "--delete-config",
                "share.auto.offset.reset,share.delivery.count.limit") == "Completed updating config for group gcfg.\n"
    assert ours(b, "--describe", "--group", "gcfg") == \
        "Dynamic configs for group gcfg are:\n" + shown.splitlines(keepends=True)[1]
    # kafka-configs.sh's --all line for a default (Kafka's GroupConfig.brokerSynonym)
    assert "  share.delivery.count.limit=5 sensitive=false synonyms={DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n" in \
        ours(b, "--describe", "--group", "gcfg", "--all")


def test_broker_loggers(broker):
    """kproto's loggers as a broker logger: root and the kproto.* loggers the broker made, sorted,
    each at its effective level; a SET level is inherited below, a DELETE gives it back."""
    b = broker.bootstrap_servers

    def levels() -> dict[str, str]:
        lines = ours(b, "--describe", "--broker-logger", "1").splitlines()
        assert lines[0] == "Dynamic configs for broker-logger 1 are:"
        assert all(line.endswith(" sensitive=false synonyms={}") for line in lines[1:])
        named = [line.split()[0].split("=") for line in lines[1:]]
        assert [n for n, _ in named] == sorted(n for n, _ in named)          # by name, as ConfigCommand
        return dict(named)

    before = levels()
    assert before["root"] == "INFO" and before["kproto.server"] == "INFO"      # the broker's --log-level info
    assert all(name in ("root", "kproto") or name.startswith("kproto.") for name in before)
    assert ours(b, "--alter", "--broker-logger", "1", "--add-config", "kproto.server=TRACE") == \
        "Completed updating config for broker-logger 1.\n"
    after = levels()
    assert after["kproto.server"] == "TRACE" and after["root"] == "INFO"
    assert {n: v for n, v in after.items() if n.startswith("kproto.server.")} == \
        {n: "TRACE" for n in after if n.startswith("kproto.server.")} != {}
    assert ours(b, "--alter", "--broker-logger", "1", "--delete-config", "kproto.server") == \
        "Completed updating config for broker-logger 1.\n"
    assert levels() == {**after, **{n: before.get(n, "INFO") for n in after if n.startswith("kproto.server")}}
    assert ours(b, "--describe", "--broker-logger", "2") == \
        "The broker-logger '2' doesn't exist and doesn't have dynamic config.\n"


def test_parsing():
    assert parse_add_config("a=1, b = [x,y] ,c=") == {"a": "1", "b": "x,y", "c": ""}
    assert [java_double(v) for v in (1024.0, 0.5, 2e7, 1.5e-4, 12345678.9)] == \
        ["1024.0", "0.5", "2.0E7", "1.5E-4", "1.23456789E7"]
