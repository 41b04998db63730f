"""``kproto reassign-partitions`` and ``kproto leader-election`` against Kafka's own tool
classes (ReassignPartitionsCommand, LeaderElectionCommand, Kafka 4.4 via tests/kafka_ref.py)
run on the same three-node kproto cluster: the same stdout, line for line, from the same
cluster state. Kafka's tool adds a stack trace after an error line; kproto prints the line
alone (its first line is compared). The throttle configs --verify/--cancel clear
go through the controller, so a completed --verify clears them on every node; the runs
mid-reassignment use --preserve-throttles, so that the configs stay as Kafka's tool left them."""

from __future__ import annotations

import json

import pytest

from kproto.client.admin import Admin, NewTopic
from kproto.client.transport import BrokerClient
from kproto.schemas import protocol as P
from kproto.testing import Cluster
from tests.tools.helpers import run_command

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with Cluster(brokers=3, data_dir=tmp_path_factory.mktemp("tools"),
                 config={"auto.leader.rebalance.enable": "false"}) as c:
        yield c


def both(kafka_ref, bootstrap: str, main: str, command: str, *args: str):
    """(kafka's rc, stdout, stderr), (kproto's rc, stdout, stderr) of the same arguments."""
    k = kafka_ref.run_tool(main, "--bootstrap-server", bootstrap, *args)
    return (k.returncode, k.stdout, k.stderr), run_command(command, bootstrap, *args)


def kafka(kafka_ref, bootstrap: str, main: str, *args: str):
    k = kafka_ref.run_tool(main, "--bootstrap-server", bootstrap, *args)
    return k.returncode, k.stdout


def start_in_flight(cluster: Cluster, plan: dict[tuple[str, int], list[int]]) -> None:
    with BrokerClient(cluster.bootstrap_servers) as client:
        r = client.request(P.alter_partition_reassignments.API.key, {"timeout_ms": 30000, "topics": [
            {"name": t, "partitions": [{"partition_index": p, "replicas": rs}]} for (t, p), rs in plan.items()]})
    assert all(p.error_code == 0 for t in r.responses for p in t.partitions)


def replicas_are(cluster: Cluster, topic: str, partition: int, replicas: tuple[int, ...]):
    cluster.wait_for(lambda md: True if md.topics[topic].partitions[partition].replicas == replicas else None,
                     f"{topic}-{partition} on {replicas}")


