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
    # The program is a minimal one (no barrier before its puts into the peers' outputs): the verifier
    # refutes it, so --no-verify (test_verify.py covers verification).
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
