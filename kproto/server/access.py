"""Authorization of every API the broker answers, as Kafka's KafkaApis does it.

Theory of operation. Each API has a rule (``RULES``): which field of the
request lists the resources, which resource type and operation each needs,
and what the response says for one that is denied. Before the handler runs,
denied entries are taken out of the request (so nothing happens to them:
no append, no auto-creation, no deletion); after it, their error entries
are added to the response — the partial answer Kafka gives (e.g. one topic
TOPIC_AUTHORIZATION_FAILED, the others appended). Whole-request rules (a
group's JoinGroup) answer with the error alone and do not run the handler.
APIs that Kafka does not authorize (ApiVersions, SASL, DescribeCluster) and
those that check for themselves (ACL and SCRAM admin) are in ``SELF_CHECKED``.

Only active with an authorizer (``authorizer.class.name``); a test keeps
``RULES`` + ``SELF_CHECKED`` equal to the set of APIs the broker serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation as O, ResourceType as R
from kproto.server.handlers.metadata import ZERO_UUID

T_DENIED, G_DENIED, C_DENIED, TXN_DENIED = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)

SELF_CHECKED = frozenset({P.api_versions.API.key, P.sasl_handshake.API.key, P.sasl_authenticate.API.key,
                          P.create_acls.API.key, P.describe_acls.API.key,
                          P.delete_acls.API.key, P.describe_user_scram_credentials.API.key,
                          P.alter_user_scram_credentials.API.key})


@dataclass(frozen=True)
class PerEntry:
    """Entries of ``request`` (a list field), each checked; denied ones answered by ``denied``."""

    request: str
    name: Callable[[Any], str]
    resource: R
    operation: O
    response: str
    denied: Callable[[Any, int], dict]      # (request entry, error code) -> response entry
    error: int = T_DENIED
    unless_cluster: O | None = None         # e.g. CREATE on the cluster allows every CreateTopics entry


def _partitions(field: str, index: str, out_index: str, **extra):
    return lambda e, err: [{out_index: getattr(p, index) if index else p, "error_code": err, **extra}
                           for p in getattr(e, field)]


def _topic_name(e) -> str:
    return e.name if "name" in e else e.topic


PRODUCE = PerEntry("topic_data", _topic_name, R.TOPIC, O.WRITE, "responses",
                   lambda e, err: {"name": e.name, "partition_responses": _partitions(
                       "partition_data", "index", "index", base_offset=-1)(e, err)})
FETCH = PerEntry("topics", _topic_name, R.TOPIC, O.READ, "responses",
                 lambda e, err: {"topic": e.topic, "partitions": _partitions(
                     "partitions", "partition", "partition_index", high_watermark=-1, last_stable_offset=-1,
                     log_start_offset=-1, preferred_read_replica=-1, records=b"")(e, err)})
LIST_OFFSETS = PerEntry("topics", _topic_name, R.TOPIC, O.DESCRIBE, "topics",
                        lambda e, err: {"name": e.name, "partitions": _partitions(
                            "partitions", "partition_index", "partition_index", timestamp=-1, offset=-1,
                            old_style_offsets=[])(e, err)})
OFFSET_COMMIT_TOPICS = PerEntry("topics", _topic_name, R.TOPIC, O.READ, "topics",
                                lambda e, err: {"name": e.name, "partitions": _partitions(
                                    "partitions", "partition_index", "partition_index")(e, err)})
CREATE_TOPICS = PerEntry("topics", _topic_name, R.TOPIC, O.CREATE, "topics",
                         lambda e, err: {"name": e.name, "error_code": err, "num_partitions": -1,
                                         "replication_factor": -1, "configs": None},
                         unless_cluster=O.CREATE)
DELETE_TOPICS = PerEntry("topics", lambda e: e.name, R.TOPIC, O.DELETE, "responses",
                         lambda e, err: {"name": e.name, "topic_id": e.topic_id, "error_code": err})
DELETE_TOPICS_V0 = PerEntry("topic_names", lambda e: e, R.TOPIC, O.DELETE, "responses",
                            lambda e, err: {"name": e, "error_code": err})
DELETE_RECORDS = PerEntry("topics", _topic_name, R.TOPIC, O.DELETE, "topics",
                          lambda e, err: {"name": e.name, "partitions": _partitions(
                              "partitions", "partition_index", "partition_index", low_watermark=-1)(e, err)})
CREATE_PARTITIONS = PerEntry("topics", _topic_name, R.TOPIC, O.ALTER, "results",
                             lambda e, err: {"name": e.name, "error_code": err, "error_message": None})
DESCRIBE_GROUPS = PerEntry("groups", lambda e: e, R.GROUP, O.DESCRIBE, "groups",
                           lambda e, err: {"error_code": err, "group_id": e, "group_state": "", "protocol_type": "",
                                           "protocol_data": "", "members": [], "authorized_operations": -2147483648},
                           error=G_DENIED)
DELETE_GROUPS = PerEntry("groups_names", lambda e: e, R.GROUP, O.DELETE, "results",
                         lambda e, err: {"group_id": e, "error_code": err}, error=G_DENIED)
FIND_COORDINATOR = {0: PerEntry("coordinator_keys", lambda e: e, R.GROUP, O.DESCRIBE, "coordinators",
                                lambda e, err: {"key": e, "node_id": -1, "host": "", "port": -1, "error_code": err,
                                                "error_message": None}, error=G_DENIED),
                    1: PerEntry("coordinator_keys", lambda e: e, R.TRANSACTIONAL_ID, O.DESCRIBE, "coordinators",
                                lambda e, err: {"key": e, "node_id": -1, "host": "", "port": -1, "error_code": err,
                                                "error_message": None}, error=TXN_DENIED)}
# DescribeConfigs/AlterConfigs resource types: 2 topic, 4 broker, 8 broker logger (the cluster's).
_CONFIG_RESOURCE = {2: R.TOPIC, 4: R.CLUSTER, 8: R.CLUSTER}


def _configs(request: str, response: str, operation: O, extra: dict) -> PerEntry:
    return PerEntry(request, lambda e: e.resource_name, R.TOPIC, operation, response,
                    lambda e, err: {"error_code": err, "error_message": None, "resource_type": e.resource_type,
                                    "resource_name": e.resource_name, **extra})


DESCRIBE_CONFIGS = _configs("resources", "results", O.DESCRIBE_CONFIGS, {"configs": []})
ALTER_CONFIGS = _configs("resources", "responses", O.ALTER_CONFIGS, {})


def _bitfield(ops) -> int:
    """Kafka's Utils.to32BitField: bit ``code`` set for each operation."""
    return sum(1 << op for op in ops)


