"""kproto.client."""
