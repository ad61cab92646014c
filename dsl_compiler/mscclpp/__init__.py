"""mscclpp: the MSCCL++-compatible DSL compiler (``mscclpp.language``), its integration helpers
(``mscclpp.dsl.jit``, ``mscclpp.dsl.presets``), the runtime plan registry through ctypes
(``mscclpp.plan``) and the command line (``python3 -m mscclpp``).

Submodules load on first use, so ``import mscclpp`` stays cheap.
"""
import importlib

from ._version import __version__

__all__ = ["__version__", "language", "dsl", "plan", "PlanHandle", "Request", "DSLError"]


def __getattr__(name):
    if name in ("language", "dsl", "plan"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("PlanHandle", "Request"):
        return getattr(importlib.import_module(f"{__name__}.plan"), name)
    if name == "DSLError":
        return importlib.import_module(f"{__name__}.language.errors").DSLError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
