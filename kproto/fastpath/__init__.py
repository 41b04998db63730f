"""Run-time fast paths: codecs derived from the schemas when kproto imports them.

- ``walk``: what the derivations share (node kinds of the record schema, the
  source writer, the ``Irregular`` signal); the build-time C generator
  (generators/c.py, outside the package) walks the same nodes;
- ``python``: record codecs as straight-line Python (``derive_decoder``,
  ``derive_encoder``, ``header_struct``);
- ``protocol``: the request/response codecs of ``kproto.schemas.message``
  (``fast_parser``, ``fast_builder``), used by ``kproto.protocol``.

The schemas stay the only description of each format; tests prove every
translation equal to them (tests/records/codec_check.py, tests/records/test_codegen_c.py,
tests/schemas/test_protocol_fastpath.py).
"""

from __future__ import annotations

from kproto.fastpath.python import derive_decoder, derive_encoder, header_struct

__all__ = ["derive_decoder", "derive_encoder", "header_struct"]
