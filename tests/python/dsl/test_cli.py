"""python3 -m mscclpp: compile (script and function styles), install, list, show, tool forwarding."""
import json
import os
import subprocess
import sys

import pytest
from dsl_test_support import HERE, REPO

from mscclpp.cli import main
from mscclpp.cli.program_runner import parse_call_args

PROGRAMS = os.path.join(HERE, "programs")


def run_cli(*args, env=None):
    environment = dict(os.environ, PYTHONPATH=os.path.join(REPO, "dsl_compiler"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "mscclpp", *args], capture_output=True, text=True, env=environment)


def test_compile_script_style(tmp_path):
    out = tmp_path / "plan.json"
    # The program is a minimal one (no barrier before its puts into the peers'
    # outputs): the verifier refutes it, so --no-verify (test_verify.py covers
    # verification).
    result = run_cli("compile", os.path.join(PROGRAMS, "script_style.py"), "--name", "ag", "--num_gpus", "3", "-o", str(out),
                     "--no-verify")
    assert result.returncode == 0, result.stderr
    plan = json.loads(out.read_text())
    assert (plan["name"], len(plan["gpus"])) == ("ag", 3)
    assert "building ag" in result.stderr  # the program's other output is kept, on stderr
    assert "\n" not in out.read_text().rstrip("\n")


def test_compile_function_style_with_indent(capsys):
    path = os.path.join(PROGRAMS, "function_style.py")
    assert main(["compile", path, "--function", "allreduce_two", "name=fn", "--chunks", "2", "--indent", "2", "-o", "-",
                 "--no-verify"]) == 0
    text = capsys.readouterr().out
    plan = json.loads(text)
    assert plan["name"] == "fn" and plan["gpus"][0]["input_chunks"] == 4
    assert text.startswith('{\n  "name": "fn"')