def test_reassign_partitions_prints_what_kafkas_tool_prints(cluster, kafka_ref, tmp_path):
    bs = cluster.bootstrap_servers
    with BrokerClient(bs) as client:
        created = Admin(client).create_topics([NewTopic("ra", 2, 2, assignments={0: [1, 2], 1: [2, 3]}),
                                               NewTopic("rb", 1, 1, assignments={0: [1]})])
    assert {t: r.error.name for t, r in created.items()} == {"ra": "NONE", "rb": "NONE"}
    cluster.wait_for_isr("ra", 0, [1, 2])
    cluster.wait_for_isr("ra", 1, [2, 3])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "ra", "partition": 0, "replicas": [3, 2]},
                                                             {"topic": "rb", "partition": 0, "replicas": [1, 3]}]}))
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "ra"}, {"topic": "rb"}]}))

    # --generate: the current assignment is Kafka's line for line; the proposal is random in
    # Kafka (AdminUtils' random start index), so its shape is compared
    k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", "--generate", "--topics-to-move-json-file",
                   str(topics), "--broker-list", "1,2,3")
    assert (ours[0], k[0]) == (0, 0), (ours, k)
    assert ours[1].splitlines()[:3] == k[1].splitlines()[:3]
    assert ours[1].splitlines()[3:4] == k[1].splitlines()[3:4] == ["Proposed partition reassignment configuration"]

    def shape(text: str):
        return [(p["topic"], p["partition"], len(p["replicas"]), set(p["replicas"]) <= {1, 2, 3}, p["log_dirs"])
                for p in json.loads(text.splitlines()[4])["partitions"]]
    assert shape(ours[1]) == shape(k[1])

    k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", "--list")
    assert ours == (0, "No partition reassignments found.\n", "") and k[:2] == (0, ours[1])

    # in flight: node 3, which both partitions add, is down
    cluster.stop(3)
    start_in_flight(cluster, {("ra", 0): [3, 2], ("rb", 0): [1, 3]})
    replicas_are(cluster, "rb", 0, (1, 3))
    for args in (["--list"], ["--verify", "--reassignment-json-file", str(plan), "--preserve-throttles"],
                 ["--execute", "--reassignment-json-file", str(plan)]):
        k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", *args)
        assert (ours[0], ours[1]) == (k[0], k[1]), args
    assert ours[1].startswith("Cannot execute because there is an existing partition assignment.")
    assert run_command("reassign-partitions", bs, "--list")[1] == (
        "Current partition reassignments:\n"
        "ra-0: replicas: 3,2,1. adding: 3. removing: 1.\n"
        "rb-0: replicas: 1,3. adding: 3.\n")
    # kafka-topics --describe shows them too (TopicCommand lists the reassignments)
    k, ours = both(kafka_ref, bs, TOPICS, "topics", "--describe", "--topic", "ra")
    assert ours[1] == k[1] and "Adding Replicas: 3\tRemoving Replicas: 1" in ours[1]

    # --cancel: Kafka's tool cancels, then kproto's finds none; started again, the other way round
    cancel = ["--cancel", "--reassignment-json-file", str(plan), "--preserve-throttles"]
    k_first = kafka(kafka_ref, bs, REASSIGN, *cancel)
    assert k_first == (0, "Successfully cancelled partition reassignments for: ra-0,rb-0\n"
                          "None of the specified partition moves are active.")
    replicas_are(cluster, "rb", 0, (1,))
    assert run_command("reassign-partitions", bs, *cancel)[:2] == (
        0, "None of the specified partition reassignments are active.\n"
           "None of the specified partition moves are active.")
    start_in_flight(cluster, {("ra", 0): [3, 2], ("rb", 0): [1, 3]})
    replicas_are(cluster, "rb", 0, (1, 3))
    assert run_command("reassign-partitions", bs, *cancel)[:2] == k_first
    replicas_are(cluster, "rb", 0, (1,))

    # refusals: Kafka's first line (then its stack trace)
    bad = tmp_path / "bad.json"
    for partitions, line in (([{"topic": "ra", "partition": 0, "replicas": [7, 2]}], "Error: Unknown broker id 7"),
                             ([{"topic": "zz", "partition": 0, "replicas": [1]}],
                              "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                              "Topic zz not found.")):
        bad.write_text(json.dumps({"version": 1, "partitions": partitions}))
        k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", "--execute", "--reassignment-json-file",
                       str(bad))
        assert (ours[0], ours[1]) == (1, line + "\n") and (k[0], k[1].splitlines()[0]) == (1, line)

    # node 3 back: Kafka's tool executes the plan, it completes; rolled back with the JSON
    # it printed, kproto's executes the same plan from the same state
    cluster.start(3)
    execute = ["--execute", "--reassignment-json-file", str(plan)]
    k_exec = kafka(kafka_ref, bs, REASSIGN, *execute)
    assert k_exec[0] == 0 and k_exec[1].endswith("Successfully started partition reassignments for ra-0,rb-0\n")
    replicas_are(cluster, "ra", 0, (3, 2))
    replicas_are(cluster, "rb", 0, (1, 3))
    verify = ["--verify", "--reassignment-json-file", str(plan)]
    k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", *verify)
    # topic configs go through the controller, so both tools clear the throttles on every node
    assert (ours[0], ours[1]) == (k[0], k[1])
    assert ours[1].startswith("Status of partition reassignment:\n"
                              "Reassignment of partition ra-0 is completed.\n"
                              "Reassignment of partition rb-0 is completed.\n\n"
                              "Clearing broker-level throttles on brokers 1,2,3\n"
                              "Clearing topic-level throttles on topics ")
    assert sorted(ours[1].splitlines()[-1].rsplit(" ", 1)[1].split(",")) == ["ra", "rb"]
    rollback = tmp_path / "rollback.json"
    rollback.write_text(k_exec[1].splitlines()[2])
    assert kafka(kafka_ref, bs, REASSIGN, "--execute", "--reassignment-json-file", str(rollback))[0] == 0
    replicas_are(cluster, "ra", 0, (2, 1))
    replicas_are(cluster, "rb", 0, (1,))
    assert run_command("reassign-partitions", bs, *execute)[:2] == k_exec
    replicas_are(cluster, "ra", 0, (3, 2))
    k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", "--verify", "--reassignment-json-file",
                   str(rollback), "--preserve-throttles")
    assert (ours[0], ours[1]) == (k[0], k[1])
    assert "There is no active reassignment of partition ra-0, but replica set is 3,2 rather than 2,1." in ours[1]
    # the log directories of the rollback JSON: node 1 no longer holds ra-0
    assert "Partition ra-0 is not found in any live log dir on broker 1. There is likely an offline log " \
           "directory on the broker." in ours[1]


