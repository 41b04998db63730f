"""BROKER_LOGGER config resources (type 8) over raw DescribeConfigs, AlterConfigs and
IncrementalAlterConfigs: kproto's broker answers as Kafka 4.4's (ConfigHelper,
RuntimeLoggerManager, ConfigAdminManager), each case run against both."""

from __future__ import annotations

import pytest

from kproto.client.transport import BrokerClient
from tests.components import KAFKA, KPROTO

pytestmark = pytest.mark.brokers(KPROTO, KAFKA)

DESCRIBE, ALTER, INCREMENTAL = 32, 33, 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LEVELS = "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"


def incremental(c: BrokerClient, name: str, *ops: tuple[int, str, str | None]) -> tuple[int, str | None]:
    r = c.request(INCREMENTAL, {"resources": [{"resource_type": 8, "resource_name": name, "configs": [
        {"name": n, "value": v, "config_operation": o} for o, n, v in ops]}], "validate_only": True})
    return r.responses[0].error_code, r.responses[0].error_message


def describe(c: BrokerClient, name: str, keys=None):
    return c.request(DESCRIBE, {"resources": [{"resource_type": 8, "resource_name": name, "configuration_keys": keys}],
                                "include_synonyms": True, "include_documentation": True}).results[0]


def test_describe(broker):
    with BrokerClient(broker.bootstrap) as c:
        root = describe(c, "1", ["root"])
        assert root.error_code == 0
        [e] = root.configs
        assert (e.name, e.value in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"), e.read_only,
                e.config_source, e.is_default, e.is_sensitive, e.synonyms, e.config_type, e.documentation) == \
            ("root", True, False, 6, False, False, [], 0, "")
        assert [(r.error_code, r.error_message, r.configs) for r in (describe(c, n) for n in ("", "x", "2"))] == [
            (42, "Broker id must not be empty", []),
            (42, "Broker id must be an integer, but it is: x", []),
            (42, "Unexpected broker id, expected 1 but received 2", [])]


def test_alter_refusals(broker):
    with BrokerClient(broker.bootstrap) as c:
        assert [incremental(c, "1", *ops) for ops in (
            [(APPEND, "root", "DEBUG")], [(SUBTRACT, "root", "DEBUG")], [(SET, "no.such", "DEBUG")],
            [(DELETE, "no.such", None)], [(SET, "root", "debug")], [(DELETE, "root", None)])] == [
            (42, "APPEND operation is not allowed for the BROKER_LOGGER resource"),
            (42, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource"),
            (40, "Logger no.such does not exist!"),
            (40, "Logger no.such does not exist!"),
            (40, f"Cannot set the log level of root to debug as it is not a supported log level. {LEVELS}"),
            (42, "Removing the log level of the root logger is not allowed")]
        assert incremental(c, "x", (SET, "root", "INFO")) == (42, "Node id must be an integer, but it is: x")
        assert incremental(c, "2", (SET, "root", "INFO")) == (42, "Unexpected node id. Expected 1, but received 2")
        assert incremental(c, "1", (SET, "root", "TRACE")) == (0, None)      # validate_only: nothing changes
        # the legacy AlterConfigs has no BROKER_LOGGER (ConfigAdminManager.preprocess)
        r = c.request(ALTER, {"resources": [{"resource_type": 8, "resource_name": "1", "configs": [
            {"name": "root", "value": "DEBUG"}]}], "validate_only": False})
        assert [(x.error_code, x.error_message) for x in r.responses] == [(42, "Unknown resource type 8")]
