"""dtype_to_mscclpp_dtype and buffer_info: no runtime needed (pure Python; numpy where installed, torch
recognised by its dtype objects' module, so a stand-in checks that path when torch is absent)."""
import importlib.util
import re

import pytest

from mscclpp import DataType, ReduceOp, dtype_to_mscclpp_dtype
from mscclpp.buffers import buffer_info
from mscclpp.dtypes import element_size

HAVE_NUMPY = importlib.util.find_spec("numpy") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def test_numbering_is_nccls():
    # ncclDataType_t and ncclRedOp_t values (nccl.h): the runtime and the shim cast them directly
    assert [int(d) for d in (DataType.int8, DataType.uint8, DataType.int32, DataType.uint32, DataType.int64,
                             DataType.uint64, DataType.float16, DataType.float32, DataType.float64,
                             DataType.bfloat16, DataType.float8_e4m3, DataType.float8_e5m2)] == list(range(12))
    assert [int(o) for o in (ReduceOp.sum, ReduceOp.prod, ReduceOp.max, ReduceOp.min, ReduceOp.avg)] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("spelling, expected", [
    ("float16", DataType.float16), ("fp16", DataType.float16), ("half", DataType.float16),
    ("BF16", DataType.bfloat16), ("f32", DataType.float32), ("double", DataType.float64),
    ("float8_e4m3fn", DataType.float8_e4m3), ("f8e5m2", DataType.float8_e5m2), ("uint64", DataType.uint64),
    (7, DataType.float32), (DataType.int8, DataType.int8),
])
def test_names_and_numbers(spelling, expected):
    assert dtype_to_mscclpp_dtype(spelling) is expected


@pytest.mark.parametrize("value, error, message", [
    ("complex64", ValueError, re.escape("'complex64' has no MSCCL++ datatype; supported: int8, uint8")),
    (12, ValueError, "dtype number 12 is not a datatype"),
    (True, TypeError, "a bool is not a dtype"),
    (object(), TypeError, "is not a dtype"),
])
def test_rejected(value, error, message):
    with pytest.raises(error, match=message):
        dtype_to_mscclpp_dtype(value)


class _FakeTorchDtype:
    """Stands in for torch.dtype (prints as "torch.<name>", defined in module torch)."""

    def __init__(self, name):
        self.name_ = name

    def __str__(self):
        return f"torch.{self.name_}"

    __repr__ = __str__


_FakeTorchDtype.__module__ = "torch"


@pytest.mark.parametrize("name, expected", [
    ("float16", DataType.float16), ("bfloat16", DataType.bfloat16), ("float32", DataType.float32),
    ("int64", DataType.int64), ("uint8", DataType.uint8), ("float8_e4m3fn", DataType.float8_e4m3),
    ("float8_e5m2", DataType.float8_e5m2),
])
def test_torch_dtypes_by_their_printed_name(name, expected):
    assert dtype_to_mscclpp_dtype(_FakeTorchDtype(name)) is expected


def test_torch_bool_is_refused():
    with pytest.raises(ValueError, match=re.escape("torch.bool has no MSCCL++ datatype")):
        dtype_to_mscclpp_dtype(_FakeTorchDtype("bool"))


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed: the real torch dtypes are checked where it is")
def test_real_torch_tensors():
    import torch

    assert dtype_to_mscclpp_dtype(torch.float16) is DataType.float16
    assert dtype_to_mscclpp_dtype(torch.bfloat16) is DataType.bfloat16
    x = torch.arange(10, dtype=torch.int32)
    info = buffer_info(x)
    assert (info.pointer, info.nbytes, info.dtype, info.on_device) == (x.data_ptr(), 40, DataType.int32, False)
    with pytest.raises(ValueError, match="not contiguous"):
        buffer_info(torch.zeros(4, 4).t())


@pytest.mark.skipif(not HAVE_NUMPY, reason="numpy is not installed (pip install numpy)")
def test_numpy_dtypes_and_arrays():
    import numpy as np

    assert dtype_to_mscclpp_dtype(np.float16) is DataType.float16
    assert dtype_to_mscclpp_dtype(np.dtype("int32")) is DataType.int32
    assert dtype_to_mscclpp_dtype(float) is DataType.float64
    assert element_size(np.uint64) == 8 and element_size("bf16") == 2
    with pytest.raises(ValueError, match=re.escape("numpy.complex128'> has no MSCCL++ datatype")):
        dtype_to_mscclpp_dtype(np.complex128)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    info = buffer_info(x)
    assert (info.pointer, info.nbytes, info.dtype, info.on_device) == (x.ctypes.data, 96, DataType.float32, False)
    assert buffer_info(x[1:3]).pointer == x.ctypes.data + 24  # a contiguous slice starts inside
    with pytest.raises(ValueError, match="not C-contiguous"):
        buffer_info(x[:, ::2])
    with pytest.raises(TypeError, match="exposes no memory"):
        buffer_info([1, 2, 3])
