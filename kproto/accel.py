"""The optional C accelerators: one switch, one loader.

kproto's C code (``kproto._crecords``, generated from the record schema by
``generators.c``) only makes hot paths faster; every path also exists in
pure Python and the tests prove the two equal. A machine without a C compiler
installs kproto without it (setup.py marks the extension optional), and
``KPROTO_NO_EXTENSIONS=1`` switches the built one off, e.g. to test the
pure-Python path or to rule the C code out while debugging.
"""

from __future__ import annotations

import importlib
import logging
import os
from types import ModuleType

__all__ = ["DISABLED", "load"]

log = logging.getLogger("kproto")

#: True when the environment asks for the pure-Python paths (any value but "" or "0").
DISABLED: bool = os.environ.get("KPROTO_NO_EXTENSIONS", "") not in ("", "0")


def load(name: str, *, honour_switch: bool = True) -> ModuleType | None:
    """``kproto.<name>``, or None (said once, at debug level) when it is switched
    off or was not built; ``honour_switch=False`` is for tests that compare the
    C and Python paths whatever the switch says."""
    if DISABLED and honour_switch:
        log.debug("KPROTO_NO_EXTENSIONS is set: kproto.%s not loaded, using the pure-Python path", name)
        return None
    try:
        return importlib.import_module(f"kproto.{name}")
    except ImportError as e:
        log.debug("kproto.%s is not built (%s): using the pure-Python path", name, e)
        return None
