"""The examples of examples/python/: customized_comm.py runs as 2 and 4 CPU-backend processes
through its own launcher and checks its results itself; the GPU-only examples are at least valid Python
(they need torch with CUDA and cannot run on this machine)."""
import importlib.util
import os
import py_compile
import re
import subprocess
import sys

import pytest
from integration_support import REPO, requires_runtime, worker_env

EXAMPLES = os.path.join(REPO, "examples", "python")
CUSTOMIZED_COMM = os.path.join(EXAMPLES, "customized_comm.py")


def run_example(args, timeout=120, **env):
    try:
        return subprocess.run([sys.executable, CUSTOMIZED_COMM] + args, env=worker_env(**env), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"customized_comm.py {args} did not finish within {timeout} s; stderr:\n{error.stderr}")


def correct_ranks(stdout):
    return sorted(int(m.group(1)) for m in re.finditer(r"^rank (\d+)/\d+: allreduce of .*: correct", stdout, re.M))


@requires_runtime
def test_customized_comm_two_ranks_with_the_jit_plan(tmp_path):
    # No plan directory: the only candidate is the plan the example compiles and registers.
    done = run_example(["--nranks", "2", "--iterations", "3"], MSCCLPP_PLAN_DIR=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert correct_ranks(done.stdout) == [0, 1]
    assert "with plan 'allreduce_nvls' on the cpu backend: correct (3 iterations)" in done.stdout


@requires_runtime
def test_customized_comm_four_ranks_with_the_default_plans():
    # The default plans include nvls-tagged ones too; the plan the example
    # registers comes first among the candidates, so the example's selector,
    # which takes the first nvls-tagged one, takes it.
    done = run_example(["--nranks", "4"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert correct_ranks(done.stdout) == [0, 1, 2, 3]
    assert done.stdout.count("with plan 'allreduce_nvls' on the cpu backend") == 4


@requires_runtime
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed: --torch needs it")
def test_customized_comm_with_torch_cpu_tensors():
    done = run_example(["--nranks", "2", "--torch"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert correct_ranks(done.stdout) == [0, 1]


def test_customized_comm_needs_a_launcher():
    env = {k: v for k, v in worker_env().items() if k not in ("RANK", "WORLD_SIZE")}
    done = subprocess.run([sys.executable, CUSTOMIZED_COMM], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "run under torchrun (which sets RANK and WORLD_SIZE) or give --nranks N" in done.stderr


@pytest.mark.parametrize("name", ["dsl_with_nccl_api.py", "ddp_train.py", "customized_comm.py"])
def test_examples_compile(name, tmp_path):
    py_compile.compile(os.path.join(EXAMPLES, name), cfile=str(tmp_path / "out.pyc"), doraise=True)
