"""One plan-directory rule for the runtime (runtime/plan/plan_dirs.cc) and the package
(mscclpp/_paths.py), and a candidate order in which the plans a user registers come first.

The runtime's directories are read from its own log (NCCL_DEBUG=INFO, subsystem PLAN: one line per
directory it scanned or found absent) and from the sources of the plans it registered; the package's
from mscclpp._paths. Each case runs in a fresh process (run_lone)."""
import os
import re
import subprocess
import sys

from integration_support import LIBRARY, PLANS, requires_runtime, run_lone, worker_env

_SCANNED = re.compile(r"MSCCLPP INFO PLAN (?:default )?plan directory (.+?)(?:: \d+ plan\(s\) registered| is absent)")


def runtime_directories(log_path):
    with open(log_path, encoding="utf-8") as f:
        return [os.path.normpath(m.group(1)) for m in _SCANNED.finditer(f.read())]


def run_logged(tmp_path, cwd=None, **env):
    log = tmp_path / "runtime.log"
    result = run_lone("plan_dirs", cwd=cwd, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="PLAN", NCCL_DEBUG_FILE=str(log),
                      **env)
    return result, runtime_directories(log)


@requires_runtime
def test_explicit_plan_dirs_are_the_same_list(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for folder, name in ((first, "allreduce_ll_n2_ip.json"), (second, "allgather_ll_n2_ip.json")):
        (folder / name).write_text(open(os.path.join(PLANS, name)).read())
    result, scanned = run_logged(tmp_path, MSCCLPP_PLAN_DIR=f"{first}:{second}")
    assert result["python"] == [str(first), str(second)] == scanned
    assert result["sources"] == [str(first), str(second)]
    assert result["install_dir"] == str(first)


@requires_runtime
def test_default_dirs_agree_and_install_fills_them(tmp_path):
    cache = tmp_path / "cache"
    env = worker_env(MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR=str(cache))
    installed = subprocess.run([sys.executable, "-m", "mscclpp", "--install"], env=env, capture_output=True,
                               text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    assert f"into {cache / 'plans'}" in installed.stdout and "note:" not in installed.stderr
    result, scanned = run_logged(tmp_path, MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR=str(cache))
    assert [os.path.normpath(d) for d in result["python"]] == scanned
    # From the build folder the installed plans are the source tree's; then the cache.
    assert scanned == [PLANS, str(cache / "plans")]
    # Each default plan registered once: the cache's copies are the same files, skipped.
    assert result["count"] == len([f for f in os.listdir(PLANS) if f.endswith(".json")])
    assert result["sources"] == [PLANS]


@requires_runtime
def test_a_relatively_loaded_runtime_gives_absolute_dirs(tmp_path):
    # The loader names such a library by the relative path it was opened with:
    # both sides make it absolute, so the directories do not change meaning when
    # the process changes its working folder.
    cache = tmp_path / "cache"
    result, scanned = run_logged(tmp_path, cwd=os.path.dirname(LIBRARY), MSCCLPP_PLAN_DIR="",
                                 MSCCLPP_CACHE_DIR=str(cache), MSCCLPP_LIBRARY="./" + os.path.basename(LIBRARY))
    assert len(scanned) == 2 and all(os.path.isabs(d) for d in scanned + result["python"]), (scanned, result)
    assert [os.path.normpath(d) for d in result["python"]] == scanned


@requires_runtime
def test_without_cache_dir_both_use_the_passwd_home(tmp_path):
    import pwd

    result, scanned = run_logged(tmp_path, MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR="", HOME=str(tmp_path / "elsewhere"))
    home_cache = os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "mscclpp", "plans")
    assert [os.path.normpath(d) for d in result["python"]] == scanned
    assert scanned[-1] == home_cache


@requires_runtime
def test_an_nvls_selector_sees_the_users_plan_first(tmp_path):
    result = run_lone("nvls_selector", MSCCLPP_PLAN_DIR=PLANS)
    assert result["defaults_with_nvls"], "the installed defaults have nvls plans of 4 ranks"
    assert result["chosen"] == "allreduce_nvls", result["reason"]
    assert result["listed_first"] == ["allreduce_nvls"]


@requires_runtime
def test_the_users_plan_wins_over_the_defaults(tmp_path):
    # Registered from Python, saved into the plan cache for later processes,
    # found there by the next one; also with MSCCLPP_PLAN_DIR listing the
    # user's directory before or after the defaults.
    cache = tmp_path / "cache"
    registered = run_lone("users_plan", {"save": True}, MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR=str(cache))
    later = run_lone("users_plan", {"compile": False}, MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR=str(cache))
    assert later["sources"] == [str(cache / "plans" / "mine.json")]
    # A job that saves its plan at every start finds last run's copy and replaces it.
    again = run_lone("users_plan", {"save": True}, MSCCLPP_PLAN_DIR="", MSCCLPP_CACHE_DIR=str(cache))
    assert again["sources"] == [str(cache / "plans" / "mine.json")]
    mine = str(cache / "plans")
    listed = [run_lone("users_plan", {"compile": False}, MSCCLPP_PLAN_DIR=dirs)
              for dirs in (f"{mine}:{PLANS}", f"{PLANS}:{mine}")]
    for result in [registered, later, again] + listed:
        for call in ("4K", "1M", "32M_oop"):
            assert result[call]["name"] == "mine", result[call]["reason"]
            assert "because it is the user's plan" in result[call]["reason"]
