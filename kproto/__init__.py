"""kproto: the Apache Kafka wire protocol and log format, in Python."""

__version__ = "0.1.0"
