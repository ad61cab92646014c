"""The repository's shell and Python scripts answer --help and --version like the C++ tools: --help prints
the script's header comment (or docstring) and exits 0 without doing any of the script's work, --version prints
"NAME (MSCCL++) VERSION" and exits 0. The help is read from the header itself (tools/support/version.sh), so it
stops at the header's end: no line of code leaks into it."""
import os
import re
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# script -> the name its --version prints
SHELL_SCRIPTS = {
    "tools/demo": "demo",
    "tools/ci/format": "format",
    "tools/gpu/gpu-check": "gpu-check",
    "tools/gpu/gpu-shim-check": "gpu-shim-check",
    "tools/gpu/prepare-gpu-deps": "prepare-gpu-deps",
    ".ci/run": "ci-run",
    ".ci/setup": "ci-setup",
}
PYTHON_SCRIPTS = ["tools/bench/allpairs_json_program.py", "tools/bench/bench_alltoallv.py", "tools/bench/bench_compiler.py",
                  "tools/bench/bench_native.py", "tools/bench/bench_verify.py", "tools/ci/check_comment_refs.py",
                  "tools/ci/ci_suite_targets.py", "tools/ci/fault_sweep.py", "tools/ci/test_summary.py",
                  "tools/ci/verify_vs_emulate.py", "tools/gpu/gpu_shim_torch_check.py", "tools/gpu/gpu_tests.py"]


def _project_version():
    with open(os.path.join(REPO_ROOT, "meson.build")) as f:
        return re.search(r"version: '([^']+)'", f.read()).group(1)


def _command(script):
    path = os.path.join(REPO_ROOT, script)
    return [sys.executable, path] if script.endswith(".py") else [path]


def _run(script, flag, cwd):
    # From an unrelated folder: a script must find its helpers relative to itself.
    return subprocess.run(_command(script) + [flag], capture_output=True, text=True, timeout=60, cwd=cwd)


def _header(script):
    """The comment block after the #! line, without the comment marks."""
    lines = []
    with open(os.path.join(REPO_ROOT, script)) as f:
        for line in f.read().splitlines()[1:]:
            if not line.startswith("#"):
                break
            lines.append(re.sub(r"^# ?", "", line))
    return "\n".join(lines)


def test_every_script_is_checked():
    """A script added to tools/ or .ci/ joins the lists above (and so answers --help and --version)."""
    found = set()
    for folder in ("tools", "tools/bench", "tools/ci", "tools/gpu", ".ci"):
        for name in os.listdir(os.path.join(REPO_ROOT, folder)):
            path = os.path.join(REPO_ROOT, folder, name)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                starts_like_a_script = f.read(2) == b"#!"
            if name.endswith(".py") or (starts_like_a_script and os.access(path, os.X_OK)):
                found.add(f"{folder}/{name}")
    assert found == set(SHELL_SCRIPTS) | set(PYTHON_SCRIPTS)


@pytest.mark.parametrize("script", sorted(SHELL_SCRIPTS))
def test_shell_script_help_is_its_header_and_exits_0(script, tmp_path):
    for flag in ("--help", "-h"):
        run = _run(script, flag, tmp_path)
        assert run.returncode == 0, run.stderr
        assert run.stdout.rstrip("\n") == _header(script)
        assert "set -" not in run.stdout and run.stdout.strip()


@pytest.mark.parametrize("script", sorted(SHELL_SCRIPTS))
def test_shell_script_version(script, tmp_path):
    run = _run(script, "--version", tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"{SHELL_SCRIPTS[script]} (MSCCL++) {_project_version()}\n"


@pytest.mark.parametrize("script", PYTHON_SCRIPTS)
def test_python_script_help_and_version(script, tmp_path):
    helped = _run(script, "--help", tmp_path)
    assert helped.returncode == 0 and helped.stdout.strip(), helped.stderr
    version = _run(script, "--version", tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"{os.path.basename(script)} (MSCCL++) {_project_version()}\n"


@pytest.mark.parametrize("script", [".ci/run", ".ci/setup"])
def test_ci_scripts_refuse_arguments_instead_of_running(script, tmp_path):
    run = _run(script, "--frobnicate", tmp_path)
    assert run.returncode == 2 and "unknown argument --frobnicate" in run.stderr


@pytest.mark.parametrize("args, message", [
    (["--ranks", "x"], "--ranks 'x': not a whole number"),
    (["--ranks", "0"], "--ranks '0': not a whole number"),
    (["--bytes", "4Q"], "--bytes '4Q': not a byte count"),
    (["--iters", "-1"], "--iters '-1': not a positive whole number"),
    (["--iters"], "--iters needs a value"),
])
def test_demo_refuses_bad_arguments_before_building(args, message, tmp_path):
    build = tmp_path / "build"
    run = subprocess.run([os.path.join(REPO_ROOT, "tools/demo"), "--build", str(build), *args], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2 and f"tools/demo: {message}" in run.stderr, run.stderr
    assert not build.exists() and "[demo]" not in run.stdout
