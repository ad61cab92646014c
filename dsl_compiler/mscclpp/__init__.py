"""mscclpp: the MSCCL++-compatible DSL compiler and the runtime's Python API.

``mscclpp.language`` is the DSL; ``mscclpp.dsl`` holds ``jit`` and the default plans' presets;
``mscclpp.plan`` reaches the runtime's plan registry, ``mscclpp.algorithm`` its native algorithms;
``mscclpp.comm``, ``ExecutionPlanRegistry`` and ``Executor`` run plans from Python (docs/python-api.md);
``python3 -m mscclpp`` is the CLI.
Submodules load on first use, so ``import mscclpp`` stays cheap.
"""
import importlib

from ._version import __version__

__all__ = [
    "__version__", "language", "dsl", "plan", "algorithm", "PlanHandle", "Request", "DSLError",
    "comm", "errors", "dtypes", "buffers", "ExecutionPlanRegistry", "ExecutionPlanHandle", "ExecutionPlan",
    "Executor", "DataType", "ReduceOp", "dtype_to_mscclpp_dtype", "MscclppError",
]

# Names re-exported from submodules, loaded on first use.
_FROM_SUBMODULE = {
    "ExecutionPlanRegistry": "registry",
    "ExecutionPlanHandle": "registry",
    "ExecutionPlan": "registry",
    "Executor": "executor",
    "DataType": "dtypes",
    "ReduceOp": "dtypes",
    "dtype_to_mscclpp_dtype": "dtypes",
    "MscclppError": "errors",
}


def __getattr__(name):
    if name in ("language", "dsl", "plan", "algorithm", "comm", "errors", "dtypes", "buffers", "registry", "executor"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_SUBMODULE:
        return getattr(importlib.import_module(f"{__name__}.{_FROM_SUBMODULE[name]}"), name)
    if name in ("PlanHandle", "Request"):
        return getattr(importlib.import_module(f"{__name__}.plan"), name)
    if name == "DSLError":
        return importlib.import_module(f"{__name__}.language.errors").DSLError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
