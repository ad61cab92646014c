"""Verifying compiled plans with the C++ plan verifier (docs/plan-verifier.md).

The verifier lives in the runtime library (``mscclppPlanVerify`` of plan_api.h). It is reached
through ctypes, found the way the plan registry is (``mscclpp._runtime_lib``: symbols already in
the process, then ``$MSCCLPP_LIBRARY``); without the library, through the ``mscclpp-plan verify``
tool (``mscclpp.cli.tools.find_tool``). When neither is there, the plan is not verified and the
compiler says so once per process, with the reason: never silently.

``MSCCLPP_DSL_VERIFY=0`` turns verification off for the compiler (the ``verify=`` arguments and the
CLI's ``--no-verify`` do the same for one compilation).
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Optional

from ._env import env_bool

__all__ = ["Verdict", "verify_plan_text", "verification_enabled", "NotProven"]

_REPORT_LENGTH = 1 << 16


class NotProven(Exception):
    """A compiled plan the verifier did not prove; the message is its report."""


@dataclass
class Verdict:
    proven: Optional[bool]  # None: not verified (no verifier available)
    report: str             # the verifier's report, or why it could not run
    via: str                # "library", "tool" or "none"


_warned = False


def verification_enabled(flag=None):
    """The effective setting: an explicit True/False wins, else MSCCLPP_DSL_VERIFY (default on)."""
    if flag is not None:
        return bool(flag)
    return env_bool("MSCCLPP_DSL_VERIFY", True)


def _library():
    """The runtime library with mscclppPlanVerify declared, or (None, why)."""
    from . import _runtime_lib

    try:
        lib = _runtime_lib.load()
    except _runtime_lib.RuntimeNotLoaded as error:
        return None, str(error)
    if not hasattr(lib, "mscclppPlanVerify"):
        return None, "the runtime library found has no mscclppPlanVerify (an older build)"
    fn = lib.mscclppPlanVerify
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t,
                   ctypes.c_char_p, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn, ""


def _by_library(fn, text, name):
    data = text.encode()
    report = ctypes.create_string_buffer(_REPORT_LENGTH)
    error = ctypes.create_string_buffer(4096)
    status = fn(name.encode(), data, len(data), report, len(report), error, len(error))
    if status < 0:
        raise NotProven(f"{name}: the plan verifier could not load the plan: {error.value.decode(errors='replace')}")
    return Verdict(status == 1, report.value.decode(errors="replace"), "library")


def _by_tool(path_tool, text, name):
    with tempfile.TemporaryDirectory(prefix="mscclpp-verify-") as directory:
        path = os.path.join(directory, os.path.basename(name) if name.endswith(".json") else "plan.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        run = subprocess.run([path_tool, "verify", path], capture_output=True, text=True, check=False)
    if run.returncode not in (0, 1) or (run.returncode == 1 and not run.stdout):
        raise NotProven(f"{name}: mscclpp-plan verify failed (exit {run.returncode}): {run.stderr.strip()}")
    return Verdict(run.returncode == 0, run.stdout.replace(path, name), "tool")


def verify_plan_text(text, name="<plan>"):
    """Verifies plan JSON text. Returns a Verdict; proven is None when no verifier could be found
    (then a RuntimeWarning says so, once per process)."""
    global _warned
    fn, why_not_library = _library()
    if fn is not None:
        return _by_library(fn, text, name)
    from .cli.tools import find_tool

    tool, looked = find_tool("mscclpp-plan")
    if tool is not None:
        return _by_tool(tool, text, name)
    reason = (f"plans are not verified: {why_not_library}; and mscclpp-plan is not found "
              f"(looked in: {'; '.join(looked)}). Set MSCCLPP_LIBRARY or put mscclpp-plan on PATH "
              f"(MSCCLPP_DSL_VERIFY=0 turns verification off)")
    if not _warned:
        _warned = True
        warnings.warn(reason, RuntimeWarning, stacklevel=3)
        print(f"mscclpp: warning: {reason}", file=sys.stderr)
    return Verdict(None, reason, "none")


def check_plan_text(text, name, flag=None):
    """What the compiler does after emitting a plan: verify it unless turned off; raise NotProven
    with the report when the verifier finds problems. Returns the Verdict (None when off)."""
    if not verification_enabled(flag):
        return None
    verdict = verify_plan_text(text, name)
    if verdict.proven is False:
        raise NotProven(verdict.report.rstrip())
    return verdict
