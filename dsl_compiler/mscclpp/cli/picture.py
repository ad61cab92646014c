"""``python3 -m mscclpp show ... -o FILE.svg|.html``: a plan's picture, drawn by ``mscclpp-plan show``.

A DSL program is compiled first, with source locations, so the picture's details and the
verifier's findings name the program's lines."""
import os
import subprocess
import sys
import tempfile

from ..language.errors import DSLError
from ..language.internal import locations
from .tools import find_tool


def draw(path, program_args, options):
    """Draws the plan file or DSL program at path into options["output"]; returns the exit status."""
    from .program_runner import ProgramFileError, run_program

    output = options.get("output")
    tool, looked = find_tool("mscclpp-plan")
    if tool is None:
        print(f"error: mscclpp-plan (the renderer) is not built or not found (looked in: {'; '.join(looked)}). "
              "Build the C++ tools and put them on PATH or set MSCCLPP_BUILD_DIR=build.", file=sys.stderr)
        return 127
    extra = []
    if options.get("ranks"):
        extra += ["--ranks", options["ranks"]]
    if options.get("no_verify"):
        extra.append("--no-verify")
    if path.endswith(".json") and not program_args and "function" not in options:
        return subprocess.call([tool, "show", path, "-o", output, *extra])
    try:
        with locations.capture():
            program = run_program(path, program_args, options.get("function"), options.get("program"))
        text = program.to_json()
    except (DSLError, ProgramFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mscclpp-show-") as directory:
        plan_path = os.path.join(directory, f"{program.name}.json")
        with open(plan_path, "w", encoding="utf-8") as f:
            f.write(text)
        return subprocess.call([tool, "show", plan_path, "-o", output, *extra])
