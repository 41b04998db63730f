"""kproto.spark."""
