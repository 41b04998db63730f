"""kproto's client quotas on their own: Kafka's Rate arithmetic and quota precedence as
tables worked out by hand from Kafka's sources (SampledStat, Rate.windowSize,
QuotaUtils.throttleTime, DefaultQuotaCallback), and the quotas kept across a restart
with the dynamic broker configs, an entry Kafka would refuse dropped with a log line."""

from __future__ import annotations

import json

import pytest

from kproto import protocol as P
from kproto.client.transport import BrokerClient
from kproto.server.dynamic_config import DYNAMIC_CONFIGS_FILE
from kproto.server.quotas import (
    ClientQuotaManager, ControllerMutationQuotaManager, Rate, ThrottlingQuotaExceeded, entity,
)
from kproto.testing import broker as kproto_broker


def test_rate_is_kafkas_sampled_rate():
    r = Rate(samples=11, window_ms=1000)
    r.record(5000, 0)
    assert r.window_size_ms(0) == 10_000 and r.measure(0) == 500.0        # at least samples - 1 windows
    r.record(1000, 1500)                                                     # a second window begins
    assert r.window_size_ms(1500) == 10_500 and r.measure(1500) == 6000 / 10.5
    # a window without an event for samples * window_ms is reset (purgeObsoleteSamples): at 12 s the
    # first (its last event at 0), at 12.5 s the second; the rate spans from the oldest window kept
    assert r.measure(12_000) == 1000 / 10.5 and r.window_size_ms(12_000) == 10_500
    assert r.measure(12_500) == 0.0 and r.window_size_ms(12_500) == 10_500


def test_throttle_time_is_quotautils():
    quotas = {entity([("client-id", "c")]): {"producer_byte_rate": 1000.0}}
    m = ClientQuotaManager("producer_byte_rate", quotas, samples=11, window_s=1)
    assert m.record("u", "c", 10_000, 0) == 0                    # exactly the bound: acceptable
    assert m.record("u", "c", 2_345, 0) == 2345                  # (1234.5 - 1000) / 1000 * 10000
    assert m.record("u", "other", 10**9, 0) == 0                 # no quota for that client
    r = ClientQuotaManager("request_percentage", {entity([("user", "u")]): {"request_percentage": 1.0}},
                           samples=11, window_s=1, max_throttle_ms=1000)
    assert r.record("u", "", 500.0, 0) == 1000                   # bounded by one window
    assert m.max_value_in_window("u", "c") == 10_000 and r.max_value_in_window("x", "") == float("inf")


PRECEDENCE = [   # DefaultQuotaCallback, most specific first: (entity, the tags it gives user u, client c)
    ([("user", "u"), ("client-id", "c")], ("u", "c")),
    ([("user", "u"), ("client-id", None)], ("u", "c")),
    ([("user", "u")], ("u", "")),
    ([("user", None), ("client-id", "c")], ("u", "c")),
    ([("user", None), ("client-id", None)], ("u", "c")),
    ([("user", None)], ("u", "")),
    ([("client-id", "c")], ("", "c")),
    ([("client-id", None)], ("", "c")),
]


@pytest.mark.parametrize("level", range(len(PRECEDENCE)))
def test_the_most_specific_quota_wins(level):
    """With every entity from ``level`` down set (each to its own bound), the request of user u
    with client c counts against entity ``level``."""
    quotas = {entity(e): {"consumer_byte_rate": float(100 + i)} for i, (e, _) in enumerate(PRECEDENCE)
              if i >= level}
    m = ClientQuotaManager("consumer_byte_rate", quotas, samples=11, window_s=1)
    tags = m.tags("u", "c")
    assert (tags, m.limit(tags)) == (PRECEDENCE[level][1], 100.0 + level)
    # another key's quotas do not count
    assert ClientQuotaManager("producer_byte_rate", quotas, samples=11, window_s=1).limit(tags) is None


def test_quotas_survive_a_restart_beside_the_dynamic_configs(tmp_path, caplog):
    data = tmp_path / "data"
    with kproto_broker(data_dir=data) as b:
        with BrokerClient(b.bootstrap_servers) as c:
            r = c.request(P.alter_client_quotas.API.key, {"validate_only": False, "entries": [
                {"entity": [{"entity_type": "user", "entity_name": None}, {"entity_type": "client-id",
                                                                           "entity_name": "app"}],
                 "ops": [{"key": "consumer_byte_rate", "value": 4096.0, "remove": False}]},
                {"entity": [{"entity_type": "ip", "entity_name": "::1"}],
                 "ops": [{"key": "connection_creation_rate", "value": 7.0, "remove": False}]}]})
            assert [e.error_code for e in r.entries] == [0, 0]
            c.request(P.incremental_alter_configs.API.key, {"validate_only": False, "resources": [
                {"resource_type": 4, "resource_name": "", "configs": [
                    {"name": "log.cleaner.threads", "config_operation": 0, "value": "2"}]}]})
        doc = json.loads((data / DYNAMIC_CONFIGS_FILE).read_text())
        assert doc["default"] == {"log.cleaner.threads": "2"}
        assert sorted(doc["client_quotas"], key=repr) == sorted([
            {"entity": {"client-id": "app", "user": None}, "values": {"consumer_byte_rate": 4096.0}},
            {"entity": {"ip": "::1"}, "values": {"connection_creation_rate": 7.0}}], key=repr)
        # an entry Kafka would refuse, written by hand: dropped at start-up with a log line
        doc["client_quotas"].append({"entity": {"client-id": "x"}, "values": {"producer_byte_rate": -1}})
        b.stop()
        (data / DYNAMIC_CONFIGS_FILE).write_text(json.dumps(doc))
        b.start()
        with BrokerClient(b.bootstrap_servers) as c:
            r = c.request(P.describe_client_quotas.API.key, {"components": [], "strict": False})
        got = {tuple((d.entity_type, d.entity_name) for d in e.entity): {v.key: v.value for v in e["values"]}
               for e in r.entries}
        assert got == {(("client-id", "app"), ("user", None)): {"consumer_byte_rate": 4096.0},
                       (("ip", "::1"),): {"connection_creation_rate": 7.0}}
        assert "client quota ClientQuotaEntity(entries={client-id=x}) in" in b.log_text() and \
            "is ignored: Quota producer_byte_rate must be greater than 0" in b.log_text()


def test_mutation_quota_is_kafkas_token_bucket():
    """ControllerMutationQuotaManager: 2 partitions a second, a burst of 11 s of them (22); the
    bucket starts full (Kafka's is empty at the epoch), a strict quota refuses below zero."""
    t = 1_700_000_000_000
    m = ControllerMutationQuotaManager({entity([("client-id", "c")]): {"controller_mutation_rate": 2.0}},
                                       samples=11, window_s=1)
    strict = m.quota_for("u", "c", strict=True)
    strict.apply(30, t)                                  # 22 - 30 = -8
    assert strict.throttle_time_ms(t) == 0
    with pytest.raises(ThrottlingQuotaExceeded):
        strict.apply(1, t)
    assert strict.throttle_time_ms(t) == 4000 and strict.throttle_time_ms(t + 1500) == 2500
    m.quota_for("u", "c", strict=True).apply(1, t + 4000)          # back at 0: taken, -1
    permissive = m.quota_for("u", "c", strict=False)
    permissive.apply(3, t + 4000)                                   # -4: allowed, throttled 2 s
    assert permissive.throttle_time_ms(t + 4000) == 2000
    m.quota_for("u", "other", strict=True).apply(10**6, t)          # no quota for that client
