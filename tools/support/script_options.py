"""--help and --version for the repository's Python scripts, as the
C++ tools and the shell scripts have them. --help prints the script's
docstring and exits 0; --version prints the project's version."""
import os
import re
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_version():
    with open(os.path.join(_ROOT, "meson.build"), encoding="utf-8") as f:
        found = re.search(r"^\s*version: '([^']+)'", f.read(), re.M)
    return found.group(1) if found else "unknown"


def _print_and_exit(text):
    # A reader that closed the pipe early is not an error: no traceback.
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)


def handle(argv, doc):
    """Exits after printing the help or the version when argv[1] asks for one."""
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        _print_and_exit((doc or "").strip())
    if len(argv) > 1 and argv[1] == "--version":
        _print_and_exit(f"{os.path.basename(argv[0])} (MSCCL++) {project_version()}")
