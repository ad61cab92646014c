"""Executor: runs a selected plan for this rank (MSCCL++'s ``mscclpp.Executor``).

    executor = mscclpp.Executor(group.communicator)
    executor.execute(rank, send_ptr, recv_ptr, send_size, recv_size, dtype, handle.plan, stream)

On the CPU backend buffers are host memory, and the collective is done when execute returns.
On the CUDA backend pointers are device memory and the work is enqueued on ``stream``; a call
the backend cannot serve raises NotSupportedError with the reason (MSCCLPP_BACKEND picks one).
"""
import ctypes
from typing import Any, Union

from . import _capi
from .comm import CommGroup, Communicator
from .dtypes import DataType, ReduceOp, dtype_to_mscclpp_dtype
from .registry import ExecutionPlan, ExecutionPlanHandle

__all__ = ["Executor"]

_BACKEND_LENGTH = 64


class Executor(_capi.OwnedHandle):
    """Runs plans for the ranks of one communicator. Construction is collective (every rank makes
    its executor); execute calls are collective too, in the same order on every rank. One executor
    serialises its own execute calls. It keeps the C++ communicator alive until it is closed."""

    def __init__(self, communicator: Union[Communicator, CommGroup]):
        if isinstance(communicator, CommGroup):
            communicator = communicator.communicator
        if not isinstance(communicator, Communicator):
            raise TypeError("Executor: expected a mscclpp.comm.Communicator (CommGroup.communicator), "
                            f"got {communicator!r}")
        lib = _capi.load()
        handle = ctypes.c_void_p()
        error = _capi.error_buffer()
        _capi.check(lib.mscclppExecutorCreate(communicator.handle, ctypes.byref(handle), error, len(error)), error,
                    f"mscclpp.Executor on rank {communicator.rank}/{communicator.size}")
        super().__init__(handle)
        self.rank = communicator.rank
        self.size = communicator.size
        name = ctypes.create_string_buffer(_BACKEND_LENGTH)
        _capi.check(lib.mscclppExecutorBackend(handle, name, _BACKEND_LENGTH), name, "mscclpp.Executor.backend")
        self.backend: str = _capi.text(name)

    def execute(
        self,
        rank: int,
        send_buffer: int,
        recv_buffer: int,
        send_size: int,
        recv_size: int,
        dtype: Any,
        plan: Union[ExecutionPlan, ExecutionPlanHandle],
        stream: Any = 0,
        op: Union[ReduceOp, int] = ReduceOp.sum,
    ) -> None:
        """Runs ``plan`` for ``rank`` (this executor's rank) on the given buffers.

        Pointers are ints (``tensor.data_ptr()``, ``array.ctypes.data``); sizes are in bytes;
        ``dtype`` is a DataType, its NCCL number, or a torch/numpy dtype; ``stream`` an int
        (``torch.cuda.Stream.cuda_stream``), an object with ``cuda_stream``, or 0/None. ``op`` is the
        reduce op (ignored by plans that do not reduce). Errors are MscclppError subclasses with the
        runtime's message: InvalidArgumentError (wrong rank, dtype, null buffers), NotSupportedError
        (the plan cannot serve these sizes/dtype/op, or the backend cannot run it), CommTimeoutError.
        """
        if isinstance(plan, ExecutionPlanHandle):
            plan = plan.plan
        if not isinstance(plan, ExecutionPlan):
            raise TypeError("execute: plan must be the .plan of what ExecutionPlanRegistry.select returned, "
                            f"got {plan!r}")
        data_type = dtype_to_mscclpp_dtype(dtype)
        for name, value in (("rank", rank), ("send_size", send_size), ("recv_size", recv_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"execute: {name}={value!r} must be a non-negative integer")
        error = _capi.error_buffer()
        status = _capi.load().mscclppExecute(
            self.handle, rank, _address(send_buffer, "send_buffer"), _address(recv_buffer, "recv_buffer"),
            send_size, recv_size, int(DataType(data_type)), plan.handle, _stream(stream), int(op), error, len(error))
        _capi.check(status, error, f"mscclpp.Executor.execute(plan '{plan.name}', rank {rank})")

    _destroy = "mscclppExecutorDestroy"

    def _closed_what(self) -> str:
        return f"the executor of rank {self.rank}/{self.size}"

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self):
        return f"<mscclpp Executor rank {self.rank}/{self.size}, {self.backend} backend>"


def _address(value: Any, what: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"execute: {what} must be an address (a non-negative int such as tensor.data_ptr()), "
                        f"got {value!r}")
    return value or None


def _stream(stream: Any):
    if stream is None:
        return None
    value = getattr(stream, "cuda_stream", stream)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"execute: stream must be a cudaStream_t as an int (stream.cuda_stream) or 0, got {stream!r}")
    return value or None
