"""Request handlers, one module per API family (Kafka's KafkaApis, split up).

Theory of operation. A module answers an API by decorating its handler::

    @handles(P.delete_records, authorize=DELETE_RECORDS)
    async def delete_records(broker, ctx, body) -> dict: ...

which registers three facts in one place: the API (its schema module, whose
``API.served`` is the one statement of the versions the broker answers, with
the ledger saying why), the handler, and its authorization rule (an
``access.PerEntry``, an ``async (access, broker, ctx, body, handler)``
coroutine, or ``access.self_checked``). ``table()`` imports every module of
this package, so a new module is found without being listed anywhere.

A handler is ``async (broker, ctx: RequestContext, body) -> body | None``
(None: no response, Produce acks=0); ``ctx`` is what the request knows of
itself and its connection, built by the broker's dispatch.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from kproto.schemas.message import ApiSpec
from kproto.security.principal import KafkaPrincipal

if TYPE_CHECKING:
    from kproto.security.listeners import Listener
    from kproto.server.network import ConnectionInfo

Handler = Callable[[Any, "RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class RequestContext:
    """One request as its handler sees it (Kafka's RequestContext): the header's
    fields, and the connection it came in on with its principal and listener
    as they were when the request was read."""

    request_api_key: int
    request_api_version: int
    correlation_id: int
    client_id: str | None
    peer: str                   # "host:port" of the client
    host: str                   # the client's address, as ACLs match it
    principal: KafkaPrincipal
    listener: Listener | None   # None on a BrokerServer without listeners (tests)
    connection: ConnectionInfo  # the connection's info; its SASL state in ``.security``

    @property
    def client_host(self) -> str:
        """"/127.0.0.1": the client's address as Kafka prints it (InetAddress.toString)."""
        return "/" + self.host


@dataclass(frozen=True, slots=True)
class Api:
    """One API the broker answers."""

    spec: ApiSpec
    handle: Handler
    authorize: Any          # the rule kproto.server.access applies with an authorizer configured

    @property
    def versions(self) -> tuple[int, int]:
        """(min, max) the broker answers and ApiVersions advertises: the schema's ``served``."""
        return self.spec.served


_REGISTERED: dict[int, Api] = {}
_loaded = False


def handles(schema: ModuleType, *, authorize: Any) -> Callable[[Handler], Handler]:
    """Register the decorated handler for ``schema``'s API under the ``authorize`` rule."""
    spec = schema.API

    def register(handler: Handler) -> Handler:
        if spec.served is None:
            raise AssertionError(f"{spec.name} has a handler but its schema serves no version (served=None)")
        if spec.key in _REGISTERED:
            raise AssertionError(f"{spec.name} handled twice")
        _REGISTERED[spec.key] = Api(spec, handler, authorize)
        return handler
    return register


def table() -> dict[int, Api]:
    """api_key -> Api, every API the broker answers (each module of this package imported once)."""
    global _loaded
    if not _loaded:
        for m in pkgutil.iter_modules(__path__):
            # __import__, not importlib.import_module: the C import path, which `python -X importtime` times
            __import__(f"{__name__}.{m.name}")
        _loaded = True
    return dict(sorted(_REGISTERED.items()))


def lookup(api_key: int) -> Api:
    """The registered API for ``api_key`` (KeyError if the broker does not answer it)."""
    return _REGISTERED[api_key] if _loaded else table()[api_key]
