"""Fixtures only the tools tests use.

The kproto command tree and its client: dump-log, topics, groups, offsets, transactions,
users/acls, packaging.
"""