class Access:
    """The checks for one request, given ``allowed(op, type, name)`` and ``allowed_any``."""

    def __init__(self, security) -> None:
        self.sec = security

    def ok(self, op: O, rtype: R, name: str, log_denied: bool = True) -> bool:
        if log_denied:      # the plain three-argument call stays the common case (tests' authorizers take it)
            return self.sec.allowed(op, rtype, name)
        return self.sec.allowed(op, rtype, name, log_denied=False)

    def operations(self, rtype: R, name: str) -> int:
        """``*_authorized_operations``: the supported operations the principal may do (KIP-430)."""
        return _bitfield(op for op in SUPPORTED_OPERATIONS[rtype] if self.ok(op, rtype, name, False))

    def split(self, body, rule: PerEntry) -> list:
        """Take the denied entries out of ``body``; -> them."""
        entries = getattr(body, rule.request) or []
        if rule.unless_cluster is not None and self.ok(rule.unless_cluster, R.CLUSTER, CLUSTER_NAME, False):
            return []
        denied, kept = [], []
        for e in entries:
            rtype = rule.resource
            if rule in (DESCRIBE_CONFIGS, ALTER_CONFIGS):
                rtype = _CONFIG_RESOURCE.get(e.resource_type, R.TOPIC)
            name = CLUSTER_NAME if rtype == R.CLUSTER else rule.name(e)
            # None: an unknown topic id (DeleteTopics v6), which the handler answers UNKNOWN_TOPIC_ID
            (kept if name is None or self.ok(rule.operation, rtype, name) else denied).append(e)
        if denied:
            setattr(body, rule.request, kept)
        return denied

    @staticmethod
    def merge(response, rule: PerEntry, denied: list, error: int | None = None) -> None:
        if response is not None and denied:
            err = error if error is not None else rule.error
            if rule in (DESCRIBE_CONFIGS, ALTER_CONFIGS):
                out = [rule.denied(e, C_DENIED if _CONFIG_RESOURCE.get(e.resource_type) == R.CLUSTER else T_DENIED)
                       for e in denied]
            else:
                out = [rule.denied(e, err) for e in denied]
            response[rule.response] = list(response[rule.response]) + out


