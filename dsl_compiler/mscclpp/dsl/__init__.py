"""Integration helpers: ``jit`` compiles DSL functions into cached plans, ``presets`` defines the
default plans."""
import importlib

__all__ = ["jit", "presets"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(name)
