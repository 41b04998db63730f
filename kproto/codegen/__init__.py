"""Fast codecs derived from the schemas: the code generators, in one package.

- ``walk``: what they share (node kinds of the record schema, the source
  writer, the ``Irregular`` signal);
- ``python``: record codecs as straight-line Python (``derive_decoder``,
  ``derive_encoder``, ``header_struct``);
- ``c``: the same record schema translated to C, ``python -m kproto.codegen.c``
  regenerates ``kproto/_crecords.c``;
- ``protocol``: the request/response codecs of ``kproto.schemas.message``
  (``fast_parser``, ``fast_builder``).

The schemas stay the only description of each format; tests prove every
translation equal to them (tests/codec_check.py, tests/test_codegen_c.py,
tests/test_protocol_fastpath.py).
"""

from __future__ import annotations

from kproto.codegen.python import derive_decoder, derive_encoder, header_struct

__all__ = ["derive_decoder", "derive_encoder", "header_struct"]
