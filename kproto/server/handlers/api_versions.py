"""ApiVersions: what this broker speaks, from the handler table.

Header v0 responses whatever the version (KIP-511), and no tagged fields
(supported_features etc.): librdkafka 2.0.2 (Debian's kcat) misreads a
non-empty tag buffer in ApiVersions v3 (librdkafka <= 2.1), so kproto writes none.
"""

from __future__ import annotations

from kproto.schemas import protocol as P


async def api_versions(broker, header, body) -> dict:
    return broker.api_versions_body()


# Versions: every one the registry speaks (v0-4).
HANDLERS = {P.api_versions.API.key: (api_versions, 0, 4)}
