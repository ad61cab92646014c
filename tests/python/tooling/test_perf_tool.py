"""mscclpp-perf, nccl-tests' sweep through the NCCL API, on the CPU backend with the default plans:
every collective's rows, nccl-tests' columns and bus-bandwidth factors, results checked; a plan that
computes the wrong result shows in #wrong and the exit status; a call no plan serves, with no real
NCCL behind the shim, fails with NCCL's error instead of hanging."""
import os
import re
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD_DIR = os.environ.get("MSCCLPP_BUILD_DIR", "")
ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)((?:\s+\S+){10})$")


def perf(*args, plans=os.path.join(REPO_ROOT, "plans"), timeout=120, native=True):
    if not BUILD_DIR:
        pytest.skip("MSCCLPP_BUILD_DIR is not set (the Meson test sets it)")
    # NCCL's default log level: quiet.
    env = {k: v for k, v in os.environ.items() if k not in ("NCCL_DEBUG", "MSCCLPP_DEBUG")}
    env.update(MSCCLPP_BACKEND="cpu", MSCCLPP_PLAN_DIR=plans, MSCCLPP_TIMEOUT_S="30")
    if not native:
        env["MSCCLPP_NATIVE_ENABLE"] = "0"
    return subprocess.run([os.path.join(BUILD_DIR, "tools", "mscclpp-perf"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def rows(stdout):
    found = []
    for line in stdout.splitlines():
        m = ROW.match(line)
        if m:
            cells = m.group(6).split()
            found.append({"size": int(m.group(1)), "count": int(m.group(2)), "type": m.group(3), "redop": m.group(4),
                          "root": int(m.group(5)), "out": cells[:5], "in": cells[5:]})
    return found


def test_every_collective_runs_checked_on_two_ranks():
    run = perf("all", "-g", "2", "-b", "1K", "-e", "4K", "-f", "2", "-n", "2", "-w", "1", "-R", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    got = rows(run.stdout)
    assert len(got) == 8 * 3  # eight collectives, sizes 1K, 2K, 4K
    for name in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "alltoallv",
                 "sendrecv"):
        assert f"# {name}: 2 ranks (threads), host buffers, 3 runs of 2 calls after 1 warm-up calls" in run.stdout
    for row in got:
        assert row["size"] in (1024, 2048, 4096) and row["count"] * 4 == row["size"] and row["type"] == "float"
        assert row["out"][4] == "0", row
        time, fastest, algbw, busbw = (float(v) for v in row["out"][:4])
        assert 0 < fastest <= time
        assert algbw == pytest.approx(row["size"] / 1e9 / (time * 1e-6), rel=0.02, abs=0.01)
    reduce_rows = [r for r in got if r["redop"] == "sum"]
    assert len(reduce_rows) == 9  # all_reduce, reduce_scatter, reduce
    # In place where nccl-tests has it; alltoall, alltoallv and sendrecv print N/A there.
    assert sum(r["in"] == ["N/A"] * 5 for r in got) == 9
    assert "# Out of bounds values : 0 OK" in run.stdout


def test_alltoallv_runs_uneven_splits_on_the_plans():
    # Zero pairs and uneven shares at 3 and 5 ranks, every element checked.
    for ranks in ("3", "5"):
        run = perf("alltoallv", "-g", ranks, "-b", "8", "-e", "64K", "-f", "64", "-n", "2", "-w", "1", "-R", "1")
        assert run.returncode == 0, run.stdout + run.stderr
        got = rows(run.stdout)
        assert [r["size"] for r in got] == [8, 512, 32768] and all(r["out"][4] == "0" for r in got), run.stdout


def test_bus_bandwidth_factors_are_nccl_tests():
    run = perf("all_reduce", "all_gather", "broadcast", "-g", "4", "-b", "1M", "-e", "1M", "-n", "2", "-w", "1",
               "-R", "1", "-d", "int32", "-o", "max")
    assert run.returncode == 0, run.stdout + run.stderr
    got = rows(run.stdout)
    assert [r["redop"] for r in got] == ["max", "none", "none"]
    # busbw from the printed time, to the printed precision: 2(n-1)/n, (n-1)/n, 1.
    for row, factor in zip(got, (2 * 3 / 4, 3 / 4, 1.0)):
        time, _, algbw, busbw = (float(v) for v in row["out"][:4])
        assert algbw == pytest.approx(row["size"] / 1e9 / (time * 1e-6), abs=0.006)
        assert busbw == pytest.approx(algbw * factor, abs=0.011)


def test_a_wrong_plan_shows_in_wrong_and_the_exit_status(tmp_path):
    # A 2-rank in-place allreduce (it serves out-of-place calls too) that
    # leaves each rank its own input: every element is wrong on both ranks.
    code = (
        "import sys\n"
        "from mscclpp.language import AllReduce, CollectiveProgram, Rank\n"
        "from mscclpp.language.buffer import Buffer\n"
        "with CollectiveProgram('own_only', AllReduce(2, 1, True), 2) as p:\n"
        "    for r in range(2):\n"
        "        Rank(r).copy(Buffer(r, 1)[0:1], Rank(r).get_input_buffer()[0:1], tb=0)\n"
        "        Rank(r).copy(Rank(r).get_output_buffer()[0:1], Buffer(r, 1)[0:1], tb=0)\n"
        "sys.stdout.write(p.to_json(indent=None))\n"
    )
    plan = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=os.path.join(REPO_ROOT, "dsl_compiler")))
    (tmp_path / "own_only.json").write_text(plan.stdout)
    run = perf("all_reduce", "-g", "2", "-b", "256", "-e", "256", "-n", "1", "-w", "0", "-R", "1", plans=str(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    (row,) = rows(run.stdout)
    assert row["out"][4] == row["in"][4] == "128"  # 64 floats on each of 2 ranks
    assert "# Out of bounds values : 256 WRONG" in run.stdout


def test_a_call_no_plan_serves_fails_with_the_reason():
    # Native algorithms off: they serve any rank count.
    run = perf("all_reduce", "-g", "3", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "-R", "1", timeout=60,
               native=False)
    assert run.returncode == 1
    assert "failed: " in run.stdout and "no plan for allreduce on 3 ranks" in run.stdout, run.stdout


def test_the_error_names_what_the_plan_scan_skipped(tmp_path):
    # At the default log level: nothing is logged, and the error says why.
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "typo.json").write_text('{"name": "x",\n  "collective" "allreduce"}\n')
    run = perf("all_reduce", "-g", "2", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "-R", "1",
               plans=f"{tmp_path / 'broken'}:{tmp_path / 'missing'}", timeout=60, native=False)
    assert run.returncode == 1 and run.stderr == ""
    assert "the plan scan skipped 2 thing(s): " in run.stdout
    assert f"{tmp_path / 'broken' / 'typo.json'}: invalid JSON at line 2, column 16" in run.stdout
    assert f"plan directory {tmp_path / 'missing'}: No such file or directory" in run.stdout


def test_side_by_side_prints_both_runs_per_size():
    # On this machine the "other NCCL" is our own libnccl.so.2 again: the
    # table's shape is what is checked.
    if not BUILD_DIR:
        pytest.skip("MSCCLPP_BUILD_DIR is not set (the Meson test sets it)")
    env = dict(os.environ, MSCCLPP_BACKEND="cpu", MSCCLPP_PLAN_DIR=os.path.join(REPO_ROOT, "plans"),
               PYTHONPATH=os.path.join(REPO_ROOT, "dsl_compiler"))
    run = subprocess.run([sys.executable, "-m", "mscclpp", "perf", "--versus",
                          os.path.join(BUILD_DIR, "nccl_shim", "libnccl.so.2"), "all_reduce", "broadcast", "-g", "2",
                          "-b", "1K", "-e", "2K", "-n", "1", "-w", "0", "-R", "1"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line.split() for line in run.stdout.splitlines() if not line.startswith("#")]
    assert [(cells[0], cells[1]) for cells in lines] == [("all_reduce", "1024"), ("all_reduce", "2048"),
                                                          ("broadcast", "1024"), ("broadcast", "2048")]
    assert all(len(cells) == 14 and cells[4] == "|" and cells[10] == "|" for cells in lines)


def bench_native(*args):
    if not BUILD_DIR:
        pytest.skip("MSCCLPP_BUILD_DIR is not set (the Meson test sets it)")
    env = {k: v for k, v in os.environ.items() if k not in ("NCCL_DEBUG", "MSCCLPP_DEBUG")}
    env.update(MSCCLPP_BACKEND="cpu", MSCCLPP_PLAN_DIR=os.path.join(REPO_ROOT, "plans"), MSCCLPP_TIMEOUT_S="30")
    return subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "bench", "bench_native.py"), *args,
                           os.path.join(BUILD_DIR, "tools", "mscclpp-perf"), "all_reduce", "-g", "2", "-b", "8",
                           "-e", "64", "-f", "8", "-n", "2", "-w", "1", "-R", "1"],
                          capture_output=True, text=True, timeout=120, env=env)


def test_bench_native_nccl_column_shows_only_right_results():
    # The NCCL test double records calls without computing them: its times are no measurement.
    double = os.path.join(BUILD_DIR, "tests", "unit", "shim", "libnccl_double.so")
    for nccl in (double, "/etc/hostname"):  # the second is no library: the preload does not take
        run = bench_native("--nccl", nccl)
        assert run.returncode == 0, run.stdout + run.stderr
        lines = [line.split() for line in run.stdout.splitlines() if line.startswith("     all_reduce")]
        assert [line[1] for line in lines] == ["8", "64"], run.stdout
        for line in lines:  # plan us, native us, ratio, nccl us, ratio: twice
            assert line[7:9] == ["-", "-"] and line[13:15] == ["-", "-"], run.stdout
            assert float(line[4]) > 0 and float(line[5]) > 0
        assert "the NCCL run failed" in run.stderr


def test_bench_native_refuses_a_missing_nccl():
    run = bench_native("--nccl", "/no/such/libnccl.so.2")
    assert run.returncode != 0 and "--nccl /no/such/libnccl.so.2: no such file" in run.stderr
