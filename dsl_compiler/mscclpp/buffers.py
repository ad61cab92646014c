"""Where a tensor's bytes are: data pointer, size and DataType, for calls that take raw pointers.

It reads torch tensors, numpy arrays and anything with ``__array_interface__`` or
``__cuda_array_interface__``, without importing torch or numpy.
"""
from typing import Any, NamedTuple

from .dtypes import DataType, dtype_to_mscclpp_dtype

__all__ = ["BufferInfo", "buffer_info", "is_torch_tensor"]


class BufferInfo(NamedTuple):
    pointer: int
    nbytes: int
    dtype: DataType
    on_device: bool  # CUDA memory (a torch CUDA tensor, a __cuda_array_interface__ object)


def is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "data_ptr")


def buffer_info(obj: Any) -> BufferInfo:
    """Pointer, size in bytes, DataType and placement of a contiguous tensor or array.

    Raises ValueError for a non-contiguous one (the runtime reads and writes flat byte ranges) and
    TypeError for an object that exposes no memory.
    """
    if is_torch_tensor(obj):
        if not obj.is_contiguous():
            raise ValueError("the tensor is not contiguous; call .contiguous() first "
                             "(collectives move flat byte ranges)")
        return BufferInfo(obj.data_ptr(), obj.numel() * obj.element_size(), dtype_to_mscclpp_dtype(obj.dtype),
                          obj.device.type == "cuda")
    for attribute, on_device in (("__cuda_array_interface__", True), ("__array_interface__", False)):
        interface = getattr(obj, attribute, None)
        if interface is None:
            continue
        if getattr(obj, "dtype", None) is None:
            raise TypeError(f"{type(obj).__name__} has {attribute} but no dtype")
        strides = interface.get("strides")
        if strides is not None and not _c_contiguous(interface["shape"], strides, obj):
            raise ValueError("the array is not C-contiguous; use numpy.ascontiguousarray first")
        pointer = interface["data"][0]
        count = 1
        for extent in interface["shape"]:
            count *= extent
        return BufferInfo(pointer, count * obj.dtype.itemsize, dtype_to_mscclpp_dtype(obj.dtype), on_device)
    raise TypeError(f"{type(obj).__name__} exposes no memory "
                    "(expected a torch tensor or an array with __array_interface__)")


def _c_contiguous(shape, strides, obj) -> bool:
    itemsize = obj.dtype.itemsize
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent > 1 and stride != expected:
            return False
        expected *= extent
    return True
