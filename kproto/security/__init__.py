"""Security as Kafka has it, sans-I/O: SASL (PLAIN, SCRAM-SHA-256/512) server
state machines, principals (``ssl.principal.mapping.rules``), the ACL model and
its authorizer, durable ACL and SCRAM credential stores, listener configs.

Nothing here touches a socket: the broker feeds bytes and asks questions
(``kproto/server/security_hooks.py`` wires it to the connection).
"""
