"""Finding the C++ tools the CLI forwards to (mscclpp-emulate, mscclpp-plan)."""
import os
import shutil
import sys


def find_tool(name):
    """Path of the executable: on PATH, next to the installed prefix (<prefix>/bin), or in
    $MSCCLPP_BUILD_DIR/tools. Returns (path or None, [places looked])."""
    looked = []
    found = shutil.which(name)
    looked.append("PATH")
    if found:
        return found, looked
    prefix_bin = os.path.join(sys.prefix, "bin", name)
    looked.append(os.path.dirname(prefix_bin))
    if os.access(prefix_bin, os.X_OK):
        return prefix_bin, looked
    # Installed by meson: the package sits in <prefix>/lib/pythonX.Y/site-packages/mscclpp.
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prefix = os.path.normpath(os.path.join(package, "..", "..", "..", ".."))
    candidate = os.path.join(prefix, "bin", name)
    looked.append(os.path.dirname(candidate))
    if os.access(candidate, os.X_OK):
        return candidate, looked
    build = os.environ.get("MSCCLPP_BUILD_DIR")
    if build:
        candidate = os.path.join(build, "tools", name)
        looked.append(os.path.dirname(candidate))
        if os.access(candidate, os.X_OK):
            return candidate, looked
    else:
        looked.append("$MSCCLPP_BUILD_DIR/tools (MSCCLPP_BUILD_DIR is not set)")
    return None, looked
