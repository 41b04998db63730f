# Only the C accelerator lives here; everything else is in pyproject.toml.
# kproto/_crecords.c is generated from the schema by `python -m kproto.codegen_c`.
from setuptools import Extension, setup

setup(ext_modules=[Extension("kproto._crecords", ["kproto/_crecords.c"], extra_compile_args=["-O2"])])
