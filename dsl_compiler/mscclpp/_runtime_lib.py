"""Finding the runtime's plan registry (runtime/include/mscclpp/plan_api.h) through ctypes.

The registry must be the one the NCCL shim and the executor of this process use. So the symbols
are looked up in the process first (``ctypes.CDLL(None)``: a preloaded shim brings them), then in
the candidates of ``mscclpp._paths.library_candidates``: ``MSCCLPP_LIBRARY``, the library installed
with this package, the one in ``$MSCCLPP_BUILD_DIR``.
"""
import ctypes

from . import _paths

API_VERSION = 3  # MSCCLPP_PLAN_API_VERSION of runtime/include/mscclpp/plan_api.h (3: mscclppStatus codes)
_REQUIRED = (
    "mscclppPlanRegisterFile",
    "mscclppPlanRegisterJson",
    "mscclppPlanUnregister",
    "mscclppPlanSetSelector",
    "mscclppPlanCount",
    "mscclppPlanGetInfo",
    "mscclppPlanSelect",
    "mscclppPlanApiVersion",
)


class RuntimeNotLoaded(RuntimeError):
    """The plan registry's C functions are not available in this process."""


class PlanRequest(ctypes.Structure):
    _fields_ = [
        ("collective", ctypes.c_char_p),
        ("worldSize", ctypes.c_int),
        ("nRanksPerNode", ctypes.c_int),
        ("messageBytes", ctypes.c_uint64),
        ("inPlace", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("redOp", ctypes.c_int),
        ("root", ctypes.c_int),
        ("sendBuffer", ctypes.c_void_p),
        ("recvBuffer", ctypes.c_void_p),
        ("tags", ctypes.POINTER(ctypes.c_char_p)),  # tags the plan must all carry
        ("nTags", ctypes.c_int),
    ]


class PlanInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("collective", ctypes.c_char_p),
        ("protocol", ctypes.c_char_p),
        ("worldSize", ctypes.c_int),
        ("inPlace", ctypes.c_int),
        ("root", ctypes.c_int),
        ("minMessageBytes", ctypes.c_uint64),
        ("maxMessageBytes", ctypes.c_uint64),
        ("tags", ctypes.POINTER(ctypes.c_char_p)),
        ("nTags", ctypes.c_int),
        ("source", ctypes.c_char_p),
    ]


SELECTOR_FN = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(PlanInfo), ctypes.c_int, ctypes.POINTER(PlanRequest), ctypes.c_void_p
)

_cached = None


def _has_symbols(lib):
    return all(hasattr(lib, name) for name in _REQUIRED)


def _declare(lib):
    err = (ctypes.c_char_p, ctypes.c_size_t)
    tags = ctypes.POINTER(ctypes.c_char_p)
    signatures = {
        "mscclppPlanRegisterFile": (ctypes.c_char_p, tags, ctypes.c_int) + err,
        "mscclppPlanRegisterJson": (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, tags, ctypes.c_int) + err,
        "mscclppPlanUnregister": (ctypes.c_char_p,) + err,
        "mscclppPlanSetSelector": (SELECTOR_FN, ctypes.c_void_p),
        "mscclppPlanCount": (),
        "mscclppPlanGetInfo": (ctypes.c_int, ctypes.POINTER(PlanInfo)),
        "mscclppPlanSelect": (
            ctypes.POINTER(PlanRequest),
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ),
        "mscclppPlanApiVersion": (),
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = list(argtypes)
        function.restype = ctypes.c_int
    return lib


def _process_library():
    """The symbols already loaded in this process (tests replace this to force MSCCLPP_LIBRARY)."""
    return ctypes.CDLL(None)


def load():
    """The registry library, declared; raises RuntimeNotLoaded naming what was tried."""
    global _cached
    if _cached is not None:
        return _cached
    tried = []
    process = _process_library()
    if process is not None and _has_symbols(process):
        lib = process
    else:
        missing = [name for name in _REQUIRED if process is None or not hasattr(process, name)]
        tried.append(f"this process does not contain {', '.join(missing)}")
        lib = None
        candidates = _paths.library_candidates()
        if not candidates:
            tried.append("MSCCLPP_LIBRARY is not set, this package was not installed with a runtime, "
                         "and MSCCLPP_BUILD_DIR is not set")
        for what, path in candidates:
            try:
                candidate = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError as error:
                tried.append(f"{what} ({path}) cannot be loaded: {error}")
                continue
            if _has_symbols(candidate):
                lib = candidate
                break
            missing = [name for name in _REQUIRED if not hasattr(candidate, name)]
            tried.append(f"{what} ({path}) lacks {', '.join(missing)}")
        if lib is None:
            raise RuntimeNotLoaded(
                "the MSCCL++ runtime (plan registry) is not loaded: "
                + "; ".join(tried)
                + ". Install the package with its runtime (pip install <repository>), load libmscclpp.so in "
                "this process (LD_PRELOAD=libmscclpp_nccl.so, or import code that links it) or set "
                "MSCCLPP_LIBRARY=/path/to/libmscclpp.so."
            )
    _declare(lib)
    version = lib.mscclppPlanApiVersion()
    if version != API_VERSION:
        raise RuntimeNotLoaded(f"the runtime's plan API version is {version}, this package speaks version {API_VERSION}")
    _cached = lib
    return lib


def reset():
    """Forget the library found (tests switch MSCCLPP_LIBRARY)."""
    global _cached
    _cached = None