def test_leader_election_prints_what_kafkas_tool_prints(cluster, kafka_ref, tmp_path):
    bs = cluster.bootstrap_servers
    with BrokerClient(bs) as client:
        Admin(client).create_topics([NewTopic("le", 1, 2, assignments={0: [2, 3]})])
    cluster.wait_for_isr("le", 0, [2, 3])

    def imbalance() -> None:
        cluster.stop(2)
        assert cluster.wait_for_leader("le", 0, not_in={2}) == 3
        cluster.start(2)
        cluster.wait_for_isr("le", 0, [2, 3])

    single = ["--election-type", "PREFERRED", "--topic", "le", "--partition", "0"]
    imbalance()
    k_elected = kafka(kafka_ref, bs, ELECT, *single)
    assert k_elected == (0, "Successfully completed leader election (PREFERRED) for partitions le-0\n")
    assert cluster.wait_for_leader("le", 0, not_in={3}) == 2
    imbalance()
    assert run_command("leader-election", bs, *single)[:2] == k_elected
    assert cluster.wait_for_leader("le", 0, not_in={3}) == 2
    # every partition: those node 2 prefers moved to 3 when it stopped (le-0, and ra-1 of the
    # test before if it ran), in the order of Kafka's HashSet
    everything = ["--election-type", "PREFERRED", "--all-topic-partitions"]
    imbalance()
    k_all = kafka(kafka_ref, bs, ELECT, *everything)
    assert k_all[0] == 0 and k_all[1].startswith("Successfully completed leader election (PREFERRED) for partitions ")
    assert cluster.wait_for_leader("le", 0, not_in={3}) == 2
    imbalance()
    assert run_command("leader-election", bs, *everything)[:2] == k_all
    assert cluster.wait_for_leader("le", 0, not_in={3}) == 2

    elect = tmp_path / "elect.json"
    elect.write_text(json.dumps({"partitions": [{"topic": "le", "partition": 0}, {"topic": "le", "partition": 5}]}))
    for args in (single, ["--election-type", "unclean", "--topic", "le", "--partition", "0"],
                 ["--election-type", "PREFERRED", "--all-topic-partitions"],
                 ["--election-type", "PREFERRED", "--path-to-json-file", str(elect)],
                 ["--election-type", "PREFERRED", "--topic", "nope", "--partition", "0"]):
        k, ours = both(kafka_ref, bs, ELECT, "leader-election", *args)
        assert (ours[0], ours[1]) == (k[0], k[1]), args
        if k[0]:        # Kafka's summary line, then its stack trace
            assert ours[2] == k[2].splitlines()[0] + "\n"
    assert ours[1] == ("Error completing leader election (PREFERRED) for partition: nope-0: "
                       "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such topic as nope\n")
    # bad flags: Kafka's message (its stack trace and exit 1 aside), one line and exit 2 here
    for args, line in ((["--topic", "le", "--partition", "0"], "Missing required option(s): election-type"),
                       (["--election-type", "PREFERRED"], "One and only one of the following options is "
                        "required: topic, all-topic-partitions, path-to-json-file"),
                       (["--election-type", "PREFERRED", "--topic", "le"], "Missing required option(s): partition")):
        k, ours = both(kafka_ref, bs, ELECT, "leader-election", *args)
        assert k[2].splitlines()[0] == line and ours == (2, "", line + "\n"), args


def test_verify_and_cancel_clear_throttles_as_kafkas_tool_on_one_node(kafka_broker, kafka_ref, tmp_path):
    bs = kafka_broker.bootstrap_servers
    with BrokerClient(bs) as client:
        Admin(client).create_topics([NewTopic("one", 1, 1)])
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "one", "partition": 0, "replicas": [1]}]}))
    for args in (["--execute", "--reassignment-json-file", str(plan)],
                 ["--verify", "--reassignment-json-file", str(plan)],
                 ["--cancel", "--reassignment-json-file", str(plan)],
                 ["--list"]):
        k, ours = both(kafka_ref, bs, REASSIGN, "reassign-partitions", *args)
        assert (ours[0], ours[1]) == (k[0], k[1]), args
    # the lines measured on Kafka 4.4's own broker
    assert ours[1] == "No partition reassignments found.\n"
    assert run_command("reassign-partitions", bs, "--verify", "--reassignment-json-file", str(plan))[1] == (
        "Status of partition reassignment:\nReassignment of partition one-0 is completed.\n\n"
        "Clearing broker-level throttles on broker 1\nClearing topic-level throttles on topic one\n")


# -- the strings Kafka's own tests pin (tools/src/test: ReassignPartitionsUnitTest,
# LeaderElectionCommandTest), without a broker --------------------------------------------------