async def guarded(broker, header, body, handler) -> Any:
    """Run ``handler`` on what the connection's principal may do; answer the rest with Kafka's errors."""
    key = header.request_api_key
    if key in SELF_CHECKED:
        return await handler(broker, header, body)
    a = Access(broker.security)
    rule = SIMPLE.get(key)
    if rule is not None:
        denied = a.split(body, rule)
        response = await handler(broker, header, body)
        a.merge(response, rule, denied)
        return response
    return await SPECIAL[key](a, broker, header, body, handler)


async def _delete_topics(a: Access, broker, header, body, handler):
    """v6 names topics by id too: the id's topic is what DELETE is checked on."""
    if header.request_api_version < 6:
        rule = DELETE_TOPICS_V0
    else:
        rule = DELETE_TOPICS
        by_id = {broker.logs.topic_id(t): t for t in broker.logs.topics()}
        for e in body.topics:
            if e.name is None:
                e.name = by_id.get(e.topic_id)
    denied = a.split(body, rule)
    response = await handler(broker, header, body)
    a.merge(response, rule, denied)
    return response


async def _produce(a: Access, broker, header, body, handler):
    txn = body.get("transactional_id")
    if txn is not None and not a.ok(O.WRITE, R.TRANSACTIONAL_ID, txn):
        response = {"responses": []}
        body.topic_data, denied = [], list(body.topic_data)
        a.merge(response, PRODUCE, denied, TXN_DENIED)
        return response if body.acks != 0 else None
    denied = a.split(body, PRODUCE)
    if not body.topic_data and denied:
        response = {"responses": []}
    else:
        response = await handler(broker, header, body)
    a.merge(response, PRODUCE, denied)
    return response if body.acks != 0 else None


async def _metadata(a: Access, broker, header, body, handler):
    """Topics the principal may not DESCRIBE: left out of a list-all answer,
    TOPIC_AUTHORIZATION_FAILED when asked by name; auto-creation needs CREATE."""
    explicit = body.topics is not None and not (header.request_api_version == 0 and not body.topics)
    denied = []
    if explicit:
        kept = []
        for t in body.topics:
            (kept if t.name is None or a.ok(O.DESCRIBE, R.TOPIC, t.name) else denied).append(t)
        body.topics = kept
        if body.get("allow_auto_topic_creation") and not a.ok(O.CREATE, R.CLUSTER, CLUSTER_NAME, False):
            missing = [t.name for t in kept if t.name and not broker.logs.has_topic(t.name)]
            if any(not a.ok(O.CREATE, R.TOPIC, n, False) for n in missing):
                body.allow_auto_topic_creation = False
    response = await handler(broker, header, body)
    if not explicit:
        response["topics"] = [t for t in response["topics"] if a.ok(O.DESCRIBE, R.TOPIC, t["name"], False)]
    if body.get("include_topic_authorized_operations"):
        for t in response["topics"]:
            if not t["error_code"]:
                t["topic_authorized_operations"] = a.operations(R.TOPIC, t["name"])
    if body.get("include_cluster_authorized_operations"):
        response["cluster_authorized_operations"] = a.operations(R.CLUSTER, CLUSTER_NAME)
    response["topics"] = list(response["topics"]) + [
        {"error_code": T_DENIED, "name": t.name, "topic_id": t.get("topic_id") or ZERO_UUID, "is_internal": False,
         "partitions": []} for t in denied]
    return response


