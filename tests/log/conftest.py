"""Fixtures only the log tests use.

kproto.log: segments, indexes, recovery, retention, compaction, producer state, the
manager.
"""
