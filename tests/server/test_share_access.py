"""Authorization of the share-group state APIs (KafkaApis.handle*ShareGroupStateRequest:
CLUSTER_ACTION on the cluster) and of the share-group offsets APIs
(handleDescribeShareGroupOffsetsRequest: DESCRIBE on the group;
handleAlterShareGroupOffsetsRequest: READ on it; handleDeleteShareGroupOffsetsRequest:
DELETE on it): what a principal without the ACL gets, and that nothing ran."""

from __future__ import annotations

import asyncio
import uuid

from construct import Container

from kproto.errors import ErrorCode as E
from kproto.schemas import protocol as P
from kproto.security.acl import CLUSTER_NAME, AclOperation as O, ResourceType as R
from kproto.server.access import guarded
from kproto.server.handlers import lookup
from tests.server.helpers import AllowListBroker as Broker, authorized_call as call

TOPIC_ID = uuid.UUID(int=7)


def test_state_apis_are_a_cluster_action():
    body = {"group_id": "g", "topics": [Container(topic_id=TOPIC_ID, partitions=[
        Container(partition=0, leader_epoch=0), Container(partition=3, leader_epoch=0)])]}
    out, seen = call(P.read_share_group_state_summary, 1, dict(body))
    assert seen == []
    assert out == {"results": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition": p, "error_code": E.CLUSTER_AUTHORIZATION_FAILED, "error_message": E.CLUSTER_AUTHORIZATION_FAILED
         .description, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "delivery_complete_count": -1}
        for p in (0, 3)]}]}
    out, seen = call(P.read_share_group_state_summary, 1, dict(body), (O.CLUSTER_ACTION, R.CLUSTER, CLUSTER_NAME))
    assert out == {"error_code": 0} and len(seen) == 1
    for api in (P.initialize_share_group_state, P.write_share_group_state, P.delete_share_group_state):
        out, seen = call(api, 0, {"group_id": "g", "topics": [Container(topic_id=TOPIC_ID,
                                                                        partitions=[Container(partition=1)])]})
        assert seen == [] and out == {"results": [{"topic_id": TOPIC_ID, "partitions": [
            {"partition": 1, "error_code": E.CLUSTER_AUTHORIZATION_FAILED,
             "error_message": E.CLUSTER_AUTHORIZATION_FAILED.description}]}]}, api


def _real(api, version: int, body: dict, *allowed):
    """The API's own handler under its rule; the broker has no share coordinator, so an
    answer proves the handler stopped at the group check."""
    header = Container(request_api_key=api.API.key, request_api_version=version)
    return asyncio.run(guarded(Broker(*allowed), header, Container(body), lookup(api.API.key).handle))


def test_offsets_apis_check_the_group_first():
    out = _real(P.describe_share_group_offsets, 1, {"groups": [Container(group_id="g", topics=None)]})
    assert out == {"throttle_time_ms": 0, "groups": [{
        "group_id": "g", "topics": [], "error_code": E.GROUP_AUTHORIZATION_FAILED,
        "error_message": E.GROUP_AUTHORIZATION_FAILED.description}]}
    for api, body in ((P.alter_share_group_offsets, {"group_id": "g", "topics": []}),
                      (P.delete_share_group_offsets, {"group_id": "g", "topics": []})):
        assert _real(api, 0, body) == {"throttle_time_ms": 0, "error_code": E.GROUP_AUTHORIZATION_FAILED,
                                       "error_message": E.GROUP_AUTHORIZATION_FAILED.description,
                                       "responses": []}, api
    # READ is not DELETE: DeleteShareGroupOffsets needs DELETE on the group
    out = _real(P.delete_share_group_offsets, 0, {"group_id": "g", "topics": []}, (O.READ, R.GROUP, "g"))
    assert out["error_code"] == E.GROUP_AUTHORIZATION_FAILED