def test_plan_checks_are_kafkas():
    from kproto.tools.reassign_partitions import Failed, check_execute_plan, parse_reassignment
    # ReassignPartitionsUnitTest.testParseExecuteAssignmentArgs: "Partition reassignment contains
    # duplicate topic partitions", "Partition replica lists may not contain duplicate entries"
    for plan, message in (
            ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[0,1]},'
             '{"topic":"foo","partition":0,"replicas":[2,3,4]}]}',
             "Error: Partition reassignment contains duplicate topic partitions: foo-0"),
            ('{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[0,1,1]}]}',
             "Error: Partition replica lists may not contain duplicate entries: foo-0 contains multiple "
             "entries for 1"),
            ('{"version":1,"partitions":[]}', "Error: Partition reassignment list cannot be empty"),
            ('{"version":2,"partitions":[]}', "Error: Not supported version field value 2")):
        with pytest.raises(Failed) as e:
            check_execute_plan(parse_reassignment(plan)[0])
        assert str(e.value) == message


def test_election_lines_are_kafkas():
    from kproto.errors import ErrorCode as E
    from kproto.tools.leader_election import election_lines
    # LeaderElectionCommandTest.testPathToJsonFile...: the success line, then the no-op one
    lines, failed = election_lines("PREFERRED", {("t", 0): (E.NONE, None), ("t", 1): (E.ELECTION_NOT_NEEDED, None),
                                                 ("t", 2): (E.PREFERRED_LEADER_NOT_AVAILABLE, None)})
    assert failed == 1 and lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
        "Valid replica already elected for partitions t-1",
        "Error completing leader election (PREFERRED) for partition: t-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        + E.PREFERRED_LEADER_NOT_AVAILABLE.description]


BAD_PLANS = [
    (b"not json", "The input string is not a valid JSON: Expecting value: line 1 column 1 (char 0)"),
    (b"[1, 2]", "The input string is not a valid JSON"),
    (b"\xff\xfe{}", "The input string is not a valid JSON: {path} @ byte 0: not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "The input string is not a valid JSON: nested too deeply"),
    (b'{"version": "x"}', "Not supported version field value x"),
    (b'{"version": 1, "partitions": 5}', "Missing or malformed field in the reassignment JSON: partitions: "
                                         "expected an array, got 5"),
    (b'{"version": 1, "partitions": [5]}', "Missing or malformed field in the reassignment JSON: partitions: "
                                           "expected an object, got 5"),
    (b'{"version": 1, "partitions": [{"topic": "t", "replicas": [1]}]}',
     "Missing or malformed field in the reassignment JSON: 'partition'"),
    (b'{"version": 1, "partitions": [{"topic": null, "partition": 0, "replicas": [1]}]}',
     "Missing or malformed field in the reassignment JSON: topic: expected a string, got null"),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": 99999999999, "replicas": [1]}]}',
     "Missing or malformed field in the reassignment JSON: partition: expected an int, got 99999999999"),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": true, "replicas": [1]}]}',
     "Missing or malformed field in the reassignment JSON: partition: expected an int, got true"),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1.5]}]}',
     "Missing or malformed field in the reassignment JSON: replicas: expected an int, got 1.5"),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1e999]}]}',
     "Missing or malformed field in the reassignment JSON: replicas: expected an int, got Infinity"),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": "1"}]}',
     "Missing or malformed field in the reassignment JSON: replicas: expected an array, got \"1\""),
    (b'{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": "ab"}]}',
     "Missing or malformed field in the reassignment JSON: log_dirs: expected an array, got \"ab\""),
]


def test_a_bad_reassignment_json_file_is_one_line_and_exit_1(kafka_broker, tmp_path):
    """Bad input: --execute, --verify and --cancel on a file that is no plan print one
    ``Error: ...`` line as Kafka's tool prints its errors (on stdout), exit 1, no traceback
    (run in process: one would raise here), and ask the broker nothing it would act on."""
    bs = kafka_broker.bootstrap_servers
    plan = tmp_path / "plan.json"
    for content, message in BAD_PLANS:
        plan.write_bytes(content)
        for action in ("--execute", "--verify", "--cancel"):
            got = run_command("reassign-partitions", bs, action, "--reassignment-json-file", str(plan))
            assert got == (1, "Error: " + message.format(path=plan) + "\n", ""), (content[:60], action)
    assert run_command("reassign-partitions", bs, "--list") == (0, "No partition reassignments found.\n", "")
    missing = tmp_path / "none.json"
    assert run_command("reassign-partitions", bs, "--execute", "--reassignment-json-file", str(missing)) == (
        2, "", f"{missing}: No such file or directory\n")
