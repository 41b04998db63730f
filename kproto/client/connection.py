"""One client connection as a pure state machine (h11's shape): requests out
as bytes, bytes in, responses out. No sockets here; ``transport`` wires them.

Kafka answers the requests of one connection strictly in order, so the
in-flight table is a FIFO: a response whose correlation id is not the oldest
outstanding one means the stream is broken.

Version negotiation: ``api_versions_request()`` first, then
``negotiate(body)`` with its answer; from then on ``version_for(key)`` is the
highest version both sides speak (one registry: ``kproto.schemas.protocol``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from kproto import __version__
from kproto.errors import DecodeError, ErrorCode, KafkaError, MalformedMessageError, UnsupportedVersionError
from kproto.framing import DEFAULT_MAX_FRAME, NEED_DATA, FrameReader, frame
from kproto import protocol

API_VERSIONS = 18
#: The ApiVersions version asked first (v3: flexible, carries our name).
API_VERSIONS_FIRST = 3


@dataclass(frozen=True, slots=True)
class Response:
    api_key: int
    api_version: int
    correlation_id: int
    body: Any


class ClientConnection:
    """Framing, correlation ids and negotiated versions of one connection."""

    def __init__(self, client_id: str | None = "kproto", *, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.client_id = client_id
        self._reader = FrameReader(max_frame)
        self._next_id = 0
        self._in_flight: deque[tuple[int, int, int]] = deque()     # (correlation id, key, version)
        #: api_key -> (broker min, broker max), once negotiated.
        self.broker_versions: dict[int, tuple[int, int]] | None = None

    # -- out --------------------------------------------------------------------

    def send_request(self, api_key: int, body: Any, version: int | None = None,
                     *, expect_response: bool = True) -> tuple[int, bytes]:
        """(correlation id, framed bytes to write). ``version`` defaults to the
        negotiated one. ``expect_response=False`` is Produce with acks=0."""
        if version is None:
            version = self.version_for(api_key)
        correlation_id = self._next_id
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        data = frame(protocol.encode_request(api_key, version, correlation_id, self.client_id, body))
        if expect_response:
            self._in_flight.append((correlation_id, api_key, version))
        return correlation_id, data

    def api_versions_request(self, version: int = API_VERSIONS_FIRST) -> tuple[int, bytes]:
        body = {"client_software_name": "kproto", "client_software_version": __version__}
        return self.send_request(API_VERSIONS, body, version)

    # -- in ---------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._reader.feed(data)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def next_response(self) -> Response | type(NEED_DATA):
        """The next complete response, or ``NEED_DATA``."""
        data = self._reader.next_frame()
        if data is NEED_DATA:
            return NEED_DATA
        if not self._in_flight:
            raise MalformedMessageError("response with no request outstanding",
                                        position=self._reader.position)
        correlation_id, key, version = self._in_flight.popleft()
        try:
            header, body = protocol.decode_response(key, version, data)
        except DecodeError as e:        # say whose answer did not decode
            raise e.at(file=f"{protocol.API_KEYS[key].name} v{version} response") from None
        if header.correlation_id != correlation_id:
            raise MalformedMessageError(
                f"correlation id {header.correlation_id}, expected {correlation_id}",
                position=self._reader.position, path="correlation_id")
        return Response(key, version, correlation_id, body)

    # -- versions ---------------------------------------------------------------

    def negotiate(self, body: Any) -> None:
        """Take the broker's ApiVersions answer (error 0)."""
        if body.error_code != ErrorCode.NONE:
            raise KafkaError(error_code=body.error_code)
        self.broker_versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}

    @staticmethod
    def retry_version(body: Any) -> int | None:
        """After an error-35 ApiVersions answer: the version to ask next (the
        broker's newest, as KIP-511 clients do), or None."""
        if body.error_code != ErrorCode.UNSUPPORTED_VERSION:
            return None
        for k in body.api_keys:
            if k.api_key == API_VERSIONS:
                spec = protocol.api(API_VERSIONS)
                return min(k.max_version, spec.max_version)
        return 0

    def supports(self, api_key: int) -> bool:
        if self.broker_versions is None or api_key not in self.broker_versions:
            return False
        try:
            self.version_for(api_key)
        except UnsupportedVersionError:
            return False
        return True

    def version_for(self, api_key: int) -> int:
        """Highest version both sides speak; ``UnsupportedVersionError`` if none."""
        if self.broker_versions is None:
            raise UnsupportedVersionError("versions not negotiated yet (send ApiVersions first)")
        if api_key not in self.broker_versions:
            raise UnsupportedVersionError(
                f"the broker does not support {protocol.api(api_key).name} (key {api_key})")
        # The admin layer builds and reads bodies as kproto's handlers do, by topic
        # name: it speaks the versions kproto serves, below those naming topics by
        # id only (Produce/Fetch v13, OffsetCommit/OffsetFetch v10), not every
        # version it can decode.
        served = protocol.api(api_key).served
        upto = served[1] if served else None
        if api_key in protocol.TOPIC_IDS_SINCE:
            upto = min(upto, protocol.TOPIC_IDS_SINCE[api_key] - 1)
        return protocol.highest_common_version(api_key, *self.broker_versions[api_key], upto=upto)
