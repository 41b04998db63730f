"""Fixtures only the parity tests use.

kproto against Kafka's own tools and tests and third-party codecs: parity, the
reference, conformance, Wireshark.
"""
