"""Idempotent producer rules: retries deduplicated, gaps and old epochs rejected."""

import pytest

from kproto.errors import ErrorCode
from kproto.records import NewRecord, build_record_batch, iter_batches
from kproto.log.producer_state import ProducerStateManager


def appended(m, pid, epoch, first, last, offset):
    assert m.check(pid, epoch, first, last) is None
    m.update(pid, epoch, first, last, offset, offset + last - first, 0)


def test_in_order_then_retry_is_a_duplicate():
    m = ProducerStateManager()
    appended(m, 7, 0, 0, 4, 100)
    appended(m, 7, 0, 5, 9, 105)
    dup = m.check(7, 0, 0, 4)
    assert (dup.first_offset, dup.last_offset) == (100, 104)


def test_gap_is_out_of_order():
    m = ProducerStateManager()
    appended(m, 7, 0, 0, 4, 100)
    with pytest.raises(Exception) as e:
        m.check(7, 0, 6, 9)
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_old_epoch_fenced_and_new_epoch_restarts_at_zero():
    m = ProducerStateManager()
    appended(m, 7, 3, 0, 0, 0)
    with pytest.raises(Exception) as e:
        m.check(7, 2, 1, 1)
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(Exception) as e:
        m.check(7, 4, 5, 5)
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    appended(m, 7, 4, 0, 0, 1)


def test_only_the_last_five_batches_are_remembered():
    m = ProducerStateManager()
    for i in range(7):
        appended(m, 1, 0, i, i, i)
    assert m.check(1, 0, 2, 2) is not None
    with pytest.raises(Exception):
        m.check(1, 0, 1, 1)          # too old to recognise as a retry: out of order


def test_sequence_wraps_past_int_max():
    m = ProducerStateManager()
    appended(m, 1, 0, 2**31 - 2, 2**31 - 1, 0)
    appended(m, 1, 0, 0, 3, 2)


def test_replay_from_batch_headers():
    log = b"".join(build_record_batch([NewRecord(b"k", b"v")] * 3, base_offset=o, producer_id=9,
                                      producer_epoch=1, base_sequence=s) for o, s in ((0, 0), (3, 3)))
    m = ProducerStateManager()
    m.replay(iter_batches(log))
    assert m.check(9, 1, 3, 5).first_offset == 3
    assert m.check(9, 1, 6, 8) is None
