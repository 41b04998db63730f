"""ApiVersions v5 (KIP-1242): the client names the cluster and node it means to reach;
measured against Kafka 4.4's broker and asserted alike for kproto."""

from __future__ import annotations

import socket

import pytest

from kproto import protocol
from kproto.errors import ErrorCode
from kproto.framing import frame
from kproto.schemas import protocol as P
from tests.helpers import request_raw

KEY = P.api_versions.API.key


def _identity(bootstrap: str) -> tuple[str, int]:
    body = request_raw(bootstrap, P.metadata.API.key, 12, {"topics": [], "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})
    return body.cluster_id, body.brokers[0].node_id


def _exchange_twice(bootstrap: str, body: dict) -> tuple[object, object]:
    """ApiVersions v5 with ``body``, then v4 on the same connection: both answers (the
    second None when the broker closed the connection)."""
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        answers = []
        for corr, (version, b) in enumerate(((5, body), (4, {}))):
            b = {"client_software_name": "kproto-test", "client_software_version": "1", **b}
            s.sendall(frame(protocol.encode_request(KEY, version, corr, "raw", b)))
            size = _recv(s, 4)
            if size is None:
                answers.append(None)
                break
            answers.append(protocol.decode_response(KEY, version, _recv(s, int.from_bytes(size, "big")))[1])
        return tuple(answers) + (None,) * (2 - len(answers))


def _recv(s: socket.socket, n: int) -> bytes | None:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out



# (case, ApiVersions v5 fields given, error code Kafka 4.4's broker answers): measured
# with raw frames; cid/nid stand for the broker's own cluster id and node id.
CASES = [
    ("neither", {}, ErrorCode.NONE),
    ("explicit null and -1", {"cluster_id": None, "node_id": -1}, ErrorCode.NONE),
    ("both right", {"cluster_id": "cid", "node_id": "nid"}, ErrorCode.NONE),
    ("wrong cluster", {"cluster_id": "other", "node_id": "nid"}, ErrorCode.REBOOTSTRAP_REQUIRED),
    ("empty cluster", {"cluster_id": "", "node_id": "nid"}, ErrorCode.REBOOTSTRAP_REQUIRED),
    ("wrong node", {"cluster_id": "cid", "node_id": "nid+7"}, ErrorCode.REBOOTSTRAP_REQUIRED),
    ("negative node", {"cluster_id": "cid", "node_id": -2}, ErrorCode.REBOOTSTRAP_REQUIRED),
    ("only right cluster", {"cluster_id": "cid"}, ErrorCode.INVALID_REQUEST),
    ("only wrong cluster", {"cluster_id": "other"}, ErrorCode.INVALID_REQUEST),
    ("only right node", {"node_id": "nid"}, ErrorCode.INVALID_REQUEST),
    ("only wrong node", {"node_id": "nid+7"}, ErrorCode.INVALID_REQUEST),
    ("only negative node", {"node_id": -2}, ErrorCode.INVALID_REQUEST),
]


@pytest.mark.brokers("kproto", "kafka")
@pytest.mark.parametrize("case, given, expected", CASES, ids=[c[0] for c in CASES])
def test_v5_checks_the_intended_cluster_and_node(broker, case, given, expected):
    """KIP-1242: an error answers an empty api_keys list, no features and epoch -1; the
    connection stays open (a v4 request after it is answered in full)."""
    cid, nid = _identity(broker.bootstrap)
    values = {"cid": cid, "other": "x" + cid[1:], "nid": nid, "nid+7": nid + 7}
    body = {k: values.get(v, v) if isinstance(v, str) else v for k, v in given.items()}
    answer, after = _exchange_twice(broker.bootstrap, body)
    assert answer.error_code == expected
    assert after is not None and after.error_code == ErrorCode.NONE, "the connection was closed"
    full = {k.api_key: (k.min_version, k.max_version) for k in after.api_keys}
    assert full[KEY] == (0, 5)
    if expected:
        assert (answer.api_keys, answer.throttle_time_ms, answer.supported_features,
                answer.finalized_features_epoch, answer.finalized_features) == ([], 0, [], -1, [])
    else:
        assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys} == full
        assert answer.supported_features == after.supported_features
