"""Fixtures only the schemas tests use.

The protocol schemas and codecs: primitives, the registry, Kafka's definitions, round
trips, the fast path, framing, internal records.
"""
