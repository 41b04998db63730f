"""The broker's security: listeners, TLS contexts, SASL sessions, the
authorizer and its stores, wired to connections (the pieces themselves are
sans-I/O in kproto/security/).

Per connection, ``ConnectionSecurity`` holds the listener it came in on, the
peer host (ACLs match hosts) and the principal: from SASL on SASL_* listeners,
from the client certificate on SSL (``ssl.principal.mapping.rules``), else
``User:ANONYMOUS`` — as Kafka's DefaultKafkaPrincipalBuilder. Each request
carries its principal, host and listener in its ``RequestContext``
(kproto/server/handlers/), which is what the authorizer is asked about and
how Metadata advertises the listener the client used.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kproto.errors import InvalidConfigError
from kproto.security.acl import AclOperation, ResourceType
from kproto.security.authorizer import Authorizer, parse_super_users
from kproto.security.config import SECURITY_CONFIGS, ListenerSettings
from kproto.security.jaas import parse_jaas, plain_users
from kproto.security.listeners import Listener, advertised, parse_listeners, server_ssl_context
from kproto.security.plain import PlainServer
from kproto.security.principal import ANONYMOUS, KafkaPrincipal, SslPrincipalMapper, distinguished_name
from kproto.security.scram import MECHANISMS, ScramServer
from kproto.security.tokens import DelegationTokenManager
from kproto.security.session import SaslSession
from kproto.security.store import AclStore, ScramCredentialStore
from kproto.server.storage import bootstrap_scram
from kproto.server.network import CloseConnection

if TYPE_CHECKING:
    from kproto.server.handlers import RequestContext

log = logging.getLogger("kproto.server.security")


@dataclass(slots=True)
class ConnectionSecurity:
    listener: Listener
    host: str
    tls_principal: KafkaPrincipal | None = None
    session: SaslSession | None = None
    extra: dict = field(default_factory=dict)
    sasl_max_receive: int = 524288      # sasl.server.max.receive.size of the listener

    @property
    def max_receive_size(self) -> int | None:
        """The largest frame this connection may send now, when smaller than
        socket.request.max.bytes: sasl.server.max.receive.size until its first
        SASL authentication completes (Kafka's SaslServerAuthenticator); after
        it, and on listeners without SASL, None."""
        if self.session is None or self.session.authenticated:
            return None
        return self.sasl_max_receive

    @property
    def principal(self) -> KafkaPrincipal:
        if self.session is not None:
            return self.session.principal
        return self.tls_principal or ANONYMOUS


class SecurityService:
    def __init__(self, values: Mapping[str, Any], data_dir: str | Path, host: str, port: int) -> None:
        self.values = values
        self.listeners = parse_listeners(values, host, port)
        self.settings = {l.name: ListenerSettings(values, l.name) for l in self.listeners}
        self.contexts: dict[str, ssl.SSLContext] = {
            l.name: server_ssl_context(self.settings[l.name], l.name) for l in self.listeners if l.tls}
        self.mappers = {l.name: SslPrincipalMapper(self.settings[l.name].get("ssl.principal.mapping.rules"))
                        for l in self.listeners if l.tls}
        self.mechanisms = {l.name: self.settings[l.name].mechanisms() for l in self.listeners if l.sasl}
        self.sasl_max_receive = {name: self._int_setting(name, "sasl.server.max.receive.size")
                                 for name in self.mechanisms}
        self.plain_users = {name: self._plain_users(name) for name, mechs in self.mechanisms.items()
                            if "PLAIN" in mechs}
        self.scram = ScramCredentialStore(data_dir)
        if data_dir is not None and not self.scram.path.exists():
            # a first start on a directory `kproto storage format --add-scram` made (BootstrapMetadata)
            for user, mechanism, credential in bootstrap_scram(Path(data_dir)):
                self.scram.upsert(user, mechanism, credential)
        self.tokens = DelegationTokenManager(
            data_dir, values.get("delegation.token.secret.key") or None,
            max_lifetime_ms=int(self._value("delegation.token.max.lifetime.ms")),
            expiry_time_ms=int(self._value("delegation.token.expiry.time.ms")))
        self.acls = AclStore(data_dir)
        self.authorizer: Authorizer | None = None
        if values.get("authorizer.class.name"):
            self.authorizer = Authorizer(self.acls, super_users=parse_super_users(values.get("super.users", "")),
                                         allow_everyone_if_no_acl_found=bool(
                                             values.get("allow.everyone.if.no.acl.found")))
        self.bound: dict[str, tuple[str, int]] = {}
        self.endpoints: dict[str, tuple[str, int]] = {}

    def _value(self, name: str) -> Any:
        return self.values.get(name, SECURITY_CONFIGS[name][0])

    def _int_setting(self, listener: str, name: str) -> int:
        raw = self.settings[listener].get(name)
        try:
            return int(raw)
        except ValueError:
            raise InvalidConfigError(f"Invalid value {raw} for configuration {name}: "
                                     "Expected value to be a 32-bit integer") from None

    def _plain_users(self, listener: str) -> dict[str, str]:
        jaas = self.settings[listener].get("sasl.jaas.config", "PLAIN")
        if not jaas:
            raise InvalidConfigError(f"listener {listener} enables PLAIN but has no users: set "
                                     f"listener.name.{listener.lower()}.plain.sasl.jaas.config or sasl.jaas.config "
                                     'with user_<name>="<password>" options')
        _, options = parse_jaas(jaas)
        return plain_users(options)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, server, advertised_host: str | None = None) -> tuple[str, int]:
        """Bind every listener on ``server`` (a BrokerServer); -> the first one's address."""
        for l in self.listeners:
            self.bound[l.name] = await server.start(l.host, l.port, ssl=self.contexts.get(l.name), listener=l)
        self.endpoints = advertised(self.values, {
            n: (advertised_host or (h if h not in ("0.0.0.0", "::") else "127.0.0.1"), p)
            for n, (h, p) in self.bound.items()})
        for l in self.listeners:
            log.info("listening on %s://%s:%d", l.name, *self.bound[l.name])
        return self.bound[self.listeners[0].name]

    def endpoint(self, listener: Listener | None) -> tuple[str, int] | None:
        """The advertised address of ``listener`` (None: the first one)."""
        return self.endpoints.get(listener.name if listener is not None else self.listeners[0].name)

    # -- connections ----------------------------------------------------------------------------

    def on_connect(self, listener: Listener, peer_host: str, ssl_object: Any) -> ConnectionSecurity:
        conn = ConnectionSecurity(listener, peer_host)
        if ssl_object is not None:
            cert = ssl_object.getpeercert()
            if cert:
                dn = distinguished_name(cert["subject"])
                try:
                    conn.tls_principal = self.mappers[listener.name].principal(dn)
                except InvalidConfigError as e:     # Kafka: no principal, the connection fails
                    raise CloseConnection(f"ssl.principal.mapping.rules: {e}") from None
        if listener.sasl:
            reauth = int(self.settings[listener.name].get("connections.max.reauth.ms") or 0)
            conn.session = SaslSession(self.mechanisms[listener.name],
                                       lambda mech: self._sasl_server(listener.name, mech), reauth_ms=reauth)
            conn.sasl_max_receive = self.sasl_max_receive[listener.name]
        return conn

    def _sasl_server(self, listener: str, mechanism: str):
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users[listener])
        return ScramServer(MECHANISMS[mechanism], self.scram.lookup, token_lookup=self.tokens.scram_lookup)

    # -- authorization --------------------------------------------------------------------------

    def allowed(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str, *,
                log_denied: bool = True) -> bool:
        """Is the request's principal allowed (Kafka's AuthHelper.authorize)? Always, without an
        authorizer. ``log_denied=False`` when filtering a listing (Kafka's logIfDenied=false)."""
        if self.authorizer is None:
            return True
        ok = self.authorizer.authorize(ctx.principal, ctx.host, operation, resource_type, name)
        if not ok and log_denied:
            log.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                     ctx.principal, operation.name, ctx.host, resource_type.name.title().replace("_", ""), name)
        return ok

    def allowed_any(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Allowed ``operation`` on some resource of the type (Kafka's authorizeByResourceType)."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_any(ctx.principal, ctx.host, operation, resource_type)
