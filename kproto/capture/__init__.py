"""kproto.capture."""
