"""kproto.tools."""
