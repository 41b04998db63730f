"""Captured Kafka traffic, decoded: pcap/pcapng in, request/response exchanges out.

    >>> from kproto.capture import exchanges
    >>> for ex in exchanges("kafka.pcap", ports=[9092]):
    ...     print(ex.connection, ex.api_name, ex.api_version, ex.latency_ms, ex.topics())

``exchanges(source, ports=...)`` takes a path (pcap or pcapng, optionally
gzip-compressed), ``"-"`` for stdin, or a binary file object, and yields
frozen ``Exchange`` objects as the capture completes them:

=================  ===============================================================
connection         ``Connection(client, server)``, ``str()`` = ``"1.2.3.4:5 > 1.2.3.4:9092"``
ts_ns, ts          when the request was complete (ns int / float seconds)
response_ts_ns     when the response was complete, or None
api_key/api_name   e.g. 0 / "Produce" (None: a connection-level notice, e.g. TLS)
api_version, correlation_id, client_id   from the request header
request/response   decoded bodies, or None when not captured/decodable (see warnings)
warnings           tuple of one-line strings: gaps, CRC mismatches, undecodable bodies
request_size/response_size   frame sizes in bytes, size prefix included
latency_ms         property; ``topics()``, ``error_codes()``, ``to_json()`` methods
=================  ===============================================================

Bodies hold only the fields of their version, with Kafka's snake_case names
(kproto.schemas.protocol); RECORDS fields are lists of decoded batches (see
``kproto.capture.body``) whose record keys, values and header values are
``bytes`` (``binary="json"`` pre-renders each RECORDS field as JSON text
for ``kproto.capture.jsonout``).
Other options: ``discover_ports`` (follow ports brokers announce, default on)
and ``by_shape`` (Kafka on unknown ports, recognised by its first request). Everything is decoded with the registry
``kproto.schemas.protocol.API_KEYS``: an API it lacks still pairs (header,
sizes, timing) with a warning that the body was not decoded.

Layers, each sans-I/O and usable alone: ``pcap.PacketReader`` (file formats),
``packet.tcp_segment`` (link/IP/TCP), ``tcp.HalfStream`` (reassembly),
``kafka.KafkaConnection`` (framing, resynchronisation, pairing),
``decoder.Decoder`` (all of it: feed bytes, take exchanges).
"""

from kproto.capture.body import json_default
from kproto.capture.decoder import DEFAULT_PORTS, Capture, Decoder, exchanges
from kproto.capture.kafka import Connection, Exchange
from kproto.capture.pcap import CaptureError

__all__ = ["exchanges", "Capture", "Decoder", "Exchange", "Connection", "CaptureError",
           "DEFAULT_PORTS", "json_default"]