def test_compile_reports_dsl_errors_with_location(capsys):
    path = os.path.join(PROGRAMS, "function_style.py")
    assert main(["compile", path, "--function", "broken", "-o", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:")
    assert "cannot pair" in err


def test_compile_argument_errors(capsys, tmp_path):
    with pytest.raises(SystemExit, match="missing -o"):
        main(["compile", os.path.join(PROGRAMS, "function_style.py")])
    assert main(["compile", os.path.join(PROGRAMS, "function_style.py"), "-o", str(tmp_path / "x.json")]) == 1
    assert "function_style.py exited: not run when imported by --function" in capsys.readouterr().err
    defines_only = tmp_path / "defines_only.py"
    defines_only.write_text("def build():\n    pass\n")
    assert main(["compile", str(defines_only), "-o", str(tmp_path / "x.json")]) == 1
    assert "built no CollectiveProgram; if it only defines functions, name one with --function" in capsys.readouterr().err


def test_parse_call_args():
    assert parse_call_args(["8", "--name", "x", "--flag", "--n=3", "k=[1, 2]"]) == (
        [8],
        {"name": "x", "flag": True, "n": 3, "k": [1, 2]},
    )


def test_install_list_and_show(tmp_path):
    plans = tmp_path / "plans"
    (tmp_path / "other").mkdir()
    env = {"MSCCLPP_PLAN_DIR": f"{plans}:{tmp_path / 'other'}"}
    result = run_cli("--install", env=env)
    assert result.returncode == 0 and f"into {plans}" in result.stdout
    assert len(os.listdir(plans)) == len(os.listdir(os.path.join(REPO, "plans"))) - 2  # minus README, meson.build
    listed = run_cli("list", env=env)
    assert listed.returncode == 0
    line = next(l for l in listed.stdout.splitlines() if l.startswith("allreduce_ll_n8_ip "))
    assert line.split() == ["allreduce_ll_n8_ip", "allreduce", "8", "LL", "yes", "0B..1MiB-1", "default,ll"]
    assert any(l.startswith("broadcast_put_n2_oop_root1 ") and l.endswith("root=1") for l in listed.stdout.splitlines())
    shown = run_cli("show", str(plans / "allreduce_rsag_n2_ip.json"))
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[0].startswith("allreduce_rsag_n2_ip: allreduce on 2 rank(s), protocol Simple, in place")
    assert "  tb 1: barrier wait nop res nop signal wait nop" in shown.stdout


def test_tools_are_forwarded_or_reported(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    tool = fake / "mscclpp-plan"
    tool.write_text("#!/bin/sh\necho \"args: $*\"\nexit 3\n")
    tool.chmod(0o755)
    env = {"PATH": f"{fake}:{os.environ['PATH']}"}
    forwarded = run_cli("verify", "a.json", "b.json", env=env)
    assert forwarded.returncode == 3 and forwarded.stdout.strip() == "args: verify a.json b.json"
    missing = run_cli("emulate", "x.json", env={"PATH": str(fake), "MSCCLPP_BUILD_DIR": str(tmp_path)})
    assert missing.returncode == 127
    assert "mscclpp-emulate is not built or not found" in missing.stderr and str(tmp_path / "tools") in missing.stderr


@pytest.mark.parametrize("words, tool, forwarded", [
    (["explain", "--ranks", "4"], "mscclpp-plan", "explain --ranks 4"),
    (["validate", "p.json"], "mscclpp-plan", "validate p.json"),
    (["select", "--dir", "d"], "mscclpp-plan", "select --dir d"),
    (["info", "p.json"], "mscclpp-plan", "info p.json"),
    (["plan", "show", "p.json"], "mscclpp-plan", "show p.json"),
    (["info"], "mscclpp-info", ""),
    (["info", "--params"], "mscclpp-info", "--params"),
    (["perf", "-g", "4"], "mscclpp-perf", "-g 4"),
])
def test_every_tool_verb_is_forwarded(tmp_path, words, tool, forwarded):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / tool).write_text(f"#!/bin/sh\necho \"{tool}: $*\"\n")
    (fake / tool).chmod(0o755)
    run = run_cli(*words, env={"PATH": f"{fake}:{os.environ['PATH']}", "MSCCLPP_BUILD_DIR": str(tmp_path)})
    assert run.returncode == 0 and run.stdout.strip() == f"{tool}: {forwarded}".strip(), run.stderr


def test_console_scripts_run_the_installed_binary_only(tmp_path, monkeypatch):
    # A console script named like the tool lies on PATH: it must never find itself there.
    from mscclpp.cli import tools

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mscclpp-plan").write_text("#!/bin/sh\nexit 0\n")
    (fake / "mscclpp-plan").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setenv("MSCCLPP_BUILD_DIR", str(tmp_path / "nowhere"))
    assert tools.exec_tool("mscclpp-plan", ["--version"]) == 127


def test_list_reports_unreadable_files_and_missing_folders(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    src = os.path.join(REPO, "plans", "allreduce_ll_n2_ip.json")
    (good / "allreduce_ll_n2_ip.json").write_text(open(src).read())
    (good / "broken.json").write_text("{ not json")
    (good / "incomplete.json").write_text('{"name": "x"}')
    listed = run_cli("list", "--dir", str(good))
    assert listed.returncode == 1
    assert "1 plan(s) in" in listed.stdout and "2 problem(s)" in listed.stdout  # only the readable one counts
    assert f"error: {good / 'broken.json'}: unreadable (JSONDecodeError" in listed.stderr
    assert f"error: {good / 'incomplete.json'}: unreadable (KeyError" in listed.stderr
    missing = run_cli("list", "--dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 1
    assert f"error: {tmp_path / 'nowhere'}: no such plan directory" in missing.stderr
    assert "0 plan(s) in no plan directory" in missing.stdout
    (good / "broken.json").unlink()
    (good / "incomplete.json").unlink()
    fine = run_cli("list", "--dir", str(good))
    assert fine.returncode == 0 and fine.stderr == "" and "1 plan(s) in" in fine.stdout
    # Without --dir, MSCCLPP_PLAN_DIR's folders are named ones too; the plan cache, absent on a fresh
    # install, is passed over in silence.
    env_missing = run_cli("list", env={"MSCCLPP_PLAN_DIR": f"{good}:{tmp_path / 'gone'}"})
    assert env_missing.returncode == 1 and "gone: no such plan directory" in env_missing.stderr
    default = run_cli("list", env={"MSCCLPP_PLAN_DIR": "", "MSCCLPP_CACHE_DIR": str(tmp_path / "cache")})
    assert default.returncode == 0, default.stderr
    assert "cache" not in default.stderr and "note:" not in default.stderr


def test_help_version_and_usage_exit_codes():
    for words in (["--help"], ["-h"], ["help"], ["compile", "--help"], ["list", "--help"], ["install", "-h"]):
        result = run_cli(*words)
        assert result.returncode == 0, (words, result.stderr)
        assert "usage" in result.stdout.lower() or "python3 -m mscclpp compile" in result.stdout, words
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == "mscclpp 0.1.0"
    assert run_cli().returncode == 2
    unknown = run_cli("frobnicate")
    assert unknown.returncode == 2 and "unknown command 'frobnicate'" in unknown.stderr


@pytest.mark.parametrize("words", [["list"], ["--help"], ["show", os.path.join(REPO, "plans", "allreduce_ll_n8_ip.json")]])
def test_a_closed_pipe_is_no_error(words):
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "dsl_compiler"), MSCCLPP_PLAN_DIR=os.path.join(REPO, "plans"))
    process = subprocess.Popen([sys.executable, "-m", "mscclpp", *words], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env)
    process.stdout.close()  # the reader is gone before the first line, like `| head -0`
    err = process.stderr.read().decode()
    assert process.wait() == 0
    assert "Traceback" not in err and "Broken pipe" not in err, err


def test_shim_path_and_nccl_dir(tmp_path):
    build = os.environ.get("MSCCLPP_BUILD_DIR")
    if build:
        shim = run_cli("--shim-path")
        assert shim.returncode == 0 and shim.stdout.strip() == os.path.join(build, "nccl_shim", "libmscclpp_nccl.so")
        nccl_dir = run_cli("--nccl-dir")
        assert nccl_dir.returncode == 0
        assert os.path.exists(os.path.join(nccl_dir.stdout.strip(), "libnccl.so.2"))
    absent = run_cli("--shim-path", env={"MSCCLPP_BUILD_DIR": ""})
    assert absent.returncode == 1 and "no NCCL shim found" in absent.stderr


def test_emulate_takes_nccl_dtype_spellings():
    if not os.environ.get("MSCCLPP_BUILD_DIR"):
        pytest.skip("needs the C++ tools of a build (MSCCLPP_BUILD_DIR)")
    plan = os.path.join(REPO, "plans", "allreduce_ll_n2_oop.json")
    for dtype in ("ncclFloat32", "ncclBfloat16", "ncclHalf", "float32"):
        result = run_cli("emulate", plan, "--ranks", "2", "--size", "4096", "--dtype", dtype)
        assert result.returncode == 0, (dtype, result.stdout, result.stderr)
