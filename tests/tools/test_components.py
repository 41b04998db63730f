"""The real components the suite depends on start and answer (tansu, ZooKeeper)."""

import socket

from tests import components


def test_tansu_answers_api_versions(tmp_path):
    with components.tansu(tmp_path) as addr:
        host, port = addr.split(":")
        # ApiVersions v0 request: size, api_key 18, version 0, correlation 7, client_id "t"
        req = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + (7).to_bytes(4, "big") + b"\x00\x01t"
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(len(req).to_bytes(4, "big") + req)
            size = int.from_bytes(s.recv(4), "big")
            body = b""
            while len(body) < size:
                body += s.recv(size - len(body))
        assert int.from_bytes(body[:4], "big") == 7          # correlation id echoed
        assert int.from_bytes(body[4:6], "big") == 0         # error_code NONE


def test_zookeeper_serves_a_znode(tmp_path):
    from kazoo.client import KazooClient
    with components.zookeeper(tmp_path) as addr:
        zk = KazooClient(hosts=addr, timeout=10)
        zk.start(timeout=30)
        try:
            zk.ensure_path("/consumers/g/offsets/t")
            zk.create("/consumers/g/offsets/t/0", b"42")
            assert zk.get("/consumers/g/offsets/t/0")[0] == b"42"
        finally:
            zk.stop()
