"""The tree is formatted with the committed .clang-format: tools/ci/format --check lists every C, C++ and
CUDA file clang-format 14 would change, and exits 1 when there is one."""
import os
import shutil
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_every_source_is_formatted():
    if not (shutil.which("clang-format-14") or shutil.which("clang-format")):
        pytest.skip("clang-format is not installed (.ci/setup installs clang-format-14)")
    if not os.path.isdir(os.path.join(REPO_ROOT, ".git")) and not os.path.isfile(os.path.join(REPO_ROOT, ".git")):
        pytest.skip("not a git checkout: tools/ci/format lists the tracked files")
    run = subprocess.run([os.path.join(REPO_ROOT, "tools", "ci", "format"), "--check"], capture_output=True, text=True,
                         timeout=600, cwd=REPO_ROOT)
    assert run.returncode == 0, "run tools/ci/format; these files differ:\n" + run.stdout + run.stderr
