"""Finding the C++ tools the CLI forwards to (mscclpp-plan, mscclpp-emulate, mscclpp-info,
mscclpp-perf), and the console scripts of the same names that a pip install puts on PATH."""
import os
import shutil
import sys

from .. import _paths


def find_tool(name, use_path=True):
    """Path of the executable: this installation's own tools (a pip- or meson-installed package),
    then PATH (unless use_path is false), then $MSCCLPP_BUILD_DIR/tools. Returns (path or None,
    [places looked])."""
    places = []
    if _paths.installed() is not None:
        places.append(_paths.tools_dir())
    if use_path:
        places.append("PATH")
    if _paths.build_dir():
        places.append(os.path.join(_paths.build_dir(), "tools"))
    for place in places:
        found = shutil.which(name) if place == "PATH" else os.path.join(place, name)
        if found and os.access(found, os.X_OK):
            return found, places
    if not _paths.build_dir():
        places.append("$MSCCLPP_BUILD_DIR/tools (MSCCLPP_BUILD_DIR is not set)")
    return None, places


def exec_tool(name, argv=None):
    """Replaces this process with the tool, given argv (default: this process's arguments). The
    console scripts do this; PATH is not searched, since the console script itself lies there."""
    path, looked = find_tool(name, use_path=False)
    if path is None:
        print(f"{name}: the tool is not installed with this package (looked in: {'; '.join(looked)})",
              file=sys.stderr)
        return 127
    args = sys.argv[1:] if argv is None else argv
    os.execv(path, [path, *args])
    return 127  # not reached


def plan_main():
    return exec_tool("mscclpp-plan")


def emulate_main():
    return exec_tool("mscclpp-emulate")


def info_main():
    return exec_tool("mscclpp-info")


def perf_main():
    return exec_tool("mscclpp-perf")
