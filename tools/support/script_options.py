"""--help and --version for the repository's Python scripts (tools/*.py), as the C++ tools
(support/args.hpp) and the shell tools (support/version.sh) have them: --help prints the script's
docstring and exits 0, --version prints the project's version (meson.build's)."""
import os
import re
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_version():
    with open(os.path.join(_ROOT, "meson.build"), encoding="utf-8") as f:
        found = re.search(r"^\s*version: '([^']+)'", f.read(), re.M)
    return found.group(1) if found else "unknown"


def handle(argv, doc):
    """Exits after printing the help or the version when argv[1] asks for one."""
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print((doc or "").strip())
        sys.exit(0)
    if len(argv) > 1 and argv[1] == "--version":
        print(f"{os.path.basename(argv[0])} (MSCCL++) {project_version()}")
        sys.exit(0)
