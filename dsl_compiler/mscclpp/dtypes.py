"""Datatypes and reduce ops of collective calls, numbered as NCCL numbers them (ncclDataType_t,
ncclRedOp_t) because the runtime, the plans' selection and the NCCL shim all use that numbering.

``dtype_to_mscclpp_dtype`` maps the dtype of whatever holds the data (a torch tensor, a numpy array,
a name) to a DataType without importing torch or numpy itself: torch is recognised by its dtype
objects' module, numpy only when it is installed.
"""
import enum
from typing import Any, Dict

__all__ = ["DataType", "ReduceOp", "dtype_to_mscclpp_dtype", "element_size"]


class DataType(enum.IntEnum):
    """mscclpp::DataType (runtime/include/mscclpp/datatype.hpp) = ncclDataType_t."""

    int8 = 0
    uint8 = 1
    int32 = 2
    uint32 = 3
    int64 = 4
    uint64 = 5
    float16 = 6
    float32 = 7
    float64 = 8
    bfloat16 = 9
    float8_e4m3 = 10
    float8_e5m2 = 11


class ReduceOp(enum.IntEnum):
    """mscclpp::ReduceOp = ncclRedOp_t. premulsum multiplies each input by the call's scalar
    (``Executor.execute(..., scalar=...)``), then sums."""

    sum = 0
    prod = 1
    max = 2
    min = 3
    avg = 4
    premulsum = 5


_SIZES = {
    DataType.int8: 1,
    DataType.uint8: 1,
    DataType.int32: 4,
    DataType.uint32: 4,
    DataType.int64: 8,
    DataType.uint64: 8,
    DataType.float16: 2,
    DataType.float32: 4,
    DataType.float64: 8,
    DataType.bfloat16: 2,
    DataType.float8_e4m3: 1,
    DataType.float8_e5m2: 1,
}

# Every accepted spelling, lower case: ours, the runtime's short forms,
# torch's, numpy's (dtype.name, ml_dtypes for bfloat16 and float8) and NCCL's.
_NAMES: Dict[str, DataType] = {}
for _dt, _spellings in {
    DataType.int8: ("int8", "i8", "char", "ncclint8", "ncclchar"),
    DataType.uint8: ("uint8", "u8", "ncclUint8"),
    DataType.int32: ("int32", "i32", "int", "ncclint32", "ncclint"),
    DataType.uint32: ("uint32", "u32", "ncclUint32"),
    DataType.int64: ("int64", "i64", "long", "ncclint64"),
    DataType.uint64: ("uint64", "u64", "ncclUint64"),
    DataType.float16: ("float16", "f16", "fp16", "half", "ncclfloat16", "ncclhalf"),
    DataType.float32: ("float32", "f32", "fp32", "float", "ncclfloat32", "ncclfloat"),
    DataType.float64: ("float64", "f64", "fp64", "double", "ncclfloat64", "nccldouble"),
    DataType.bfloat16: ("bfloat16", "bf16", "ncclbfloat16"),
    DataType.float8_e4m3: ("float8_e4m3", "float8e4m3", "f8e4m3", "float8_e4m3fn", "fp8_e4m3", "ncclfloat8e4m3"),
    DataType.float8_e5m2: ("float8_e5m2", "float8e5m2", "f8e5m2", "fp8_e5m2", "ncclfloat8e5m2"),
}.items():
    for _name in _spellings:
        _NAMES[_name.lower()] = _dt


def element_size(dtype: Any) -> int:
    """Bytes per element of a DataType (or anything dtype_to_mscclpp_dtype accepts)."""
    return _SIZES[dtype_to_mscclpp_dtype(dtype)]


def dtype_to_mscclpp_dtype(dtype: Any) -> DataType:
    """The DataType for a torch dtype (``torch.float16``), a numpy dtype or scalar type
    (``np.float32``, ``array.dtype``), a DataType or its number, or a name ("float16", "bf16").

    Raises TypeError for something that is not a dtype and ValueError for a dtype the runtime has
    no datatype for (e.g. torch.bool, complex types), naming it.
    """
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, bool):
        raise TypeError("dtype_to_mscclpp_dtype: a bool is not a dtype")
    if isinstance(dtype, int):
        try:
            return DataType(dtype)
        except ValueError:
            raise ValueError(f"dtype number {dtype} is not a datatype (NCCL numbering 0..11)") from None
    if isinstance(dtype, str):
        return _from_name(dtype, dtype)
    if type(dtype).__module__.split(".")[0] == "torch":
        # torch.float16 prints as "torch.float16"; torch is not imported.
        return _from_name(str(dtype).split(".")[-1], dtype)
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and hasattr(dtype, "itemsize"):  # a numpy dtype
        return _from_name(name, dtype)
    try:
        import numpy  # noqa: PLC0415 - optional
    except ImportError:
        numpy = None
    if numpy is not None:
        try:
            converted = numpy.dtype(dtype)
        except TypeError:
            converted = None
        if converted is not None:
            return _from_name(converted.name, dtype)
    raise TypeError(f"dtype_to_mscclpp_dtype: {dtype!r} (a {type(dtype).__name__}) is not a dtype")


def _from_name(name: str, original: Any) -> DataType:
    found = _NAMES.get(name.lower())
    if found is None:
        raise ValueError(
            f"{original!r} has no MSCCL++ datatype; supported: "
            + ", ".join(d.name for d in DataType)
        )
    return found
