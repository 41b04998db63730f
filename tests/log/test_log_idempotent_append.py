"""The log's append path deduplicates idempotent retries and checks sequences
(Kafka's UnifiedLog.append with analyzeAndValidateProducerState,
ProducerStateEntry.findDuplicateBatch, ProducerAppendInfo.checkSequence /
checkProducerEpoch): a duplicate of one of the producer's last five batches
writes nothing and answers with that batch's offsets and timestamp."""

from __future__ import annotations

from pathlib import Path

import pytest

from kproto.errors import ErrorCode, KafkaError
from kproto.log import AppendOrigin, LogConfig, UnifiedLog
from kproto.records import NewRecord, build_record_batch
from tests.helpers import Clock

PID = 42


def idempotent(seq: int, n: int = 2, epoch: int = 0, ts: int = 5_000) -> bytes:
    return build_record_batch([NewRecord(b"k%d" % i, b"v", (), ts + i) for i in range(n)],
                              producer_id=PID, producer_epoch=epoch, base_sequence=seq)


def open_log(tmp_path: Path, clock: Clock, **props: str) -> UnifiedLog:
    return UnifiedLog.open(tmp_path / "t-0", LogConfig.from_props(props), clock=clock)


def test_the_same_idempotent_batch_twice_returns_the_first_offsets_and_writes_nothing(tmp_path):
    log = open_log(tmp_path, Clock(1_000_000))
    log.append(build_record_batch([NewRecord(b"x", b"y", (), 1)]))           # offset 0: not idempotent
    assert log.append(idempotent(0, 3)) == (1, 3, -1)
    end, size = log.log_end_offset, log.active_segment.log.size
    data = log.read(0, 1 << 20).read()

    assert log.append(idempotent(0, 3)) == (1, 3, 5_002)                    # the batch's max timestamp
    assert (log.log_end_offset, log.active_segment.log.size) == (end, size) == (4, len(data))
    assert log.read(0, 1 << 20).read() == data
    assert log.append(idempotent(3, 1)) == (4, 4, -1)                         # the sequence goes on


def test_a_retry_on_a_log_append_time_topic_gets_the_first_append_time(tmp_path):
    clock = Clock(1_000_000)
    log = open_log(tmp_path, clock, **{"message.timestamp.type": "LogAppendTime"})
    assert log.append(idempotent(0)) == (0, 1, 1_000_000)
    clock.now = 2_000_000
    assert log.append(idempotent(0)) == (0, 1, 1_000_000)
    assert log.log_end_offset == 2


def test_any_of_the_last_five_batches_is_a_duplicate_an_older_one_out_of_order(tmp_path):
    log = open_log(tmp_path, Clock())
    for i in range(7):
        assert log.append(idempotent(2 * i)).first_offset == 2 * i
    assert log.append(idempotent(4)) == (4, 5, 5_001)                        # the 3rd of 7: still cached
    with pytest.raises(KafkaError) as e:
        log.append(idempotent(2))                                            # the 2nd: forgotten
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 14


def test_gaps_and_fenced_epochs_are_refused_by_the_append(tmp_path):
    log = open_log(tmp_path, Clock())
    log.append(idempotent(0, epoch=3))
    with pytest.raises(KafkaError) as e:
        log.append(idempotent(5, epoch=3))
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(KafkaError) as e:
        log.append(idempotent(0, epoch=2))                                   # same sequences, older epoch
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as e:
        log.append(idempotent(2, epoch=4))                                   # a new epoch starts at 0
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 2
    assert log.append(idempotent(0, epoch=4)) == (2, 3, -1)


def test_a_producers_later_batch_in_the_same_append_follows_its_earlier_one(tmp_path):
    log = open_log(tmp_path, Clock())
    assert log.append(idempotent(0) + idempotent(2)) == (0, 3, -1)
    with pytest.raises(KafkaError) as e:
        log.append(idempotent(4) + idempotent(7))
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 4


def test_only_client_appends_are_deduplicated(tmp_path):
    """Replicated and coordinator appends are the leader's decision (Kafka checks
    duplicates and sequences for AppendOrigin.CLIENT only)."""
    log = open_log(tmp_path, Clock())
    log.append(idempotent(0))
    assert log.append(idempotent(0), origin=AppendOrigin.COORDINATOR) == (2, 3, -1)
    assert log.log_end_offset == 4
