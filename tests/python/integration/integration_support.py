"""Helpers of the integration tests: starting ranks as processes (integration_worker.py) with deadlines,
relaying the unique id, and collecting their ``RESULT`` lines.

The runtime is the libmscclpp.so named by MSCCLPP_LIBRARY (Meson's python test sets it to the build's
library); without it the tests are skipped with that reason. Every wait has a deadline: a rank that
hangs is killed and the test fails naming it, with the tail of its stderr.
"""
import importlib.util
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
WORKER = os.path.join(HERE, "integration_worker.py")
PLANS = os.path.join(REPO, "plans")
LIBRARY = os.environ.get("MSCCLPP_LIBRARY", "")
RANK_TIMEOUT_S = 30  # MSCCLPP_TIMEOUT_S of the ranks: a stuck wait inside the runtime fails by then
JOB_TIMEOUT_S = 90  # the test's own deadline for a whole job

_MISSING = [why for missing, why in (
    (not LIBRARY or not os.path.isfile(LIBRARY),
     "MSCCLPP_LIBRARY does not name a built libmscclpp.so (run `meson test --suite python`, which sets it)"),
    (importlib.util.find_spec("numpy") is None,
     "numpy is not installed (pip install numpy): the ranks check results with it"),
) if missing]
# Tests that start ranks against the real runtime.
requires_runtime = pytest.mark.skipif(bool(_MISSING), reason="; ".join(_MISSING))


def worker_env(**extra):
    """The environment of a rank: the in-tree package and DSL examples, the build's runtime, the default
    plans only, the CPU backend, a private jit cache and the ranks' deadline."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([os.path.join(REPO, "dsl_compiler"), os.path.join(REPO, "examples", "dsl"), HERE]
                                   + [p for p in [env.get("PYTHONPATH")] if p]),
        MSCCLPP_LIBRARY=LIBRARY,
        MSCCLPP_PLAN_DIR=PLANS,
        MSCCLPP_BACKEND="cpu",
        MSCCLPP_TIMEOUT_S=str(RANK_TIMEOUT_S),
        MSCCLPP_CACHE_DIR=tempfile.mkdtemp(prefix="mscclpp-it-cache-"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def free_port():
    """A port free right now on 127.0.0.1 (for the fixed-address form; the unique-id form needs none)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _result(stdout, what):
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"{what} printed no RESULT line; stdout:\n{stdout[-2000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def run_lone(scenario, args=None, timeout=JOB_TIMEOUT_S, cwd=None, **env):
    """Runs one lone worker process (in folder cwd, default this one) and returns its result."""
    command = [sys.executable, WORKER, scenario, "--args", json.dumps(args or {})]
    try:
        done = subprocess.run(command, env=worker_env(**env), capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"worker {scenario} did not finish within {timeout} s; stderr:\n{(error.stderr or '')[-2000:]}")
    assert done.returncode == 0, f"worker {scenario} failed ({done.returncode}); stderr:\n{done.stderr[-3000:]}"
    return _result(done.stdout, f"worker {scenario}")


def run_ranks(scenario, nranks, args=None, meet="uid", address="", timeout=JOB_TIMEOUT_S, **env):
    """Runs nranks worker processes as one job; returns their results in rank order."""
    deadline = time.monotonic() + timeout
    environment = worker_env(**env)
    logs = [(tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")) for _ in range(nranks)]
    processes = []
    try:
        for rank in range(nranks):
            command = [sys.executable, WORKER, scenario, "--rank", str(rank), "--size", str(nranks), "--meet", meet,
                       "--address", address, "--args", json.dumps(args or {})]
            relay = meet == "uid" and rank == 0
            receives_uid = meet == "uid" and rank > 0
            processes.append(subprocess.Popen(
                command, env=environment, text=True, stdin=subprocess.PIPE if receives_uid else subprocess.DEVNULL,
                stdout=subprocess.PIPE if relay else logs[rank][0], stderr=logs[rank][1]))
        first_stdout = ""
        if meet == "uid":
            uid_line = _read_line(processes[0], deadline, logs[0][1])
            assert uid_line.startswith("UID "), f"rank 0 printed {uid_line!r} instead of its unique id"
            first_stdout = uid_line
            for p in processes[1:]:
                p.stdin.write(uid_line[4:].strip() + "\n")
                p.stdin.close()
        outputs = []
        for rank, p in enumerate(processes):
            remaining = max(0.1, deadline - time.monotonic())
            try:
                if rank == 0 and meet == "uid":
                    out, _ = p.communicate(timeout=remaining)
                    outputs.append(first_stdout + out)
                else:
                    p.wait(timeout=remaining)
                    logs[rank][0].seek(0)
                    outputs.append(logs[rank][0].read())
            except subprocess.TimeoutExpired:
                stuck = [r for r, q in enumerate(processes) if q.poll() is None]
                pytest.fail(f"{scenario} with {nranks} ranks: ranks {stuck} still running after {timeout} s; "
                            f"rank {stuck[0]} stderr:\n{_tail(logs[stuck[0]][1])}")
        for rank, p in enumerate(processes):
            assert p.returncode == 0, (f"{scenario}: rank {rank}/{nranks} failed ({p.returncode}); stderr:\n"
                                       f"{_tail(logs[rank][1])}")
        return [_result(out, f"{scenario} rank {rank}") for rank, out in enumerate(outputs)]
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()
        for out, err in logs:
            out.close()
            err.close()


def _read_line(process, deadline, stderr_log):
    """Rank 0's first stdout line, or a failure naming the deadline."""
    ready, _, _ = select.select([process.stdout], [], [], max(0.1, deadline - time.monotonic()))
    if not ready:
        pytest.fail(f"rank 0 did not print its unique id before the deadline; stderr:\n{_tail(stderr_log)}")
    line = process.stdout.readline()
    if not line:
        process.wait()
        pytest.fail(f"rank 0 exited ({process.returncode}) before printing its unique id; stderr:\n{_tail(stderr_log)}")
    return line


def _tail(log, limit=3000):
    log.flush()
    log.seek(0)
    return log.read()[-limit:]
