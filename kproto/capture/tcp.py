"""TCP reassembly for one direction of a connection, sans-I/O.

``HalfStream.segment()`` takes a captured segment and returns what it makes
deliverable, in stream order: ``bytes`` and ``Gap(n)`` (n bytes that were on
the wire but never captured). Sequence numbers are compared modulo 2**32.

Theory of operation:

* The stream starts at the SYN's sequence + 1; without a SYN (capture began
  mid-connection) at the first segment seen, and ``synced`` stays False so the
  frame layer knows it may be mid-PDU.
* Bytes before the next expected sequence are retransmissions (dropped);
  a segment straddling it is trimmed (overlap: the first copy wins, as the
  receiver kept it). Segments past it wait in ``pending``.
* A hole becomes a ``Gap`` when it can no longer be filled: the peer's ACK
  covers it (the receiver had those bytes, the capture did not), more than
  ``MAX_PENDING`` bytes wait behind it, or the stream ends (``flush``).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Gap", "HalfStream", "MAX_PENDING"]

MOD = 1 << 32
HALF = 1 << 31
# Out-of-order bytes held per direction before the hole is declared a gap.
MAX_PENDING = 8 * 1024 * 1024


class Gap(NamedTuple):
    size: int


def _delta(a: int, b: int) -> int:
    """a - b as a signed 32-bit sequence distance."""
    d = (a - b) % MOD
    return d - MOD if d >= HALF else d


class HalfStream:
    __slots__ = ("next_seq", "synced", "pending", "pending_bytes", "retransmitted", "gap_bytes")

    def __init__(self) -> None:
        self.next_seq: int | None = None
        self.synced = False
        self.pending: dict[int, tuple[bytes, int]] = {}   # seq -> (payload, missing after it)
        self.pending_bytes = 0
        self.retransmitted = 0
        self.gap_bytes = 0

    def segment(self, seq: int, syn: bool, payload: bytes, missing: int = 0) -> list:
        if seq == self.next_seq and payload and not (syn or missing or self.pending):
            self.next_seq = (seq + len(payload)) % MOD          # the usual segment: next in order
            return [payload]
        if syn:
            if self.next_seq is None or not self.synced:
                self.next_seq = (seq + 1) % MOD
                self.synced = True
            seq = (seq + 1) % MOD
        if not payload and not missing:
            return []
        if self.next_seq is None:
            self.next_seq = seq
        d = _delta(seq, self.next_seq)
        if d + len(payload) + missing <= 0:
            self.retransmitted += len(payload)
            return []
        if d < 0:                      # overlap: keep only what is new
            cut = min(-d, len(payload))
            payload, missing, d = payload[cut:], missing - (-d - cut), 0
            seq = self.next_seq
        if d > 0:
            old = self.pending.get(seq)
            if old is None or len(old[0]) + old[1] < len(payload) + missing:
                self.pending_bytes += len(payload) - (len(old[0]) if old else 0)
                self.pending[seq] = (payload, missing)
            if self.pending_bytes > MAX_PENDING:
                return self.flush(until_empty=False)
            return []
        out: list = []
        self._take(payload, missing, out)
        self._drain(out)
        return out

    def acked(self, ack: int) -> list:
        """The peer acknowledged up to ``ack``: bytes before it that are
        still missing were never captured."""
        if not self.pending or self.next_seq is None:
            return []
        if _delta(ack, self.next_seq) <= 0:
            return []
        first = min(self.pending, key=lambda s: _delta(s, self.next_seq))
        if _delta(ack, first) < 0:     # the ACK stops inside the hole: it may still come
            return []
        return self.flush(until_empty=False)

    def flush(self, until_empty: bool = True) -> list:
        """Give up on the first hole (or every hole): Gap, then what follows."""
        out: list = []
        while self.pending:
            first = min(self.pending, key=lambda s: _delta(s, self.next_seq))
            gap = _delta(first, self.next_seq)
            if gap > 0:
                out.append(Gap(gap))
                self.gap_bytes += gap
                self.next_seq = first
            self._drain(out)
            if not until_empty:
                break
        return out

    def _take(self, payload: bytes, missing: int, out: list) -> None:
        if payload:
            out.append(payload)
        if missing > 0:
            out.append(Gap(missing))
            self.gap_bytes += missing
        self.next_seq = (self.next_seq + len(payload) + max(missing, 0)) % MOD

    def _drain(self, out: list) -> None:
        pending = self.pending
        while pending:
            progressed = False
            for seq in list(pending):
                d = _delta(seq, self.next_seq)
                if d > 0:
                    continue
                payload, missing = pending.pop(seq)
                self.pending_bytes -= len(payload)
                overlap = -d
                if overlap >= len(payload) + missing:
                    self.retransmitted += len(payload)
                    continue
                if overlap > len(payload):
                    payload, missing = b"", missing - (overlap - len(payload))
                else:
                    payload = payload[overlap:]
                self._take(payload, missing, out)
                progressed = True
            if not progressed:
                return
