"""A segment's aborted-transaction index, ``<base>.txnindex`` (TransactionIndex.java).

One 34-byte entry (kproto.schemas.transaction_files) per transaction whose
ABORT marker sits in the segment, in marker order; ``first_offset`` may lie in
an earlier segment. The file is created on the first entry, never
preallocated; a partial trailing entry is ignored, as Kafka's iterator does.
``last_stable_offset`` is the partition's LSO once the abort was written: a
fetch reading up to an upper bound stops at the first entry whose LSO reaches it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from kproto.fastpath import header_struct
from kproto.errors import CorruptRecordError
from kproto.log.index import CorruptIndexError
from kproto.schemas.transaction_files import ABORTED_TXN_SIZE, ABORTED_TXN_VERSION, AbortedTxnEntry

__all__ = ["TXN_INDEX_SUFFIX", "AbortedTxn", "TxnIndexSearchResult", "TransactionIndex", "parse_txn_index"]

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY, _ = header_struct(AbortedTxnEntry)


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    is_complete: bool           # an entry's LSO reached the upper bound: later segments cannot add any


def parse_txn_index(data: bytes | bytearray | memoryview, file: str | None = None) -> list[AbortedTxn]:
    """The entries of a ``.txnindex`` file's bytes. Kafka reads the version as
    one *byte* at the entry's start (AbortedTxn.version); above 0 is an error."""
    out = []
    for pos in range(0, len(data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE):
        if data[pos] > ABORTED_TXN_VERSION:
            raise CorruptRecordError(f"Unexpected aborted transaction version {data[pos]} in transaction index, "
                                     f"current version is {ABORTED_TXN_VERSION}", position=pos, file=file)
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out


class TransactionIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] = []
        self._error: CorruptRecordError | None = None     # raised by sanity_check: the loader recovers
        if self.path.exists():
            try:
                self._entries = parse_txn_index(self.path.read_bytes(), str(self.path))
            except CorruptRecordError as e:
                self._error = e

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        return tuple(self._entries)

    @property
    def last_offset(self) -> int | None:
        return self._entries[-1].last_offset if self._entries else None

    def append(self, txn: AbortedTxn) -> None:
        last = self.last_offset
        if last is not None and last >= txn.last_offset:
            raise ValueError(f"The last offset of appended transactions must increase sequentially, but "
                             f"{txn.last_offset} is not greater than current last offset {last} of index "
                             f"{self.path.absolute()}")
        with open(self.path, "ab") as f:
            f.write(txn.to_bytes())
        self._entries.append(txn)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset)."""
        found = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at ``offset`` or later."""
        keep = [t for t in self._entries if t.last_offset < offset]
        if len(keep) != len(self._entries) and self.path.exists():
            os.truncate(self.path, len(keep) * ABORTED_TXN_SIZE)
        self._entries = keep

    def reset(self) -> None:
        self._error = None
        self._entries = []
        if self.path.exists():
            os.truncate(self.path, 0)

    def sanity_check(self) -> None:
        if self._error is not None:
            raise CorruptIndexError(self._error.reason, position=self._error.position, file=str(self.path))
        for txn in self._entries:
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index {self.path.absolute()} is less than "
                    f"start offset {self.base_offset}", file=str(self.path))

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = Path(path)

    def flush(self) -> None:
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
