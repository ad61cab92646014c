"""Executor: runs a selected plan for this rank (MSCCL++'s ``mscclpp.Executor``).

    executor = mscclpp.Executor(group.communicator)
    executor.execute(rank, send_ptr, recv_ptr, send_size, recv_size, dtype, handle.plan, stream)

On the CPU backend buffers are host memory, and the collective is done when execute returns.
On the CUDA backend pointers are device memory and the work is enqueued on ``stream``; a call
the backend cannot serve raises NotSupportedError with the reason (MSCCLPP_BACKEND picks one).
"""
import ctypes
import struct
from typing import Any, Union

from . import _capi
from .comm import CommGroup, Communicator
from .dtypes import DataType, ReduceOp, dtype_to_mscclpp_dtype, element_size
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
        splits: Any = None,
        scalar: Any = None,
    ) -> None:
        """Runs ``plan`` for ``rank`` (this executor's rank) on the given buffers.

        Pointers are ints (``tensor.data_ptr()``, ``array.ctypes.data``); sizes are in bytes;
        ``dtype`` is a DataType, its NCCL number, or a torch/numpy dtype; ``stream`` an int
        (``torch.cuda.Stream.cuda_stream``), an object with ``cuda_stream``, or 0/None. ``op`` is the
        reduce op (ignored by plans that do not reduce). Errors are MscclppError subclasses with the
        runtime's message: InvalidArgumentError (wrong rank, dtype, null buffers), NotSupportedError
        (the plan cannot serve these sizes/dtype/op, or the backend cannot run it), CommTimeoutError.

        ``splits`` is the call's counts for a variable-size plan (alltoallv, allgatherv,
        reducescatterv; docs/python-api.md, "All-to-all-v"): the count matrix, ``splits[s][d]``
        elements from rank s to rank d, the same on every rank. Give it as nested lists, a flat list
        of size*size ints, an object with ``__array_interface__`` or ``__cuda_array_interface__``
        (numpy, torch; uint64 or int64, contiguous), or ``(address, on_device)``. Counts in device
        memory are read by the CUDA backend's kernel when it runs, so a captured call replays with
        new counts written there; the CPU backend refuses them. send_size and recv_size are then the
        buffers' sizes.

        ``scalar`` is premulsum's factor (``op=ReduceOp.premulsum``), with or without splits: a number,
        stored as one element of ``dtype`` (float8 types take it as one byte, ``bytes``), or ``bytes``
        of one element. premulsum without a scalar, or a scalar with another op, raises
        InvalidArgumentError.
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
        lib = _capi.load()
        send, recv = _address(send_buffer, "send_buffer"), _address(recv_buffer, "recv_buffer")
        # The scalar entry points when premulsum or a scalar is involved: they check the pair.
        with_scalar = scalar is not None or int(op) == int(ReduceOp.premulsum)
        factor = None if scalar is None else ctypes.create_string_buffer(_scalar_bytes(scalar, data_type))
        if splits is not None:
            address, on_device, keep = _counts(splits, self.size)
            common = (self.handle, rank, send, recv, send_size, recv_size, int(DataType(data_type)), plan.handle,
                      address, int(on_device), _stream(stream), int(op))
            if with_scalar:
                status = lib.mscclppExecuteSplitsWithScalar(*common, factor, error, len(error))
            else:
                status = lib.mscclppExecuteSplits(*common, error, len(error))
            del keep
        else:
            common = (self.handle, rank, send, recv, send_size, recv_size, int(DataType(data_type)), plan.handle,
                      _stream(stream), int(op))
            if with_scalar:
                status = lib.mscclppExecuteWithScalar(*common, factor, error, len(error))
            else:
                status = lib.mscclppExecute(*common, error, len(error))
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


_PACKED = {DataType.int8: "<b", DataType.uint8: "<B", DataType.int32: "<i", DataType.uint32: "<I",
           DataType.int64: "<q", DataType.uint64: "<Q", DataType.float16: "<e", DataType.float32: "<f",
           DataType.float64: "<d"}


def _scalar_bytes(scalar: Any, data_type: DataType) -> bytes:
    """premulsum's scalar as one element of data_type."""
    size = element_size(data_type)
    if isinstance(scalar, (bytes, bytearray)):
        if len(scalar) != size:
            raise ValueError(f"execute: scalar has {len(scalar)} bytes; one {data_type.name} element has {size}")
        return bytes(scalar)
    if isinstance(scalar, bool) or not isinstance(scalar, (int, float)):
        raise TypeError(f"execute: scalar must be a number or bytes of one {data_type.name} element, got {scalar!r}")
    if data_type == DataType.bfloat16:
        bits = struct.unpack("<I", struct.pack("<f", float(scalar)))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return struct.pack("<H", (bits >> 16) & 0xFFFF)
    fmt = _PACKED.get(data_type)
    if fmt is None:
        raise ValueError(f"execute: give a {data_type.name} scalar as bytes (one byte), got {scalar!r}")
    if fmt[1] in "bBiIqQ" and (isinstance(scalar, float) and not scalar.is_integer()):
        raise ValueError(f"execute: scalar {scalar!r} is not an integer, as a {data_type.name} scalar must be")
    try:
        return struct.pack(fmt, int(scalar) if fmt[1] in "bBiIqQ" else float(scalar))
    except (struct.error, OverflowError):
        raise ValueError(f"execute: scalar {scalar!r} does not fit a {data_type.name} element") from None


def _counts(splits: Any, size: int):
    """(address, on_device, what keeps the memory alive) of a count matrix of size x size."""
    if isinstance(splits, tuple) and len(splits) == 2 and isinstance(splits[0], int):
        return splits[0], bool(splits[1]), None
    for attribute, on_device in (("__cuda_array_interface__", True), ("__array_interface__", False)):
        interface = getattr(splits, attribute, None)
        if interface is None:
            continue
        shape = tuple(interface["shape"])
        count = 1
        for extent in shape:
            count *= extent
        if interface["typestr"][1:] not in ("u8", "i8") or count != size * size:
            raise ValueError(f"execute: splits must hold {size}x{size} 64-bit integers, got shape {shape} of "
                             f"{interface['typestr']}")
        if interface.get("strides") not in (None, tuple(8 * s for s in _contiguous(shape))):
            raise ValueError("execute: splits must be contiguous")
        return interface["data"][0], on_device, splits
    rows = list(splits)
    flat = [int(v) for row in rows for v in row] if rows and not isinstance(rows[0], int) else [int(v) for v in rows]
    if len(flat) != size * size or any(v < 0 for v in flat):
        raise ValueError(f"execute: splits must be {size}x{size} non-negative counts, got {len(flat)} values")
    array = (ctypes.c_uint64 * len(flat))(*flat)
    return ctypes.addressof(array), False, array


def _contiguous(shape):
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _stream(stream: Any):
    if stream is None:
        return None
    value = getattr(stream, "cuda_stream", stream)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"execute: stream must be a cudaStream_t as an int (stream.cuda_stream) or 0, got {stream!r}")
    return value or None