def _group_whole(error_response: Callable[[Any, int], dict], op: O = O.READ):
    async def check(a: Access, broker, header, body, handler):
        if not a.ok(op, R.GROUP, body.group_id):
            return error_response(body, G_DENIED)
        return await handler(broker, header, body)
    return check


async def _offset_commit(a: Access, broker, header, body, handler):
    if not a.ok(O.READ, R.GROUP, body.group_id):
        response = {"topics": []}
        a.merge(response, OFFSET_COMMIT_TOPICS, list(body.topics), G_DENIED)
        return response
    return await _offset_commit_topics(a, broker, header, body, handler)


async def _offset_fetch(a: Access, broker, header, body, handler):
    """KafkaApis.handleOffsetFetchRequestFromCoordinator, each group alike (v8+ batch them):
    DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; named topics the principal may
    not DESCRIBE are not fetched and answer TOPIC_AUTHORIZATION_FAILED (fetchOffsetsForGroup);
    an all-topics fetch (``topics`` null) leaves them out (fetchAllOffsetsForGroup)."""
    batched = header.request_api_version >= 8
    groups = list(body.groups) if batched else [body]
    kept, denied_topics = [], []
    for g in groups:
        if not a.ok(O.DESCRIBE, R.GROUP, g.group_id):
            continue
        kept.append(g)
        denied = [] if g.topics is None else [t for t in g.topics if not a.ok(O.DESCRIBE, R.TOPIC, t.name)]
        if denied:
            g.topics = [t for t in g.topics if t not in denied]
        denied_topics.append(denied)
    if not batched and not kept:
        return {"topics": [], "error_code": G_DENIED}
    if batched:
        body.groups = kept
        response = await handler(broker, header, body) if kept else {"groups": []}
        answers = response["groups"]
    else:
        response = await handler(broker, header, body)
        answers = [response]
    for g, answer, denied in zip(kept, answers, denied_topics):
        if answer["error_code"]:
            continue
        if g.topics is None:
            answer["topics"] = [t for t in answer["topics"] if a.ok(O.DESCRIBE, R.TOPIC, t["name"], False)]
        else:
            answer["topics"] = list(answer["topics"]) + [
                {"name": t.name, "partitions": [
                    {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                     "error_code": T_DENIED} for i in t.partition_indexes]} for t in denied]
    if batched:         # in request order, as Kafka answers the groups
        answered = iter(answers)
        response["groups"] = [next(answered) if any(g is k for k in kept)
                              else {"group_id": g.group_id, "topics": [], "error_code": G_DENIED} for g in groups]
    return response


async def _find_coordinator(a: Access, broker, header, body, handler):
    rule = FIND_COORDINATOR.get(body.key_type, FIND_COORDINATOR[0])
    if header.request_api_version < 4:
        if not a.ok(rule.operation, rule.resource, body.key):
            return {"error_code": rule.error, "error_message": None, "node_id": -1, "host": "", "port": -1}
        return await handler(broker, header, body)
    denied = a.split(body, rule)
    response = await handler(broker, header, body) if body.coordinator_keys or not denied else {"coordinators": []}
    a.merge(response, rule, denied)
    return response


async def _describe_cluster(a: Access, broker, header, body, handler):
    """Kafka checks nothing here but answers the principal's cluster operations when asked."""
    response = await handler(broker, header, body)
    if body.include_cluster_authorized_operations:
        response["cluster_authorized_operations"] = a.operations(R.CLUSTER, CLUSTER_NAME)
    return response


async def _describe_groups(a: Access, broker, header, body, handler):
    denied = a.split(body, DESCRIBE_GROUPS)
    response = await handler(broker, header, body) if body.groups or not denied else {"groups": []}
    if body.get("include_authorized_operations"):
        for g in response["groups"]:
            if not g["error_code"]:
                g["authorized_operations"] = a.operations(R.GROUP, g["group_id"])
    a.merge(response, DESCRIBE_GROUPS, denied)
    return response


async def _list_groups(a: Access, broker, header, body, handler):
    response = await handler(broker, header, body)
    if not a.ok(O.DESCRIBE, R.CLUSTER, CLUSTER_NAME, False):
        response["groups"] = [g for g in response["groups"] if a.ok(O.DESCRIBE, R.GROUP, g["group_id"], False)]
    return response


