"""Every tool reads its arguments with the one shared parser (tools/support/args.hpp): --help prints the usage
and exits 0, --version prints the project version and exits 0, an unknown option or a bad number or size is a
precise error and exit 2. Runs the built tools from $MSCCLPP_BUILD_DIR (the Meson test sets it)."""
import os
import re
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD_DIR = os.environ.get("MSCCLPP_BUILD_DIR", "")

# tool -> (folder in the build tree, a bad argument list, the message it must give)
TOOLS = {
    "mscclpp-plan": ("tools", ["select", "--dir", ".", "--collective", "allreduce", "--ranks", "4x", "--bytes", "1K"],
                     "mscclpp-plan select: --ranks '4x': not an integer (trailing 'x')"),
    "mscclpp-emulate": ("tools", ["p.json", "--ranks", "2", "--size", "1.5M"],
                        "mscclpp-emulate: --size '1.5M': not a whole number of bytes"),
    "mscclpp-info": ("tools", ["--params=yes"], "mscclpp-info: --params takes no value"),
    "mscclpp-perf": ("tools", ["-g", "2", "-d", "complex"], "mscclpp-perf: -d 'complex': not one of the types"),
    "bench_executor": ("tools", ["--iterations", "0"],
                       "bench_executor: --iterations '0': below the smallest allowed value, 1"),
    "bench_plan": ("tools", ["--ranks", "-64"], "bench_plan: --ranks '-64': must not be negative"),
    "bench_verify": ("tools", ["--repeat", "0"], "bench_verify: --repeat '0': below the smallest allowed value, 1"),
    "bench_runtime_bootstrap": ("tools", ["--ranks", "2,x"],
                                "bench_runtime_bootstrap: --ranks '2,x': item 'x': not an integer"),
    "bench_runtime_tcp": ("tools", ["--bytes-per-size", "99999999999T"],
                          "bench_runtime_tcp: --bytes-per-size '99999999999T': too large"),
    "bench_runtime_proxy": ("tools", ["--iters"], "bench_runtime_proxy: --iters needs a value"),
    "bench_shim": ("tools", ["lib.so", "12abc"], "bench_shim: ITERATIONS '12abc': not an integer (trailing 'abc')"),
    "demo_allreduce": ("tools", ["--device", "tpu"], "demo_allreduce: --device 'tpu': expected cpu or gpu"),
    "bench_gpu_ops": (os.path.join("tests", "gpu", "backend"), ["--bytes", "1K"],
                      "bench_gpu_ops: --bytes '1K': below the smallest allowed size, 4096 bytes"),
    "bench_gpu_latency": (os.path.join("tests", "gpu", "backend"), ["--iters", "1e3"],
                          "bench_gpu_latency: --iters '1e3': not an integer (trailing 'e3')"),
}
GPU_ONLY = {"bench_gpu_ops", "bench_gpu_latency"}


def _project_version():
    with open(os.path.join(REPO_ROOT, "meson.build")) as f:
        return re.search(r"version: '([^']+)'", f.read()).group(1)


def _tool(name):
    if not BUILD_DIR:
        pytest.skip("MSCCLPP_BUILD_DIR is not set (the Meson test sets it)")
    folder = TOOLS[name][0]
    path = os.path.join(BUILD_DIR, folder, name)
    if not os.path.exists(path):
        if name in GPU_ONLY:
            pytest.skip(f"{name} is built only with the GPU backend")
        pytest.fail(f"{path} is not built")
    return path


def _run(path, args):
    # No GPU, no network and no plan directory needed: each call ends at the parser.
    env = dict(os.environ, MSCCLPP_DEBUG="NONE")
    return subprocess.run([path] + args, capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_help_prints_the_usage_and_exits_0(name):
    for flag in ("--help", "-h"):
        run = _run(_tool(name), [flag])
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("usage: "), run.stdout
        assert run.stderr == ""


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_version_prints_the_project_version(name):
    run = _run(_tool(name), ["--version"])
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{name} (MSCCL++) {_project_version()}\n"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_unknown_option_is_a_usage_error(name):
    run = _run(_tool(name), ["--no-such-option"])
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"{name}: unknown option '--no-such-option'\nusage: "), run.stderr


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_bad_value_is_a_precise_usage_error(name):
    _, args, message = TOOLS[name]
    run = _run(_tool(name), args)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert run.stderr.startswith(message), run.stderr
    assert "\nusage: " in run.stderr


def test_demo_allreduce_ends_at_once_when_init_is_refused():
    """A bad environment value is refused at init, in rank 0's ncclGetUniqueId. Every rank must end at once with the
    message, not wait for the unique id until the timeout, which happens when ranks hold each other's pipe ends open.
    The message must reach a redirected stdout, although the ranks end with _exit, which flushes nothing."""
    shim = os.path.join(BUILD_DIR, "nccl_shim", "libmscclpp_nccl.so")
    if not os.path.exists(shim):
        pytest.skip("needs the shim of a build (MSCCLPP_BUILD_DIR)")
    env = dict(os.environ, LD_PRELOAD=shim, MSCCLPP_BACKEND="gpux", MSCCLPP_PLAN_DIR=os.path.join(REPO_ROOT, "plans"))
    env.pop("MSCCLPP_DEBUG", None)
    run = subprocess.run([_tool("demo_allreduce"), "--ranks", "3", "--bytes", "4096", "--device", "cpu",
                          "--timeout", "50"], capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 1
    assert "did not finish" not in run.stdout, run.stdout
    assert ("rank 0: ncclGetUniqueId failed: invalid environment: MSCCLPP_BACKEND='gpux' is not valid: expected one "
            "of auto|cuda|cpu") in run.stdout, run.stdout
    assert "rank 1: no unique id from rank 0" in run.stdout and "rank 2: no unique id from rank 0" in run.stdout
