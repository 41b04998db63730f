"""Request and response headers: what precedes every body in a frame.

Ledger (doc-ref: RequestHeader.json, ResponseHeader.json, KIP-482)::

    RequestHeader v0  request_api_key request_api_version correlation_id
                      (only ControlledShutdown v0 used it; kproto never emits it)
    RequestHeader v1  + client_id NULLABLE_STRING
    RequestHeader v2  + TAG_BUFFER; client_id stays NULLABLE_STRING (not compact)
    ResponseHeader v0 correlation_id
    ResponseHeader v1 + TAG_BUFFER

Which header a body uses: request v2 / response v1 exactly when the API
version is flexible, with one exception kept in ApiSpec: ApiVersions
responses always use response header v0 (a client reads the answer before it
knows what the broker speaks; a tag byte there is read as the top byte of
error_code, redpanda #296). client_id is never compact so that a broker can
read the header of a request whose version it does not know.

The request header's first two fields are the same in every version, which
is how a reader learns which API and version (and so which header) it holds.
"""

from __future__ import annotations

from construct import Construct

from kproto.schemas.message import INT16, INT32, STRING, Field, Struct, codec

__all__ = ["REQUEST_HEADER", "RESPONSE_HEADER", "request_header", "response_header"]

REQUEST_HEADER = Struct(
    "RequestHeader",
    Field("request_api_key", INT16, doc="which API the body belongs to"),
    Field("request_api_version", INT16, doc="which version of that API the body is encoded in"),
    Field("correlation_id", INT32, doc="echoed in the response so the client can match it"),
    Field("client_id", STRING, "1+", nullable="1+", flexible="none",
          doc="free-form client name for logs and quotas; never compact"),
)

RESPONSE_HEADER = Struct(
    "ResponseHeader",
    Field("correlation_id", INT32, doc="the correlation_id of the request answered"),
)


def request_header(version: int) -> Construct:
    """RequestHeader v0, v1 or v2."""
    if version not in (0, 1, 2):
        raise ValueError(f"no request header v{version}")
    return codec(REQUEST_HEADER, version, version >= 2)


def response_header(version: int) -> Construct:
    """ResponseHeader v0 or v1."""
    if version not in (0, 1):
        raise ValueError(f"no response header v{version}")
    return codec(RESPONSE_HEADER, version, version >= 1)
