"""tools/ci/check_comment_refs.py: the repository's comments name only files and functions that exist,
and the checker finds the stale ones it is meant to find."""
import importlib.util
import os
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _checker():
    spec = importlib.util.spec_from_file_location("check_comment_refs", os.path.join(REPO_ROOT, "tools", "ci", "check_comment_refs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _git_tree(tmp_path, files):
    for path, text in files.items():
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return str(tmp_path)


def test_repository_comments_have_no_stale_reference():
    if not os.path.isdir(os.path.join(REPO_ROOT, ".git")) and not os.path.isfile(os.path.join(REPO_ROOT, ".git")):
        pytest.skip("not a git checkout")
    problems = _checker().stale_references(REPO_ROOT)
    assert problems == [], "\n".join(problems)


def test_checker_finds_stale_paths_and_functions(tmp_path):
    root = _git_tree(tmp_path, {
        "runtime/plan/registry.cc": "int lookupPlan() { return 0; }\n",
        "runtime/plan/registry.hpp": (
            "// Implemented in runtime/plan/registry.cc (see plan/registry.cc and registry.cc).\n"
            "// Moved: runtime/plan/selector.cc, and old.hpp; the folder runtime/gone/ too.\n"
            "/* lookupPlan() exists, findPlan() and Registry::removed do not. */\n"
            "int lookupPlan();\n"
            "const char* s = \"// runtime/plan/not_a_comment.cc\";\n"
        ),
        "tools/tool.py": (
            '"""Reads runtime/plan/registry.hpp and runtime/plan/missing.hpp."""\n'
            "# NCCL's src/transport.cc and /usr/include/stdio.h are not ours; PLAN.json is a placeholder.\n"
            "x = 1\n"
        ),
        "meson.build": "# builds runtime/plan/registry.cc and runtime/plan/absent.cc\nx = '#not/a/comment.cc'\n",
    })
    found = sorted(p.split(": ", 1)[0] + ": " + p.split("'")[1] for p in _checker().stale_references(root))
    assert found == sorted([
        "runtime/plan/registry.hpp:2: runtime/plan/selector.cc",
        "runtime/plan/registry.hpp:2: old.hpp",
        "runtime/plan/registry.hpp:2: runtime/gone/",
        "runtime/plan/registry.hpp:3: findPlan",
        "runtime/plan/registry.hpp:3: Registry::removed",
        "tools/tool.py:1: runtime/plan/missing.hpp",
        "meson.build:1: runtime/plan/absent.cc",
    ])


def test_checker_exit_status(tmp_path):
    root = _git_tree(tmp_path, {"a.cc": "// see b.cc\nint a;\n"})
    run = subprocess.run(["python3", os.path.join(REPO_ROOT, "tools", "ci", "check_comment_refs.py"), root],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "a.cc:1: 'b.cc' names no file" in run.stdout
    (tmp_path / "b.cc").write_text("int b;\n")
    subprocess.run(["git", "-C", root, "add", "b.cc"], check=True)
    run = subprocess.run(["python3", os.path.join(REPO_ROOT, "tools", "ci", "check_comment_refs.py"), root],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


def test_checker_finds_outside_references_and_long_headers(tmp_path):
    long_header = "".join(f"// line {k}\n" for k in range(13)) + "int x;\n"
    root = _git_tree(tmp_path, {
        "a.cc": "// Fixes issue 12 (seed 003).\nint a;\n",
        "b.py": '"""Reads ../shared/docs/plan-format.md."""\nb = 1\n',
        "docs/c.md": "See shared/seeds/README.md and issue #7.\n",
        "long.hpp": long_header,
        "short.hpp": "".join(f"// line {k}\n" for k in range(12)) + "int y;\n",
    })
    found = sorted(p.split(": ", 1)[0] for p in _checker().stale_references(root))
    assert found == sorted(["a.cc:1", "a.cc:1", "b.py:1", "docs/c.md:1", "docs/c.md:1", "long.hpp:1"])
