# Only the C accelerator lives here; everything else is in pyproject.toml.
# kproto/_crecords.c is generated from the schema by `python -m generators.c`.
# optional=True: without a working C compiler the build skips the extension and
# kproto runs on its pure-Python codec (kproto.records logs that once, at debug level).
from setuptools import Extension, setup

setup(ext_modules=[Extension("kproto._crecords", ["kproto/_crecords.c"], extra_compile_args=["-O2"],
                             optional=True)])
