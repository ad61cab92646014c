"""Native algorithms (docs/algorithms.md): a user's own kernel, the port-channel all-gather of
examples/custom_allgather, registered when its library loads and run for ncclAllGather by an unchanged
NCCL program under LD_PRELOAD, and the same from Python; and mscclpp.algorithm's view of the choice."""
import json
import os
import subprocess
import sys

import pytest
from integration_support import REPO, worker_env

BUILD = os.environ.get("MSCCLPP_BUILD_DIR", "")
SHIM = os.path.join(BUILD, "nccl_shim", "libmscclpp_nccl.so")
CUSTOM = os.path.join(BUILD, "examples", "libcustom_allgather.so")
PROGRAM = os.path.join(BUILD, "examples", "example_nccl_allgather")
DOUBLE = os.path.join(BUILD, "tests", "unit", "shim", "libnccl_double.so")
requires_build = pytest.mark.skipif(
    not all(os.path.isfile(p) for p in (SHIM, CUSTOM, PROGRAM, DOUBLE)),
    reason="MSCCLPP_BUILD_DIR does not name a build with the shim, the custom all-gather and the NCCL double")


# A GPU build's CUDA device double (its libcudart) and the host bodies of its kernels.
CUDA_DOUBLE = os.path.join(BUILD, "tests", "cuda_double")
HOST_KERNELS = os.path.join(BUILD, "tests", "gpu_double", "libcuda_double_host_kernels.so")
requires_double = pytest.mark.skipif(
    not all(os.path.isfile(p) for p in (SHIM, CUSTOM, PROGRAM, HOST_KERNELS)),
    reason="MSCCLPP_BUILD_DIR does not name a CUDA build with the device double")


def shim_env(log, **extra):
    """Preloads the shim; no DSL plan fits, the NCCL double stands in for the real NCCL."""
    env = worker_env(LD_PRELOAD=SHIM, MSCCLPP_NCCL_LIB_PATH=DOUBLE, MSCCLPP_PLAN_DIR=os.path.join(
        REPO, "tests", "data", "shim", "no-plans"), NCCL_SOCKET_IFNAME="lo", MSCCLPP_SOCKET_IFNAME="lo",
                     NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="SHIM", NCCL_DEBUG_FILE=str(log), **extra)
    env.pop("MSCCLPP_LIBRARY", None)  # the shim's own runtime serves the Python package
    return env


@requires_build
def test_an_unchanged_nccl_program_runs_the_custom_kernel(tmp_path):
    log = tmp_path / "nccl.log"
    env = shim_env(log)
    env["LD_PRELOAD"] = f"{SHIM} {CUSTOM}"
    done = subprocess.run([PROGRAM, "3", "1001"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert sorted(done.stdout.split("\n")[:3]) == [f"rank {r}: correct" for r in range(3)], done.stdout
    text = log.read_text()
    assert text.count("native algorithm custom_allgather ran: allgather, 3 ranks, 11.7 KiB, f32\n") == 3, text
    assert text.count("native algorithm custom_allgather ran: allgather, 3 ranks, 11.7 KiB, f32, in-place") == 3
    assert "NCCL ran" not in text


@requires_double
def test_the_custom_kernel_runs_on_the_cuda_double(tmp_path):
    """The CUDA backend launches the library's kernel; the double runs its host body. No NCCL stands
    behind the shim, and the log must name the custom kernel, not the built-in all-gather."""
    log = tmp_path / "nccl.log"
    env = shim_env(log, MSCCLPP_BACKEND="cuda", CUDA_DOUBLE_HOST_KERNELS=HOST_KERNELS, MSCCLPP_TIMEOUT_S="10")
    env["MSCCLPP_NCCL_LIB_PATH"] = "/nonexistent/libnccl.so.2"
    env["LD_LIBRARY_PATH"] = os.pathsep.join([CUDA_DOUBLE] + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    env["LD_PRELOAD"] = f"{SHIM} {CUSTOM}"
    done = subprocess.run([PROGRAM, "3", "1001", "gpu"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert sorted(done.stdout.split("\n")[:3]) == [f"rank {r}: correct" for r in range(3)], done.stdout
    text = log.read_text()
    assert text.count("native algorithm custom_allgather ran: allgather, 3 ranks, 11.7 KiB, f32\n") == 3, text
    assert text.count("native algorithm custom_allgather ran: allgather, 3 ranks, 11.7 KiB, f32, in-place") == 3


@requires_build
def test_without_the_library_the_builtin_allgather_runs(tmp_path):
    log = tmp_path / "nccl.log"
    done = subprocess.run([PROGRAM, "4", "7"], env=shim_env(log), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "native algorithm allgather_mesh ran: allgather, 4 ranks" in log.read_text()


@requires_build
def test_python_registers_the_custom_kernel(tmp_path):
    log = tmp_path / "nccl.log"
    script = os.path.join(REPO, "examples", "python", "custom_allgather.py")
    done = subprocess.run([sys.executable, script, CUSTOM, "4", "333"], env=shim_env(log), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"ok": True, "registered": ["custom_allgather"], "rc": [0, 0, 0, 0]}
    assert log.read_text().count("native algorithm custom_allgather ran: allgather, 4 ranks") == 4


SELECTION = """
import json, mscclpp.algorithm as a
from mscclpp.plan import Request
def req(n, size, per_node=0, coll="allreduce"):
    return Request(coll, n, per_node or n, size, False, 7, 0 if coll == "allreduce" else -1, -1, 0, 0)
out = {"natives": [x.name for x in a.algorithms()]}
out["small"] = a.select(req(3, 4096))
out["large"] = a.select(req(3, 1 << 22))
out["hosts"] = a.select(req(4, 4096, per_node=2))
out["gather"] = a.select(req(3, 4096, coll="gather"))
a.set_selector(lambda cands, r: [c.name for c in cands].index("allreduce_read_reduce"))
out["selected"] = a.select(req(3, 4096))
a.set_selector(lambda cands, r: a.NONE)
out["none"] = a.select(req(3, 4096))
a.set_selector(None)
print(json.dumps(out))
"""


@requires_build
def test_python_sees_the_choice_and_sets_a_selector(tmp_path):
    done = subprocess.run([sys.executable, "-c", SELECTION], env=shim_env(tmp_path / "log"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["natives"][:3] == ["allreduce_nvls", "allreduce_packets", "allreduce_read_reduce"]
    assert out["small"][:2] == ["allreduce_packets", "native"]
    assert out["large"][:2] == ["allreduce_read_reduce", "native"]
    assert out["hosts"][:2] == ["allreduce_two_level", "native"]
    assert out["gather"][0] is None and "no native gather algorithm" in out["gather"][2]
    assert out["selected"][:2] == ["allreduce_read_reduce", "native"]
    assert out["none"][0] is None and "the algorithm selector chose none" in out["none"][2]
