"""Request handlers, one module per API family (Kafka's KafkaApis, split up).

Theory of operation. A module answers an API by decorating its handler::

    @handles(P.delete_records, authorize=DELETE_RECORDS)
    async def delete_records(broker, ctx, body) -> dict: ...

which registers three facts in one place: the API (its schema module, whose
``API.served`` is the one statement of the versions the broker answers, with
the ledger saying why), the handler, and its authorization rule (an
``access.PerEntry``, an ``async (access, broker, ctx, body, handler)``
coroutine, or ``access.self_checked``). ``table()`` reads every module of this
package for its ``@handles(P.<api>, ...)`` lines, so a new module is found without
being listed anywhere. A broker imports them all (``load_all``) before it listens:
an import opens files, and a broker out of descriptors must still answer its
connections (tests/server/test_broker_fd_limit.py); the fork server of
kproto.testing imports them once for every broker it forks.

A handler is ``async (broker, ctx: RequestContext, body) -> body | None``
(None: no response, Produce acks=0); ``ctx`` is what the request knows of
itself and its connection, built by the broker's dispatch.
"""

from __future__ import annotations

import pkgutil
import re
import sys
from dataclasses import dataclass
from pathlib import Path
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
    """One API the broker answers: its schema, and the handler module that registers its
    handler and authorization rule, imported when they are first asked for (a broker
    imports only the modules of the APIs it is asked: the versions need the schema only)."""

    spec: ApiSpec
    module: str             # e.g. "kproto.server.handlers.produce"

    @property
    def versions(self) -> tuple[int, int]:
        """(min, max) the broker answers and ApiVersions advertises: the schema's ``served``."""
        return self.spec.served

    @property
    def handle(self) -> Handler:
        return _registered(self).handle

    @property
    def authorize(self) -> Any:
        """The rule kproto.server.access applies with an authorizer configured."""
        return _registered(self).authorize


@dataclass(frozen=True, slots=True)
class _Registration:
    handle: Handler
    authorize: Any


_REGISTERED: dict[int, _Registration] = {}
_TABLE: dict[int, Api] | None = None
#: How a module registers a handler: ``@handles(P.<schema module>, authorize=...)``.
_HANDLES = re.compile(r"^@handles\(P\.(\w+),", re.MULTILINE)


def handles(schema: ModuleType, *, authorize: Any) -> Callable[[Handler], Handler]:
    """Register the decorated handler for ``schema``'s API under the ``authorize`` rule."""
    spec = schema.API

    def register(handler: Handler) -> Handler:
        if spec.served is None:
            raise AssertionError(f"{spec.name} has a handler but its schema serves no version (served=None)")
        if spec.key in _REGISTERED:
            raise AssertionError(f"{spec.name} handled twice")
        _REGISTERED[spec.key] = _Registration(handler, authorize)
        return handler
    return register


def _registered(api: Api) -> _Registration:
    found = _REGISTERED.get(api.spec.key)
    if found is None:
        __import__(api.module)
        found = _REGISTERED.get(api.spec.key)
        if found is None:
            raise AssertionError(f"{api.module} names {api.spec.name} in @handles but did not register it")
    return found


def table() -> dict[int, Api]:
    """api_key -> Api, every API the broker answers: found by reading each module of this
    package for its ``@handles(P.<api>, ...)`` lines, without importing it."""
    global _TABLE
    if _TABLE is None:
        found: dict[int, Api] = {}
        for m in pkgutil.iter_modules(__path__):
            source = Path(__path__[0], f"{m.name}.py").read_text(encoding="utf-8")
            for schema in _HANDLES.findall(source):
                # __import__, not importlib.import_module: the C import path, which `python -X importtime` times
                __import__(f"kproto.schemas.protocol.{schema}")
                spec = sys.modules[f"kproto.schemas.protocol.{schema}"].API
                if spec.served is None:
                    raise AssertionError(f"{spec.name} has a handler but its schema serves no version (served=None)")
                if spec.key in found:
                    raise AssertionError(f"{spec.name} handled twice")
                found[spec.key] = Api(spec, f"{__name__}.{m.name}")
        _TABLE = dict(sorted(found.items()))
    return dict(_TABLE)


def load_all() -> None:
    """Import every handler module now (registering each handler and rule), so that no
    request ever waits on, or fails in, an import."""
    for api in (_TABLE if _TABLE is not None else table()).values():
        _registered(api)


def lookup(api_key: int) -> Api:
    """The registered API for ``api_key`` (KeyError if the broker does not answer it)."""
    return (_TABLE if _TABLE is not None else table())[api_key]