async def _init_producer_id(a: Access, broker, header, body, handler):
    txn = body.transactional_id
    if txn is not None:
        ok, err = a.ok(O.WRITE, R.TRANSACTIONAL_ID, txn), TXN_DENIED
    else:
        ok = (a.ok(O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME, False) or a.sec.allowed_any(O.WRITE, R.TOPIC)
              or a.ok(O.IDEMPOTENT_WRITE, R.CLUSTER, CLUSTER_NAME))      # False, logged once
        err = C_DENIED
    if not ok:
        return {"error_code": err, "producer_id": -1, "producer_epoch": -1}
    return await handler(broker, header, body)


# --- transactions (KafkaApis.handle*Txn*, handleDescribeProducers, handle*Transactions) -------------

def _txn_denied(rows, error: int):
    """AddPartitionsToTxn v0-3 topic results, every partition answering ``error``."""
    return [{"name": t.name, "results_by_partition": [{"partition_index": p, "partition_error_code": error}
                                                      for p in t.partitions]} for t in rows]


async def _add_partitions_to_txn(a: Access, broker, header, body, handler):
    if header.request_api_version >= 4:           # the broker form: CLUSTER_ACTION
        if not a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME):
            return {"error_code": C_DENIED, "results_by_transaction": []}
        return await handler(broker, header, body)
    topics = body.v3_and_below_topics
    if not a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.v3_and_below_transactional_id):
        return {"results_by_topic_v3_and_below": _txn_denied(topics, TXN_DENIED)}
    denied = [t for t in topics if not a.ok(O.WRITE, R.TOPIC, t.name)]
    if denied:                                     # the others are not attempted, as Kafka answers
        return {"results_by_topic_v3_and_below": [
            *_txn_denied(denied, T_DENIED), *_txn_denied([t for t in topics if t not in denied],
                                                         ErrorCode.OPERATION_NOT_ATTEMPTED)]}
    return await handler(broker, header, body)


def _txn_whole(group: bool = False):
    """WRITE on the transactional id (and READ on the group): else one error code."""
    async def check(a: Access, broker, header, body, handler):
        if not a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.transactional_id):
            return {"error_code": TXN_DENIED}
        if group and not a.ok(O.READ, R.GROUP, body.group_id):
            return {"error_code": G_DENIED}
        return await handler(broker, header, body)
    return check


async def _txn_offset_commit(a: Access, broker, header, body, handler):
    for allowed, error in ((a.ok(O.WRITE, R.TRANSACTIONAL_ID, body.transactional_id), TXN_DENIED),
                           (a.ok(O.READ, R.GROUP, body.group_id), G_DENIED)):
        if not allowed:
            response = {"topics": []}
            a.merge(response, OFFSET_COMMIT_TOPICS, list(body.topics), error)
            return response
    return await _offset_commit_topics(a, broker, header, body, handler)


async def _offset_commit_topics(a: Access, broker, header, body, handler):
    denied = a.split(body, OFFSET_COMMIT_TOPICS)
    response = await handler(broker, header, body) if body.topics or not denied else {"topics": []}
    a.merge(response, OFFSET_COMMIT_TOPICS, denied)
    return response


async def _write_txn_markers(a: Access, broker, header, body, handler):
    if a.ok(O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME):
        return await handler(broker, header, body)
    return {"markers": [{"producer_id": m.producer_id, "topics": [
        {"name": t.name, "partitions": [{"partition_index": p, "error_code": C_DENIED} for p in t.partition_indexes]}
        for t in m.topics]} for m in body.markers]}


async def _list_transactions(a: Access, broker, header, body, handler):
    response = await handler(broker, header, body)
    response["transaction_states"] = [t for t in response["transaction_states"]
                                      if a.ok(O.DESCRIBE, R.TRANSACTIONAL_ID, t["transactional_id"])]
    return response


DESCRIBE_PRODUCERS = PerEntry("topics", _topic_name, R.TOPIC, O.READ, "topics",
                              lambda e, err: {"name": e.name, "partitions": [
                                  {"partition_index": p, "error_code": err, "error_message": None,
                                   "active_producers": []} for p in e.partition_indexes]})
