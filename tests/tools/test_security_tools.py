"""`kproto users`, `kproto acls` and `kproto topics/groups --command-config`
against a secured kproto broker (SASL_SSL, SCRAM), with Kafka 4.4's output lines
(ConfigCommand and AclCommand, measured against Kafka's own tools in
tests/parity/test_kafka_ref_tools.py: "Completed updating config for user X.",
"SCRAM credential configs for user-principal 'X' are ...", nothing for a user
without credentials, "Adding ACLs for resource `ResourcePattern(...)`: ...",
AccessControlEntry's "(principal=..., host=..., operation=..., permissionType=...)")."""

from __future__ import annotations

import subprocess

import pytest

from tests import components
from tests.security_fixtures import SECRETS, secure_broker

pytestmark = pytest.mark.slow
CAROL_PW = "carol-Secr3t!"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with secure_broker(tmp_path_factory.mktemp("secure-tools")) as c:
        yield c


def kproto(*args, input=None):
    r = subprocess.run([str(components.VENV_BIN / "kproto"), *args], capture_output=True, text=True, timeout=60,
                       input=input)
    for secret in SECRETS + (CAROL_PW,):
        assert secret not in r.stdout and secret not in r.stderr
    return r


def props(tmp_path, cluster, **extra):
    lines = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "ssl.ca.location": str(cluster.ca),
             **extra}
    path = tmp_path / "client.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return str(path)


def test_users_add_describe_delete(cluster):
    boot = cluster.bootstrap("PLAINTEXT")
    r = kproto("users", "--bootstrap-server", boot, "--alter", "--add-config",
               f"SCRAM-SHA-256=[iterations=8192,password={CAROL_PW}],SCRAM-SHA-512=[password={CAROL_PW}]",
               "--entity-type", "users", "--entity-name", "carol")
    assert (r.returncode, r.stdout, r.stderr) == (0, "Completed updating config for user carol.\n", "")
    r = kproto("users", "--bootstrap-server", boot, "--describe", "--entity-type", "users", "--entity-name", "carol")
    assert r.stdout == ("SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192, "
                        "SCRAM-SHA-512=iterations=4096\n")
    # DescribeUserScramCredentialsResult.users() leaves out a user without credentials
    r = kproto("users", "--bootstrap-server", boot, "--describe", "--entity-name", "nobody")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = kproto("users", "--bootstrap-server", boot, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]",
               "--entity-name", "carol")
    assert r.returncode == 1 and r.stderr == ("kproto: error: Iterations 100 is less than the minimum 4096 required "
                                              "for SCRAM-SHA-256\n")
    r = kproto("users", "--bootstrap-server", boot, "--alter", "--add-config", "SCRAM-SHA-256=[passwrd=x]",
               "--entity-name", "carol")
    assert r.returncode == 1 and "<hidden>" in r.stderr and "passwrd" not in r.stderr


def test_acls_add_list_and_secured_tools(cluster, tmp_path):
    boot = cluster.bootstrap("PLAINTEXT")
    assert kproto("users", "--bootstrap-server", boot, "--alter", "--add-config", f"SCRAM-SHA-512=[password={CAROL_PW}]",
                  "--entity-name", "carol").returncode == 0
    r = kproto("topics", "--bootstrap-server", boot, "--create", "--topic", "carol-t", "--partitions", "1")
    assert r.returncode == 0, r.stderr
    r = kproto("acls", "--bootstrap-server", boot, "--add", "--allow-principal", "User:carol", "--consumer",
               "--topic", "carol-t", "--group", "carol-g")
    assert r.returncode == 0, r.stderr
    # kafka-topics.sh --describe reads the topic's configs too (TopicCommand.describeTopic)
    topic = "ResourcePattern(resourceType=TOPIC, name=carol-t, patternType=LITERAL)"
    group = "ResourcePattern(resourceType=GROUP, name=carol-g, patternType=LITERAL)"
    read = "(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)"
    describe = "(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)"
    dc = "(principal=User:carol, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)"
    # resources and entries sorted as printed; no listing after --add
    assert r.stdout == (f"Adding ACLs for resource `{group}`: \n \t{read}\n\n"
                        f"Adding ACLs for resource `{topic}`: \n \t{describe}\n\t{read}\n\n")
    r = kproto("acls", "--bootstrap-server", boot, "--add", "--allow-principal", "User:carol", "--operation",
               "DescribeConfigs", "--operation", "Read", "--topic", "carol-t")
    assert (r.returncode, r.stdout) == (0, f"Acl (pattern={topic}, entry={read}) already exists.\n"
                                           f"Adding ACLs for resource `{topic}`: \n \t{dc}\n\n"), r.stderr
    r = kproto("acls", "--bootstrap-server", boot, "--list", "--topic", "carol-t")
    assert r.stdout == f"Current ACLs for resource `{topic}`:\n\t{describe}\n\t{dc}\n\t{read}\n\n"
    # kproto topics over SASL_SSL with --command-config: carol sees only what she may describe
    conf = props(tmp_path, cluster, **{"sasl.username": "carol", "sasl.password": CAROL_PW})
    r = kproto("topics", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", conf, "--list")
    assert (r.returncode, r.stdout) == (0, "carol-t\n"), r.stderr
    # the JAAS form works too
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="carol" '
            f'password="{CAROL_PW}";')
    conf = props(tmp_path, cluster, **{"sasl.jaas.config": jaas})
    r = kproto("topics", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", conf,
               "--describe", "--topic", "carol-t")
    assert r.returncode == 0 and "Topic: carol-t" in r.stdout, r.stderr
    # kproto groups over SASL_SSL: ListGroups filtered to groups carol may describe (none yet), no error
    r = kproto("groups", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", conf, "--list")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    # carol is not allowed to create topics: Kafka's error, one line
    r = kproto("topics", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", conf,
               "--create", "--topic", "carol-new", "--partitions", "1")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert "authoriz" in r.stderr.lower()
    r = kproto("acls", "--bootstrap-server", boot, "--remove", "--force", "--topic", "carol-t")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert kproto("acls", "--bootstrap-server", boot, "--list", "--topic", "carol-t").stdout == ""


def test_secured_tool_failures_are_one_line(cluster, tmp_path):
    wrong = props(tmp_path, cluster, **{"sasl.username": "carol", "sasl.password": "wrong-pw"})
    r = kproto("topics", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", wrong, "--list")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1
    assert r.stderr.endswith(": Authentication failed during authentication due to invalid credentials with SASL "
                             "mechanism SCRAM-SHA-512\n")
    untrusted = props(tmp_path, cluster, **{"sasl.username": "carol", "sasl.password": CAROL_PW,
                                            "ssl.ca.location": str(cluster.other_ca)})
    r = kproto("groups", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", untrusted, "--list")
    assert r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "CERTIFICATE_VERIFY_FAILED" in r.stderr
    none = props(tmp_path, cluster)
    r = kproto("topics", "--bootstrap-server", cluster.bootstrap("SASL_SSL"), "--command-config", none, "--list")
    assert r.returncode != 0 and "needs sasl.username and sasl.password" in r.stderr


def test_no_credential_in_broker_log(cluster):
    text = cluster.log_text()
    for secret in SECRETS + (CAROL_PW,):
        assert secret not in text
