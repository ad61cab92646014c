"""Native algorithms from Python: the second step of the NCCL shim's choice (docs/algorithms.md).

    mscclpp.algorithm.load("libcustom_allgather.so")   # a library that registers its kernels when loaded
    mscclpp.algorithm.set_selector(lambda candidates, req: ...)
    mscclpp.algorithm.algorithms()                     # the native algorithms, registered ones first

Everything goes through the C API (mscclpp/algorithm_api.h) of the runtime ``_runtime_lib.load()``
finds: the preloaded NCCL shim's when there is one, so its calls see these registrations.
"""
import ctypes
from dataclasses import dataclass, field
from typing import Callable, List, Optional

from . import _runtime_lib as rt
from .plan import PlanError, Request, _c_request, _request, _text

__all__ = ["load", "algorithms", "select", "set_selector", "unregister", "AlgorithmInfo", "NONE", "DEFAULT"]

_ERROR_LENGTH = 1024
NONE = -1  # a selector's answer: no algorithm, the real NCCL runs the call
DEFAULT = -2  # a selector's answer: the default choice, the first candidate


class _Info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_char_p),
        ("collective", ctypes.c_char_p),
        ("minMessageBytes", ctypes.c_uint64),
        ("maxMessageBytes", ctypes.c_uint64),
        ("bufferMode", ctypes.c_int),
        ("worldSize", ctypes.c_int),
        ("nRanksPerNode", ctypes.c_int),
        ("tags", ctypes.POINTER(ctypes.c_char_p)),
        ("nTags", ctypes.c_int),
        ("builtin", ctypes.c_int),
    ]


_SELECTOR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), ctypes.c_int, ctypes.POINTER(rt.PlanRequest),
                             ctypes.c_void_p)


@dataclass(frozen=True)
class AlgorithmInfo:
    """An algorithm as a selector sees it: kind "plan" (a DSL plan) or "native"."""

    name: str
    kind: str
    collective: str
    min_message_size: int
    max_message_size: int
    buffer_mode: int  # 0 any, 1 in place only, 2 out of place only
    world_size: int
    nranks_per_node: int
    tags: frozenset = field(default_factory=frozenset)
    builtin: bool = False


def _lib():
    lib = rt.load()
    if not hasattr(lib, "mscclppAlgorithmRegister"):
        raise rt.RuntimeNotLoaded("the MSCCL++ runtime found lacks the native algorithm C API (algorithm_api.h)")
    lib.mscclppAlgorithmGetInfo.argtypes = [ctypes.c_int, ctypes.POINTER(_Info)]
    lib.mscclppAlgorithmSetSelector.argtypes = [_SELECTOR, ctypes.c_void_p]
    lib.mscclppAlgorithmUnregister.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mscclppAlgorithmSelect.argtypes = [ctypes.POINTER(rt.PlanRequest)] + [ctypes.c_char_p, ctypes.c_size_t] * 3
    return lib


def _info(c):
    tags = frozenset(_text(c.tags[i]) for i in range(c.nTags)) if c.nTags > 0 else frozenset()
    return AlgorithmInfo(_text(c.name), _text(c.kind), _text(c.collective), c.minMessageBytes, c.maxMessageBytes,
                         c.bufferMode, c.worldSize, c.nRanksPerNode, tags, bool(c.builtin))


def load(path):
    """Loads a library of native algorithms; its load-time code registers them with this process's
    runtime (the preloaded shim's, else libmscclpp.so). Returns the new algorithms' names."""
    _lib()
    before = {a.name for a in algorithms()}
    library = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    _loaded.append(library)  # kernels must stay loaded while the runtime may launch them
    return [a.name for a in algorithms() if a.name not in before]


_loaded = []


def algorithms() -> List[AlgorithmInfo]:
    """The native algorithms: registered ones first, latest first, then the built-in ones."""
    lib = _lib()
    out = []
    for i in range(lib.mscclppAlgorithmCount()):
        c = _Info()
        if lib.mscclppAlgorithmGetInfo(i, ctypes.byref(c)) == 0:
            out.append(_info(c))
    return out


def unregister(name):
    """Removes a registered native algorithm (not a built-in one)."""
    lib = _lib()
    error = ctypes.create_string_buffer(_ERROR_LENGTH)
    status = lib.mscclppAlgorithmUnregister(name.encode(), error, _ERROR_LENGTH)
    if status != 0:
        raise PlanError(f"unregistering {name} failed ({status}): {_text(error.value)}", status)


def select(request: Request):
    """The shim's whole choice for request on one rank: (name or None, "plan"/"native"/"", reason)."""
    lib = _lib()
    name, kind, reason = (ctypes.create_string_buffer(n) for n in (256, 16, _ERROR_LENGTH))
    c_request = _c_request(request)
    chosen = lib.mscclppAlgorithmSelect(ctypes.byref(c_request), name, 256, kind, 16, reason, _ERROR_LENGTH)
    if chosen < 0:
        raise PlanError(f"selection failed ({chosen}): {_text(reason.value)}", chosen)
    return (_text(name.value) or None), _text(kind.value), _text(reason.value)


_active_selector = None  # the ctypes callback must outlive every call the runtime makes into it


def set_selector(selector: Optional[Callable[[List[AlgorithmInfo], Request], int]]):
    """Installs selector(candidates, request) -> index, NONE or DEFAULT; None removes it. Every rank
    must answer alike for the same request. An exception counts as NONE."""
    global _active_selector
    lib = _lib()
    if selector is None:
        lib.mscclppAlgorithmSetSelector(_SELECTOR(), None)
        _active_selector = None
        return

    def trampoline(candidates, n, c_request, _):
        try:
            return int(selector([_info(candidates[i]) for i in range(n)], _request(c_request)))
        except Exception:  # noqa: BLE001 - an exception must not unwind through C
            return NONE

    callback = _SELECTOR(trampoline)
    lib.mscclppAlgorithmSetSelector(callback, None)
    _active_selector = callback
