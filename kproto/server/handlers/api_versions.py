"""ApiVersions: what this broker speaks, from the handler table.

Header v0 responses whatever the version (KIP-511), and no tagged fields
(supported_features etc.): librdkafka 2.0.2 (Debian's kcat) misreads a
non-empty tag buffer in ApiVersions v3 (librdkafka <= 2.1), so kproto writes none.
"""

from __future__ import annotations

from kproto.schemas import protocol as P
from kproto.server.access import self_checked
from kproto.server.handlers import handles


@handles(P.api_versions, authorize=self_checked)
async def api_versions(broker, ctx, body) -> dict:
    return broker.api_versions_body()
