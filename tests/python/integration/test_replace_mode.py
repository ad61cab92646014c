"""The replace mode (docs/nccl-shim.md): the shim as libnccl.so.2 in a folder of its own, first on
LD_LIBRARY_PATH, serves programs that dlopen libnccl.so.2 and look symbols up through that handle
(ctypes, vLLM's pynccl), which LD_PRELOAD cannot reach. The client is nccl_ctypes_client.py."""
import json
import os
import subprocess
import sys

import pytest
from integration_support import HERE, PLANS, worker_env

BUILD = os.environ.get("MSCCLPP_BUILD_DIR", "")
REPLACE_DIR = os.path.join(BUILD, "nccl_shim")
REPLACE_LIB = os.path.join(REPLACE_DIR, "libnccl.so.2")
requires_build = pytest.mark.skipif(not os.path.isfile(REPLACE_LIB),
                                    reason="MSCCLPP_BUILD_DIR does not name a build with nccl_shim/libnccl.so.2")


def run_client(mode, tmp_path, **env):
    environment = worker_env(LD_LIBRARY_PATH=REPLACE_DIR + os.pathsep + os.environ.get("LD_LIBRARY_PATH", ""),
                             MSCCLPP_PLAN_DIR=PLANS, NCCL_SOCKET_IFNAME="lo", MSCCLPP_SOCKET_IFNAME="lo", **env)
    environment.pop("MSCCLPP_LIBRARY", None)  # the client loads nothing but libnccl.so.2
    for name in ("NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "MSCCLPP_DEBUG", "MSCCLPP_DEBUG_SUBSYS",
                 "MSCCLPP_DEBUG_FILE"):
        if name not in env:
            environment.pop(name, None)
    done = subprocess.run([sys.executable, os.path.join(HERE, "nccl_ctypes_client.py"), mode], env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done


@requires_build
def test_ctypes_client_runs_a_plan_through_the_replace_mode(tmp_path):
    log = tmp_path / "nccl.log"
    result, _ = run_client("allreduce", tmp_path, NCCL_DEBUG="INFO", NCCL_DEBUG_FILE=str(log))
    assert os.path.realpath(result["library"]) == os.path.realpath(REPLACE_LIB)  # our copy, not the real NCCL
    assert (result["version_rc"], result["version"], result["uid_rc"]) == (0, 22809, 0)
    assert result["init_rc"] == [0, 0] and result["reduce_rc"] == [0, 0], result["last_error"]
    assert result["correct"] and result["destroy_rc"] == [0, 0]
    text = log.read_text()
    assert "MSCCLPP INFO SHIM plan allreduce_ll_n2_oop ran: allreduce, 2 ranks, 4 KiB, f32, sum" in text, text
    assert "NCCL ran" not in text


@requires_build
def test_quiet_unless_asked(tmp_path):
    result, done = run_client("allreduce", tmp_path)
    assert result["correct"]
    assert done.stderr == "" and done.stdout.count("\n") == 1, (done.stdout, done.stderr)


@requires_build
@pytest.mark.parametrize("ours, says", [
    (REPLACE_LIB, "is the MSCCL++ shim itself, not the real NCCL"),
    (os.path.join(REPLACE_DIR, "libmscclpp_nccl.so"), "is a copy of the MSCCL++ shim (it links libmscclpp)"),
])
def test_the_fallback_refuses_our_own_library(tmp_path, ours, says):
    result, _ = run_client("fallback", tmp_path, MSCCLPP_NCCL_LIB_PATH=ours)
    assert result["init_rc"] == [0]
    assert result["reduce_rc"] == [5]  # ncclInvalidUsage: a one-rank communicator needs the real NCCL
    assert says in result["last_error"] and "MSCCLPP_NCCL_LIB_PATH" in result["last_error"], result["last_error"]
