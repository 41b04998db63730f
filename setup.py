# Only the C accelerator lives here; everything else is in pyproject.toml.
# kproto._crecords is csrc/*.c: records_generated.c is generated from the record
# schema by `python -m generators.c` (run from the repo root), the rest is hand-written
# (csrc/crecords.h says which file holds what). MANIFEST.in puts csrc/ in the sdist.
# optional=True: without a working C compiler the build skips the extension and
# kproto runs on its pure-Python codec (kproto.accel logs that once, at debug level).
from setuptools import Extension, setup

SOURCES = ["csrc/module.c", "csrc/records.c", "csrc/records_generated.c", "csrc/json.c", "csrc/crc32c.c",
           "csrc/packet.c", "csrc/lines.c"]

setup(ext_modules=[Extension("kproto._crecords", SOURCES, depends=["csrc/crecords.h"], include_dirs=["csrc"],
                             extra_compile_args=["-O2"], optional=True)])
