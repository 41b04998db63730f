"""Events in (requests) and out (responses, marker orders) of the transaction coordinator.

Inert frozen values with Kafka's JSON field names in snake_case, like the group
coordinator's (whose ``Pending`` and ``Append`` are shared). Wire-version
mapping is the server's: InitProducerId < v4, AddPartitionsToTxn/AddOffsetsToTxn
< v2 and EndTxn < v2 clients do not know PRODUCER_FENCED and get
INVALID_PRODUCER_EPOCH instead (``fenced_error``); AddPartitionsToTxn answers
one error for every partition of the request.
"""

from __future__ import annotations

from dataclasses import dataclass

from kproto.errors import ErrorCode
from kproto.server.runtime.core import Append, Pending
from kproto.server.txn_coordinator.metadata import TopicPartition
from kproto.server.txn_coordinator.state import TransactionResult

__all__ = [
    "InitProducerIdRequest", "AddPartitionsToTxnRequest", "AddOffsetsToTxnRequest", "EndTxnRequest",
    "DescribeTransactionsRequest", "ListTransactionsRequest", "Request", "InitProducerIdResponse",
    "AddPartitionsToTxnResponse", "AddOffsetsToTxnResponse", "EndTxnResponse", "DescribedTransaction",
    "DescribeTransactionsResponse", "ListedTransaction", "ListTransactionsResponse", "Response",
    "WriteTxnMarkers", "Append", "Pending", "fenced_error",
]

_frozen = dataclass(frozen=True, slots=True, kw_only=True)


@_frozen
class InitProducerIdRequest:
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int = -1                     # v3+ (KIP-360): the id and epoch the producer had
    producer_epoch: int = -1


@_frozen
class AddPartitionsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]
    verify_only: bool = False                 # v4+ (KIP-890): are they in the transaction?
    client_transaction_version: int = 0       # 2: a Produce v12+ adding them (KIP-890 part 2)


@_frozen
class AddOffsetsToTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    client_transaction_version: int = 0       # 2: a TxnOffsetCommit v5+ adding the group's partition


@_frozen
class EndTxnRequest:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    client_transaction_version: int = 0       # 2: EndTxn v5+, which bumps the epoch (KIP-890 part 2)


@_frozen
class DescribeTransactionsRequest:
    transactional_ids: tuple[str, ...]


@_frozen
class ListTransactionsRequest:
    state_filters: tuple[str, ...] = ()
    producer_id_filters: tuple[int, ...] = ()
    duration_filter: int = -1                 # v1+: only transactions running longer than this (ms)


Request = (InitProducerIdRequest | AddPartitionsToTxnRequest | AddOffsetsToTxnRequest | EndTxnRequest
           | DescribeTransactionsRequest | ListTransactionsRequest)


@_frozen
class InitProducerIdResponse:
    error_code: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@_frozen
class AddPartitionsToTxnResponse:
    error_code: ErrorCode                     # the error of every partition, unless ``verified``
    verified: tuple[tuple[TopicPartition, ErrorCode], ...] = ()    # verify_only: per partition


@_frozen
class AddOffsetsToTxnResponse:
    error_code: ErrorCode


@_frozen
class EndTxnResponse:
    error_code: ErrorCode
    producer_id: int = -1                     # v5+: the id and (bumped) epoch for the next transaction
    producer_epoch: int = -1


@_frozen
class DescribedTransaction:
    transactional_id: str
    error_code: ErrorCode
    transaction_state: str = ""
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    topics: tuple[tuple[str, tuple[int, ...]], ...] = ()     # sorted by topic, partitions sorted


@_frozen
class DescribeTransactionsResponse:
    transaction_states: tuple[DescribedTransaction, ...]


@_frozen
class ListedTransaction:
    transactional_id: str
    producer_id: int
    transaction_state: str


@_frozen
class ListTransactionsResponse:
    error_code: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transaction_states: tuple[ListedTransaction, ...] = ()


Response = (InitProducerIdResponse | AddPartitionsToTxnResponse | AddOffsetsToTxnResponse | EndTxnResponse
            | DescribeTransactionsResponse | ListTransactionsResponse)


@dataclass(frozen=True, slots=True)
class WriteTxnMarkers:
    """Write a ``result`` control batch (producer id and epoch, the coordinator's
    epoch) to each of ``partitions``, then report with
    ``TransactionCoordinator.markers_done(id, ...)``."""

    id: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    result: TransactionResult
    partitions: tuple[TopicPartition, ...]


_FENCED_BEFORE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}


def fenced_error(api: str, version: int, error: ErrorCode) -> ErrorCode:
    """``error`` as a client of ``api`` at ``version`` understands it (KafkaApis)."""
    if error is ErrorCode.PRODUCER_FENCED and version < _FENCED_BEFORE.get(api, 0):
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
