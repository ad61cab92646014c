"""mscclpp: the MSCCL++-compatible DSL compiler (``mscclpp.language``), its integration helpers
(``mscclpp.dsl.jit``, ``mscclpp.dsl.presets``), the runtime plan registry through ctypes
(``mscclpp.plan``), the customized-communicator path of seed 004 (``mscclpp.comm.CommGroup``,
``mscclpp.ExecutionPlanRegistry``, ``mscclpp.Executor``, ``mscclpp.dtype_to_mscclpp_dtype``) and the
command line (``python3 -m mscclpp``).

Submodules load on first use, so ``import mscclpp`` stays cheap.
"""
import importlib

from ._version import __version__

__all__ = [
    "__version__", "language", "dsl", "plan", "PlanHandle", "Request", "DSLError",
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
    if name in ("language", "dsl", "plan", "comm", "errors", "dtypes", "buffers", "registry", "executor"):
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_SUBMODULE:
        return getattr(importlib.import_module(f"{__name__}.{_FROM_SUBMODULE[name]}"), name)
    if name in ("PlanHandle", "Request"):
        return getattr(importlib.import_module(f"{__name__}.plan"), name)
    if name == "DSLError":
        return importlib.import_module(f"{__name__}.language.errors").DSLError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
