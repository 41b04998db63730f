"""kproto.server."""
