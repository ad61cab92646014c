"""Finding the C++ tools the CLI forwards to (mscclpp-emulate, mscclpp-plan)."""
import os
import shutil

from .. import _paths


def find_tool(name):
    """Path of the executable: this installation's own tools (a pip- or meson-installed package),
    then PATH, then $MSCCLPP_BUILD_DIR/tools. Returns (path or None, [places looked])."""
    places = []
    if _paths.installed() is not None:
        places.append(_paths.tools_dir())
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
