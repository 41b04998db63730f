"""Link layer, IP and TCP headers: one captured packet to one TCP segment.

Link types (doc-ref: tcpdump.org/linktypes.html)::

    0    NULL      4-byte address family in the writer's byte order (2 = IPv4; 24/28/30 = IPv6)
    1    ETHERNET  dst src ethertype (0x0800 IPv4, 0x86DD IPv6, 0x8100/0x88A8 VLAN tags skipped)
    12, 14, 101, 228, 229   raw IP (version nibble decides)
    108  LOOP      as NULL, always big-endian
    113  LINUX_SLL  16-byte header, protocol at 14
    276  LINUX_SLL2 20-byte header, protocol at 0

Anything else (not TCP, IP fragments, unknown link types) is ``None``:
not Kafka, so the caller counts it and moves on.
"""

from __future__ import annotations

import socket
import struct
from typing import NamedTuple

__all__ = ["Segment", "tcp_segment", "LINKTYPES", "format_address"]

LINKTYPES = {0: "NULL", 1: "ETHERNET", 12: "RAW", 14: "RAW", 101: "RAW", 108: "LOOP",
             113: "LINUX_SLL", 228: "IPV4", 229: "IPV6", 276: "LINUX_SLL2"}

SYN, FIN, RST, ACK = 0x02, 0x01, 0x04, 0x10

_TCP = struct.Struct(">HHIIBB")
# Ethernet's ethertype, an IPv4 header without options, then TCP: the usual packet, read in one call
_ETH_IPV4_TCP = struct.Struct(">HBxHxxHxBxx4s4sHHIIBB")
_segment = tuple.__new__          # a Segment without its Python-level __new__
_IPV6_EXTENSIONS = {0, 43, 60}     # hop-by-hop, routing, destination options


class Segment(NamedTuple):
    src: bytes               # packed address (4 or 16 bytes)
    sport: int
    dst: bytes
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int             # payload bytes on the wire but cut by the snaplen


def _ip_offset(linktype: int, data: bytes) -> int | None:
    """Where the IP header starts, or None if this is not IP."""
    if linktype == 1:
        pos, ethertype = 14, int.from_bytes(data[12:14], "big")
        while ethertype in (0x8100, 0x88A8) and len(data) >= pos + 4:
            ethertype = int.from_bytes(data[pos + 2:pos + 4], "big")
            pos += 4
        return pos if ethertype in (0x0800, 0x86DD) else None
    if linktype == 276:
        return 20 if int.from_bytes(data[0:2], "big") in (0x0800, 0x86DD) else None
    if linktype == 113:
        return 16 if int.from_bytes(data[14:16], "big") in (0x0800, 0x86DD) else None
    if linktype in (0, 108):
        family = int.from_bytes(data[0:4], "big")
        if linktype == 0 and family > 0xFFFF:
            family = int.from_bytes(data[0:4], "little")
        return 4 if family in (2, 24, 28, 30) else None
    if linktype in (12, 14, 101, 228, 229):
        return 0
    return None


def tcp_segment(linktype: int, data: bytes) -> Segment | None:
    """The TCP segment in one packet, or None (not TCP over IP, or a fragment)."""
    if linktype == 1 and len(data) >= 54:
        ethertype, vihl, total, frag, proto, src, dst, sport, dport, seq, ack, off, flags = \
            _ETH_IPV4_TCP.unpack_from(data, 12)
        if ethertype == 0x0800 and vihl == 0x45 and proto == 6 and not frag & 0x3FFF:
            start, end = 34 + (off >> 4) * 4, 14 + (total or len(data) - 14)
            return _segment(Segment, (src, sport, dst, dport, seq, ack, flags, data[start:end],
                                      max(0, end - max(start, len(data)))))
    return _tcp_segment(linktype, data)


def _tcp_segment(linktype: int, data: bytes) -> Segment | None:
    ip = _ip_offset(linktype, data)
    if ip is None or len(data) < ip + 20:
        return None
    version = data[ip] >> 4
    if version == 4:
        ihl = (data[ip] & 0x0F) * 4
        if data[ip + 9] != 6 or int.from_bytes(data[ip + 6:ip + 8], "big") & 0x3FFF:
            return None          # not TCP, or a fragment (MF set or offset > 0)
        total = int.from_bytes(data[ip + 2:ip + 4], "big") or (len(data) - ip)  # 0 under TSO
        src, dst = data[ip + 12:ip + 16], data[ip + 16:ip + 20]
        tcp, end = ip + ihl, ip + total
    elif version == 6:
        if len(data) < ip + 40:
            return None
        nxt = data[ip + 6]
        src, dst = data[ip + 8:ip + 24], data[ip + 24:ip + 40]
        end = ip + 40 + int.from_bytes(data[ip + 4:ip + 6], "big")
        tcp = ip + 40
        while nxt in _IPV6_EXTENSIONS and len(data) >= tcp + 8:
            nxt, tcp = data[tcp], tcp + (data[tcp + 1] + 1) * 8
        if nxt != 6:
            return None          # fragments (44) included
    else:
        return None
    if len(data) < tcp + 20:
        return None
    sport, dport, seq, ack, off, flags = _TCP.unpack_from(data, tcp)
    start = tcp + (off >> 4) * 4
    # end < len(data): Ethernet padding; end > len(data): cut by the snaplen
    payload = data[start:end]
    missing = max(0, end - max(start, len(data)))
    return Segment(src, sport, dst, dport, seq, ack, flags, payload, missing)


def format_address(addr: bytes, port: int) -> str:
    """``1.2.3.4:9092`` or ``[::1]:9092``."""
    if len(addr) == 4:
        return f"{socket.inet_ntop(socket.AF_INET, addr)}:{port}"
    return f"[{socket.inet_ntop(socket.AF_INET6, addr)}]:{port}"
