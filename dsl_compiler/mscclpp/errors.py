"""Exceptions for the errors the C++ runtime reports through its C API (mscclpp_c.h).

Each mscclppStatus of runtime/include/mscclpp/status.h has its own class, so callers catch what
they can handle (a plan that cannot serve a call, a timeout) without parsing messages.
tests/python/dsl/test_status_table.py checks the table against the header. Every message is the
runtime's own, naming the rank, plan, argument and values involved.
"""
from typing import Dict, Type

__all__ = [
    "MscclppError",
    "InvalidUsageError",
    "InvalidArgumentError",
    "RuntimeSystemError",
    "InternalError",
    "RemoteError",
    "CommTimeoutError",
    "CudaError",
    "InvalidPlanError",
    "NotSupportedError",
    "AbortedError",
    "NotFoundError",
    "AlreadyExistsError",
    "error_for_status",
]


class MscclppError(RuntimeError):
    """An error reported by the runtime. ``status`` is the mscclppStatus value (negative)."""

    status = 0
    code = "Error"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidUsageError(MscclppError):
    """The API was used in the wrong order or state (e.g. a plan selected before a registration changed)."""

    status, code = -1, "InvalidUsage"


class InvalidArgumentError(MscclppError, ValueError):
    """A bad value: an argument, a size, a dtype, an environment variable. Also a ValueError."""

    status, code = -2, "InvalidArgument"


class RuntimeSystemError(MscclppError):
    """An operating-system call failed inside the runtime (the message ends with strerror)."""

    status, code = -3, "SystemError"


class InternalError(MscclppError):
    """An invariant of the runtime broke: a bug to report."""

    status, code = -4, "InternalError"


class RemoteError(MscclppError):
    """A peer misbehaved or went away (exited, crashed, closed its connection)."""

    status, code = -5, "RemoteError"


class CommTimeoutError(MscclppError):
    """A wait passed its deadline (MSCCLPP_TIMEOUT_S or the timeout given); the message says where."""

    status, code = -6, "Timeout"


class CudaError(MscclppError):
    """The CUDA runtime or driver reported an error."""

    status, code = -7, "CudaError"


class InvalidPlanError(MscclppError):
    """A plan failed to load or validate."""

    status, code = -8, "InvalidPlan"


class NotSupportedError(MscclppError):
    """A request the runtime deliberately does not serve: a plan that cannot serve the call's sizes,
    dtype or op, or a backend feature that does not exist yet (the message says which)."""

    status, code = -9, "NotSupported"


class AbortedError(MscclppError):
    """The communicator was aborted while the call was in progress."""

    status, code = -10, "Aborted"


class NotFoundError(MscclppError, LookupError):
    """No object of that name (e.g. unregistering a plan that is not registered). Also a LookupError."""

    status, code = -11, "NotFound"


class AlreadyExistsError(MscclppError):
    """An object of that name exists already (e.g. a second plan with a registered plan's name)."""

    status, code = -12, "AlreadyExists"


_BY_STATUS: Dict[int, Type[MscclppError]] = {
    cls.status: cls
    for cls in (
        InvalidUsageError,
        InvalidArgumentError,
        RuntimeSystemError,
        InternalError,
        RemoteError,
        CommTimeoutError,
        CudaError,
        InvalidPlanError,
        NotSupportedError,
        AbortedError,
        NotFoundError,
        AlreadyExistsError,
    )
}


def error_for_status(status: int, message: str) -> MscclppError:
    """The exception for a negative mscclppStatus (an unknown status gives MscclppError)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        error = MscclppError(f"{message} (unknown status {status})")
        error.status = status
        return error
    return cls(message)
