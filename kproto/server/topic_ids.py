"""Requests that name topics by id (KIP-516): Produce v13+, Fetch v13+, OffsetCommit v10+,
OffsetFetch v10+, TxnOffsetCommit v6+ (KIP-1319).

Theory of operation. Handlers, authorization, the fault plane and the log work by topic
name. Before any of them sees a request (KafkaApis too looks the id up in the metadata
cache before authorizing), the broker's ``handle`` calls ``to_names``, which gives each entry that names its topic by id the topic's
name; an id no topic has is taken out of the request, so nothing happens to it, and
``to_ids`` answers it UNKNOWN_TOPIC_ID for each of its partitions after the handler (as
KafkaApis.handleProduceRequest / handleFetchRequest / handleOffsetCommitRequest do when
``getTopicName`` finds nothing), and gives every response entry its topic's id. One table
says where each API keeps its topics; nothing else in the broker knows about ids.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable

from kproto.errors import ErrorCode
from kproto.schemas import protocol as P

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class ById:
    """Where one API's request and response list topics, from the version naming them by id."""

    since: int
    topics: str                 # the topic list, in the request and the response entries it is in
    name: str                   # a topic entry's name field (request and response)
    partitions: str             # a request topic's partition list
    response: str               # the response's topic list
    response_partitions: str
    unknown: Callable[[Any], dict]      # a request partition -> its response, error code aside
    groups: str | None = None   # OffsetFetch v8+: topics are per group, in request and response


BY_ID: dict[int, ById] = {
    P.produce.API.key: ById(P.TOPIC_IDS_SINCE[P.produce.API.key], "topic_data", "name", "partition_data", "responses", "partition_responses",
                            lambda p: {"index": p.index, "base_offset": -1, "log_append_time_ms": -1,
                                       "log_start_offset": -1}),
    P.fetch.API.key: ById(P.TOPIC_IDS_SINCE[P.fetch.API.key], "topics", "topic", "partitions", "responses", "partitions",
                          lambda p: {"partition_index": p.partition, "high_watermark": -1, "last_stable_offset": -1,
                                     "log_start_offset": -1, "aborted_transactions": [],
                                     "preferred_read_replica": -1, "records": b""}),
    P.offset_commit.API.key: ById(P.TOPIC_IDS_SINCE[P.offset_commit.API.key], "topics", "name", "partitions", "topics", "partitions",
                                  lambda p: {"partition_index": p.partition_index}),
    P.txn_offset_commit.API.key: ById(P.TOPIC_IDS_SINCE[P.txn_offset_commit.API.key], "topics", "name", "partitions",
                                      "topics", "partitions", lambda p: {"partition_index": p.partition_index}),
    # OffsetFetchResponse's INVALID_OFFSET, NO_METADATA for a partition it has no offset for
    P.offset_fetch.API.key: ById(P.TOPIC_IDS_SINCE[P.offset_fetch.API.key], "topics", "name", "partition_indexes", "groups", "partitions",
                                 lambda p: {"partition_index": p, "committed_offset": -1,
                                            "committed_leader_epoch": -1, "metadata": ""}, groups="groups"),
}

Unknown = dict[Any, list]      # group id (None: the request's own topics) -> request topics not found


def _scopes(body, rule: ById) -> list:
    """(group id or None, the request's list holder) for each topic list of the request."""
    if rule.groups is None:
        return [(None, body)]
    return [(g.group_id, g) for g in body[rule.groups]]


def to_names(logs, key: int, version: int, body) -> Unknown:
    """Name each topic the request names by id; the entries with unknown ids, taken out."""
    rule = BY_ID.get(key)
    if rule is None or version < rule.since:
        return {}
    unknown: Unknown = {}
    for group, holder in _scopes(body, rule):
        if holder[rule.topics] is None:        # OffsetFetch: every topic of the group
            continue
        kept = []
        for t in holder[rule.topics]:
            name = logs.topic_name(t.topic_id) if t.topic_id != ZERO_UUID else None
            if name is None:
                unknown.setdefault(group, []).append(t)
            else:
                t[rule.name] = name
                kept.append(t)
        holder[rule.topics] = kept
    return unknown


def to_ids(logs, key: int, version: int, response, unknown: Unknown) -> None:
    """Each response topic gets its id; the unknown ones come back UNKNOWN_TOPIC_ID."""
    rule = BY_ID.get(key)
    if rule is None or version < rule.since or response is None:
        return
    if rule.groups is None:
        holders = [(None, response)]
    else:
        holders = [(g["group_id"], g) for g in response[rule.response]]
    for group, holder in holders:
        topics = holder[rule.topics if rule.groups else rule.response]
        for t in topics:
            name = t.get(rule.name)
            t["topic_id"] = logs.topic_id(name) if name is not None and logs.has_topic(name) else ZERO_UUID
        topics.extend({"topic_id": t.topic_id, rule.name: None, rule.response_partitions: [
            {**rule.unknown(p), "error_code": ErrorCode.UNKNOWN_TOPIC_ID} for p in t[rule.partitions]]}
            for t in unknown.get(group, ()))
