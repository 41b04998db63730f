"""Capture files, sans-I/O: pcap and pcapng bytes in, packets out.

Feed bytes as they arrive (``feed``), take packets (``next_packet``) until it
answers ``NEED_DATA``; ``close()`` at the end of input says whether the file
stopped inside a record. Like ``kproto.framing.FrameReader`` it never blocks,
and consumed bytes are dropped as it goes, so memory is one record, not the file.

Formats (doc-ref: draft-ietf-opsawg-pcap, draft-ietf-opsawg-pcapng)::

    pcap    24-byte file header: magic a1b2c3d4 (µs) or a1b23c4d (ns), in the
            writer's byte order; snaplen; linktype (low 16 bits of the last word)
            16-byte record header: ts_sec ts_frac incl_len orig_len, then incl_len bytes
    pcapng  blocks: type u32, total_length u32, body, total_length u32
            SHB  0x0A0D0D0A  byte-order magic 1A2B3C4D; starts a section (interfaces reset)
            IDB  1           linktype u16, reserved, snaplen; options if_tsresol (9), if_tsoffset (14)
            EPB  6           interface u32, ts_high u32, ts_low u32, caplen, origlen, data
            SPB  3           origlen, data (interface 0, no timestamp)
            PB   2           obsolete: interface u16, drops u16, ts_high, ts_low, caplen, origlen
            others (NRB, ISB, DSB, custom) are skipped

Timestamps come out as integer nanoseconds since the epoch, whatever the
file's resolution.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kproto.errors import DecodeError
from kproto.framing import NEED_DATA

__all__ = ["Packet", "PacketReader", "CaptureError", "NEED_DATA"]

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BYTE_ORDER = 0x1A2B3C4D
IDB, PB, SPB, EPB = 1, 2, 3, 6
# A record or block larger than this is a corrupt length, not a packet.
MAX_RECORD = 256 * 1024 * 1024


class CaptureError(DecodeError):
    """Bytes that are not a capture file (bad magic, impossible lengths)."""


class Packet(NamedTuple):
    ts_ns: int | None       # None only for pcapng simple packet blocks
    linktype: int
    data: bytes
    orig_len: int           # length on the wire; > len(data) when the snaplen cut it
    interface: int = 0


class _Interface(NamedTuple):
    linktype: int
    snaplen: int
    ts_ns: callable          # raw 64-bit timestamp -> ns


def _ts_converter(resol: int, offset_s: int):
    base = offset_s * 1_000_000_000
    if resol & 0x80:
        shift = resol & 0x7F
        return lambda t: base + (t * 1_000_000_000 >> shift)
    if resol <= 9:
        mul = 10 ** (9 - resol)
        return lambda t: base + t * mul
    div = 10 ** (resol - 9)
    return lambda t: base + t // div


class PacketReader:
    """pcap or pcapng, told apart by the first four bytes."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._start = 0
        self.position = 0          # file offset of _buf[_start]
        self.format: str | None = None
        self.packets = 0
        # pcap
        self._rec: struct.Struct | None = None
        self._linktype = 0
        self._frac_ns = 1000
        # pcapng
        self._endian = ">"
        self._interfaces: list[_Interface] = []
        self.sections = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._start

    def _consume(self, n: int) -> None:
        self._start += n
        self.position += n
        if self._start > 1 << 20 and self._start * 2 > len(self._buf):
            del self._buf[:self._start]
            self._start = 0

    def next_packet(self) -> Packet | type(NEED_DATA):
        if self.format is None and not self._read_magic():
            return NEED_DATA
        if self.format == "pcap":
            return self._next_pcap()
        return self._next_pcapng()

    def close(self) -> str | None:
        """End of input: a one-line note if the file stops inside a record."""
        left = self.buffered
        if self.format is None:
            if left == 0:
                return "empty capture file"
            return f"@ byte 0: {left} bytes, too short for a capture file header"
        if left:
            return (f"@ byte {self.position}: capture ends inside a {self.format} record "
                    f"({left} bytes of it captured); the packets before it are decoded")
        return None

    # --- detection ---------------------------------------------------------

    def _read_magic(self) -> bool:
        if self.buffered < 4:
            return False
        head = bytes(self._buf[self._start:self._start + 4])
        if int.from_bytes(head, "big") == PCAPNG_SHB:
            self.format = "pcapng"
            return True
        for order in ("<", ">"):
            magic = struct.unpack(order + "I", head)[0]
            if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
                if self.buffered < 24:
                    return False
                network = struct.unpack_from(order + "I", self._buf, self._start + 20)[0]
                self.format = "pcap"
                self._rec = struct.Struct(order + "IIII")
                self._linktype = network & 0xFFFF
                self._frac_ns = 1 if magic == PCAP_MAGIC_NS else 1000
                self._consume(24)
                return True
        raise CaptureError(f"not a pcap or pcapng file (magic {head.hex()})", position=self.position)

    # --- pcap --------------------------------------------------------------

    def _next_pcap(self):
        buf, start = self._buf, self._start
        if len(buf) - start < 16:
            return NEED_DATA
        sec, frac, incl, orig = self._rec.unpack_from(buf, start)
        if incl > MAX_RECORD:
            raise CaptureError(f"packet record of {incl} bytes: corrupt length", position=self.position + 8)
        if len(buf) - start - 16 < incl:
            return NEED_DATA
        data = bytes(buf[start + 16:start + 16 + incl])
        self._consume(16 + incl)
        self.packets += 1
        return Packet(sec * 1_000_000_000 + frac * self._frac_ns, self._linktype, data, orig)

    def pcap_records(self, segments=None) -> list[tuple[int, bytes]]:
        """(ts_ns, data) of every complete pcap record now buffered, with no
        Packet per record (the decoder's loop); empty before one ``next_packet``
        would refuse, or not yet hold, or when the file is not pcap.
        ``segments``: the C extension's ``pcap_segments`` with the Segment type
        bound, which also reads the TCP segment of the usual packet (then in
        place of its bytes)."""
        if self.format != "pcap":
            return []
        buf, start, end = self._buf, self._start, len(self._buf)
        if segments is not None:
            out, pos = segments(buf, start, self._rec.format[0] == "<", self._frac_ns, self._linktype, MAX_RECORD)
            self._consume(pos - start)
            self.packets += len(out)
            return out
        rec, frac, out = self._rec.unpack_from, self._frac_ns, []
        pos = start
        with memoryview(buf) as view:
            while end - pos >= 16:
                sec, fr, incl, _ = rec(buf, pos)
                if incl > MAX_RECORD or end - pos - 16 < incl:
                    break
                out.append((sec * 1_000_000_000 + fr * frac, bytes(view[pos + 16:pos + 16 + incl])))
                pos += 16 + incl
        self._consume(pos - start)
        self.packets += len(out)
        return out

    @property
    def linktype(self) -> int:
        """The pcap file's link type."""
        return self._linktype

    # --- pcapng ------------------------------------------------------------

    def _next_pcapng(self):
        while True:
            buf, start = self._buf, self._start
            if len(buf) - start < 12:
                return NEED_DATA
            btype = int.from_bytes(buf[start:start + 4], "big")
            if btype == PCAPNG_SHB:
                bom = bytes(buf[start + 8:start + 12])
                if bom == b"\x1a\x2b\x3c\x4d":
                    self._endian = ">"
                elif bom == b"\x4d\x3c\x2b\x1a":
                    self._endian = "<"
                else:
                    raise CaptureError(f"pcapng section header with byte-order magic {bom.hex()}",
                                       position=self.position + 8)
            e = self._endian
            btype, blen = struct.unpack_from(e + "II", buf, start)
            if blen < 12 or blen % 4 or blen > MAX_RECORD:
                raise CaptureError(f"pcapng block of {blen} bytes: corrupt length", position=self.position + 4)
            if len(buf) - start < blen:
                return NEED_DATA
            body = memoryview(buf)[start + 8:start + blen - 4]
            try:
                packet = self._block(btype, body)
            finally:
                body.release()
            self._consume(blen)
            if packet is not None:
                self.packets += 1
                return packet

    def _block(self, btype: int, body: memoryview) -> Packet | None:
        e = self._endian
        if btype == EPB:
            iface, hi, lo, caplen, orig = struct.unpack_from(e + "IIIII", body)
            itf = self._interface(iface)
            return Packet(itf.ts_ns((hi << 32) | lo), itf.linktype, bytes(body[20:20 + caplen]), orig, iface)
        if btype == PCAPNG_SHB:
            self._interfaces = []
            self.sections += 1
            return None
        if btype == IDB:
            linktype, _, snaplen = struct.unpack_from(e + "HHI", body)
            resol, offset = 6, 0
            pos = 8
            while pos + 4 <= len(body):
                code, olen = struct.unpack_from(e + "HH", body, pos)
                if code == 0:
                    break
                if code == 9 and olen >= 1:
                    resol = body[pos + 4]
                elif code == 14 and olen == 8:
                    offset = struct.unpack_from(e + "q", body, pos + 4)[0]
                pos += 4 + (olen + 3) // 4 * 4
            self._interfaces.append(_Interface(linktype, snaplen, _ts_converter(resol, offset)))
            return None
        if btype == SPB:
            orig = struct.unpack_from(e + "I", body)[0]
            itf = self._interface(0)
            caplen = min(orig, len(body) - 4, itf.snaplen or orig)
            return Packet(None, itf.linktype, bytes(body[4:4 + caplen]), orig, 0)
        if btype == PB:
            iface, _, hi, lo, caplen, orig = struct.unpack_from(e + "HHIIII", body)
            itf = self._interface(iface)
            return Packet(itf.ts_ns((hi << 32) | lo), itf.linktype, bytes(body[20:20 + caplen]), orig, iface)
        return None

    def _interface(self, index: int) -> _Interface:
        if index >= len(self._interfaces):
            raise CaptureError(f"packet names interface {index}, but the section declared "
                               f"{len(self._interfaces)}", position=self.position + 8)
        return self._interfaces[index]
