"""The communicator and executor C API (runtime/include/mscclpp/mscclpp_c.h) through ctypes.

It declares more functions on the library ``_runtime_lib.load()`` finds for the plan registry.
So communicators, executors and plan handles share that registry with ``mscclpp.plan`` and the shim.
"""
import ctypes
from typing import Optional

from . import _runtime_lib as rt
from .errors import error_for_status

__all__ = ["load", "check", "error_buffer", "text", "CommInfo", "C_API_VERSION", "UNIQUE_ID_BYTES", "DEVICE_AUTO",
           "DEVICE_HOST"]

C_API_VERSION = 3  # MSCCLPP_C_API_VERSION of mscclpp_c.h
UNIQUE_ID_BYTES = 128
DEVICE_AUTO = -2
DEVICE_HOST = -1
ERROR_LENGTH = 4096  # room for the executor's multi-line wait-for diagnostics


class CommInfo(ctypes.Structure):
    _fields_ = [
        ("rank", ctypes.c_int),
        ("nRanks", ctypes.c_int),
        ("nRanksPerNode", ctypes.c_int),
        ("localRank", ctypes.c_int),
        ("device", ctypes.c_int),
    ]


_ERR = (ctypes.c_char_p, ctypes.c_size_t)
_HANDLE = ctypes.c_void_p
_OUT_HANDLE = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "mscclppCApiVersion": (),
    "mscclppUniqueIdCreate": (ctypes.c_char_p, ctypes.c_size_t) + _ERR,
    "mscclppCommInitUniqueId": (ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                ctypes.c_double, _OUT_HANDLE) + _ERR,
    "mscclppCommInitAddress": (ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                               _OUT_HANDLE) + _ERR,
    "mscclppCommGetInfo": (_HANDLE, ctypes.POINTER(CommInfo)) + _ERR,
    "mscclppCommBarrier": (_HANDLE,) + _ERR,
    "mscclppCommDestroy": (_HANDLE,),
    "mscclppExecutorCreate": (_HANDLE, _OUT_HANDLE) + _ERR,
    "mscclppExecutorBackend": (_HANDLE, ctypes.c_char_p, ctypes.c_size_t),
    "mscclppExecutorDestroy": (_HANDLE,),
    "mscclppPlanSelectHandle": (ctypes.POINTER(rt.PlanRequest), _OUT_HANDLE, ctypes.c_char_p, ctypes.c_size_t,
                                ctypes.c_char_p, ctypes.c_size_t),
    "mscclppPlanHandleDestroy": (_HANDLE,),
    "mscclppExecute": (_HANDLE, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                       ctypes.c_int, _HANDLE, ctypes.c_void_p, ctypes.c_int) + _ERR,
    "mscclppExecuteSplits": (_HANDLE, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_size_t, ctypes.c_int, _HANDLE, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                             ctypes.c_int) + _ERR,
    "mscclppExecuteWithScalar": (_HANDLE, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_int, _HANDLE, ctypes.c_void_p, ctypes.c_int,
                                 ctypes.c_void_p) + _ERR,
    "mscclppExecuteSplitsWithScalar": (_HANDLE, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                       ctypes.c_size_t, ctypes.c_int, _HANDLE, ctypes.c_void_p, ctypes.c_int,
                                       ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p) + _ERR,
}

_declared: Optional[object] = None  # the library object the signatures were set on


def load():
    """The runtime library with the C API declared; raises RuntimeNotLoaded saying what is missing."""
    global _declared
    lib = rt.load()
    if lib is _declared:
        return lib
    missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise rt.RuntimeNotLoaded(
            "the MSCCL++ runtime found for the plan registry lacks the communicator/executor C API "
            f"(mscclpp_c.h: {', '.join(missing)}); it is an older or a stand-in library. Set "
            "MSCCLPP_LIBRARY=/path/to/libmscclpp.so of this build."
        )
    for name, argtypes in _SIGNATURES.items():
        function = getattr(lib, name)
        function.argtypes = list(argtypes)
        function.restype = ctypes.c_int
    version = lib.mscclppCApiVersion()
    if version != C_API_VERSION:
        raise rt.RuntimeNotLoaded(
            f"the runtime's C API version is {version}, this package speaks version {C_API_VERSION}")
    _declared = lib
    return lib


def error_buffer():
    """A buffer for an entry point's error message."""
    return ctypes.create_string_buffer(ERROR_LENGTH)


def text(buffer) -> str:
    return buffer.value.decode("utf-8", "replace") if buffer.value else ""


def check(status: int, buffer, what: str) -> int:
    """Raises the exception of a negative status with the runtime's message; returns the status otherwise."""
    if status < 0:
        message = text(buffer) if buffer is not None else ""
        raise error_for_status(status, f"{what}: {message}" if message else f"{what} failed (status {status})")
    return status


class OwnedHandle:
    """Owns one C handle and releases it once (close(), or garbage collection). Subclasses name the
    C entry point that destroys it (``_destroy``) and describe themselves for the closed error
    (``_closed_what``)."""

    _destroy = ""

    def __init__(self, handle: ctypes.c_void_p):
        self._handle = handle

    def _closed_what(self) -> str:
        return type(self).__name__

    @property
    def handle(self) -> ctypes.c_void_p:
        """The C handle; raises ValueError once closed."""
        if self._handle is None:
            raise ValueError(f"{self._closed_what()} is closed")
        return self._handle

    def close(self) -> None:
        """Releases the handle (idempotent)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            getattr(load(), self._destroy)(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn the module down
            pass
