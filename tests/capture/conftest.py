"""Fixtures only the capture tests use.

kproto decode on captures: readers, the C paths, real clients recorded by tcpdump.
"""