DESCRIBE_TRANSACTIONS = PerEntry("transactional_ids", lambda e: e, R.TRANSACTIONAL_ID, O.DESCRIBE,
                                 "transaction_states",
                                 lambda e, err: {"error_code": err, "transactional_id": e, "transaction_state": "",
                                                 "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                                                 "producer_id": -1, "producer_epoch": -1, "topics": []},
                                 error=TXN_DENIED)

def _share_error(**extra):
    """A share API's whole-request GROUP_AUTHORIZATION_FAILED answer."""
    return lambda b, e: {"error_code": e, "error_message": None, **extra}


async def _share_group_describe(a: Access, broker, header, body, handler):
    """KafkaApis.handleShareGroupDescribe: DESCRIBE on each group; denied ones answered alone."""
    denied = [g for g in body.group_ids if not a.ok(O.DESCRIBE, R.GROUP, g)]
    body.group_ids = [g for g in body.group_ids if g not in denied]
    response = await handler(broker, header, body) if body.group_ids else {"throttle_time_ms": 0, "groups": []}
    response["groups"] += [{"error_code": G_DENIED, "error_message": None, "group_id": g, "group_state": "",
                            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": [],
                            "authorized_operations": -2147483648} for g in denied]
    return response


SIMPLE = {P.fetch.API.key: FETCH, P.list_offsets.API.key: LIST_OFFSETS, P.create_topics.API.key: CREATE_TOPICS,
          P.create_partitions.API.key: CREATE_PARTITIONS, P.delete_records.API.key: DELETE_RECORDS,
          P.delete_groups.API.key: DELETE_GROUPS,
          P.describe_configs.API.key: DESCRIBE_CONFIGS, P.alter_configs.API.key: ALTER_CONFIGS,
          P.incremental_alter_configs.API.key: ALTER_CONFIGS, P.describe_producers.API.key: DESCRIBE_PRODUCERS,
          P.describe_transactions.API.key: DESCRIBE_TRANSACTIONS}
SPECIAL = {
    P.produce.API.key: _produce, P.metadata.API.key: _metadata, P.delete_topics.API.key: _delete_topics, P.offset_commit.API.key: _offset_commit,
    P.offset_fetch.API.key: _offset_fetch, P.find_coordinator.API.key: _find_coordinator,
    P.list_groups.API.key: _list_groups, P.init_producer_id.API.key: _init_producer_id,
    P.add_partitions_to_txn.API.key: _add_partitions_to_txn, P.add_offsets_to_txn.API.key: _txn_whole(group=True),
    P.end_txn.API.key: _txn_whole(), P.txn_offset_commit.API.key: _txn_offset_commit,
    P.write_txn_markers.API.key: _write_txn_markers, P.list_transactions.API.key: _list_transactions,
    P.join_group.API.key: _group_whole(lambda b, e: {"error_code": e, "generation_id": -1, "protocol_name": "",
                                                     "leader": "", "member_id": "", "members": []}),
    P.sync_group.API.key: _group_whole(lambda b, e: {"error_code": e, "assignment": b""}),
    P.heartbeat.API.key: _group_whole(lambda b, e: {"error_code": e}),
    P.leave_group.API.key: _group_whole(lambda b, e: {"error_code": e, "members": []}),
    P.describe_cluster.API.key: _describe_cluster, P.describe_groups.API.key: _describe_groups,
    # share groups: READ on the group (Kafka also checks the topics: not yet here)
    P.share_group_heartbeat.API.key: _group_whole(_share_error(member_id=None, member_epoch=0,
                                                               heartbeat_interval_ms=0, assignment=None)),
    P.share_fetch.API.key: _group_whole(_share_error(acquisition_lock_timeout_ms=0, responses=[],
                                                     node_endpoints=[])),
    P.share_acknowledge.API.key: _group_whole(_share_error(acquisition_lock_timeout_ms=0, responses=[],
                                                           node_endpoints=[])),
    P.share_group_describe.API.key: _share_group_describe,
}
