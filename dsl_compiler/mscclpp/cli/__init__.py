"""python3 -m mscclpp: compile DSL programs, install, list and show plans, reach the C++ tools.

USAGE below is both the module's reference and the text --help prints.
"""
import argparse
import os
import subprocess
import sys

from .. import _paths
from .._version import __version__
from ..language.errors import DSLError

USAGE = """python3 -m mscclpp: compile DSL programs, install and list the default plans, inspect plans, and
reach the C++ plan tools.

  python3 -m mscclpp compile PROGRAM.py [program args...] -o OUT.json [--indent N]
                             [--function NAME] [--program NAME] [--no-verify]
                             [--source-locations | --no-source-locations]
      Runs PROGRAM.py and writes the plan of the CollectiveProgram it builds (compact JSON unless
      --indent). Arguments after PROGRAM.py belong to the program, except -o/--output, --indent,
      --function, --program, --no-verify, --source-locations and --no-source-locations, which are
      ours wherever they appear; after a literal "--" every argument goes to the program. Without --function the file
      runs as a script (__main__, with sys.argv = [PROGRAM.py, program args...]); with --function
      NAME it is imported and NAME is called with the program args (--key value / key=value as
      keywords, the rest positional). "-o -" writes to standard output. The plan verifier proves
      the plan first (docs/plan-verifier.md); a plan it does not prove is not written (exit 1)
      unless --no-verify (or MSCCLPP_DSL_VERIFY=0). Its findings name the DSL line of each op;
      --source-locations also writes those lines into the plan ("source" keys), and
      --no-source-locations records none (a faster compile of a very large program).
  python3 -m mscclpp --install [--dir DIR]   (or: install)
      Writes the default plans into DIR, by default where the runtime reads them: the first
      $MSCCLPP_PLAN_DIR entry, else the plan cache ($MSCCLPP_CACHE_DIR/plans, else
      ~/.cache/mscclpp/plans). A pip-installed package already holds them.
  python3 -m mscclpp list [--dir DIR ...]
      The plans in the plan directories (those of --dir, else the runtime's) and what each serves.
      Unreadable files and missing folders are reported on standard error; the exit status is 1
      when a file is unreadable or a named folder is missing.
  python3 -m mscclpp show PLAN.json
      A per-rank, per-threadblock summary of a plan.
  python3 -m mscclpp show PLAN.json|PROGRAM.py [program args...] -o FILE.svg|FILE.html [--ranks 0,2-3]
                          [--function NAME] [--program NAME] [--no-verify]
      The picture of a plan (mscclpp-plan show draws it): a DSL program is compiled first, with
      source locations, then drawn.
  python3 -m mscclpp explain ARGS...   ->  mscclpp-plan explain ARGS...
      Every plan that could serve a call, and why it runs, loses or cannot serve it:
      python3 -m mscclpp explain --collective allreduce --ranks 4 --bytes 1M --inplace
  python3 -m mscclpp verify ARGS...    ->  mscclpp-plan verify ARGS...
  python3 -m mscclpp validate|select ARGS...  ->  mscclpp-plan validate|select ARGS...
  python3 -m mscclpp info PLAN.json    ->  mscclpp-plan info PLAN.json
  python3 -m mscclpp info [--params]   ->  mscclpp-info [--params] (this build, the environment variables)
  python3 -m mscclpp emulate ARGS...   ->  mscclpp-emulate ARGS...
  python3 -m mscclpp perf ARGS...      ->  mscclpp-perf ARGS... (nccl-tests' sweep through the NCCL API)
  python3 -m mscclpp perf --versus LIBNCCL ARGS...
      mscclpp-perf twice, through our libnccl.so.2 and with LIBNCCL (the real NCCL's libnccl.so.2)
      preloaded instead, printed side by side: median times, bus bandwidths, their ratio.
  python3 -m mscclpp plan ARGS...      ->  mscclpp-plan ARGS...
      A pip install also puts mscclpp-plan, mscclpp-emulate, mscclpp-info and mscclpp-perf on PATH.
  python3 -m mscclpp paths
      Where this installation's runtime, shim, tools and plan directories are.
  python3 -m mscclpp --shim-path
      The NCCL shim's path, for LD_PRELOAD=$(python3 -m mscclpp --shim-path).
  python3 -m mscclpp --nccl-dir
      The folder holding the shim as libnccl.so.2, for programs that dlopen libnccl.so.2 themselves:
      LD_LIBRARY_PATH=$(python3 -m mscclpp --nccl-dir):$LD_LIBRARY_PATH.
  python3 -m mscclpp --version | --help
"""

_OURS_WITH_VALUE = {"-o": "output", "--output": "output", "--indent": "indent", "--function": "function", "--program": "program"}
_OURS_FLAGS = {"--no-verify": "no_verify", "--source-locations": "source_locations",
               "--no-source-locations": "no_source_locations"}


def _split_compile_args(argv, with_value=_OURS_WITH_VALUE, flags=_OURS_FLAGS, command="compile"):
    """(our options, program file, program args) from the words after "compile"."""
    options, program, rest = {}, None, []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            rest.extend(argv[i + 1 :])
            break
        key, eq, value = word.partition("=")
        if word in flags:
            options[flags[word]] = True
        elif key in with_value:
            if not eq:
                if i + 1 >= len(argv):
                    raise SystemExit(f"{command}: {key} needs a value")
                value = argv[i + 1]
                i += 1
            options[with_value[key]] = value
        elif program is None and not word.startswith("-"):
            program = word
        elif program is None:
            raise SystemExit(f"{command}: unknown option {word} before PROGRAM.py")
        else:
            rest.append(word)
        i += 1
    if program is None:
        raise SystemExit(f"{command}: missing PROGRAM.py")
    return options, program, rest


def cmd_compile(argv):
    from .. import plan_verify
    from ..language.internal import locations
    from .program_runner import ProgramFileError, run_program

    if argv and argv[0] in ("-h", "--help"):
        usage = USAGE[USAGE.index("  python3 -m mscclpp compile"):USAGE.index("  python3 -m mscclpp --install")]
        print(usage.rstrip())
        return 0

    options, path, rest = _split_compile_args(argv)
    output = options.get("output")
    if output is None:
        raise SystemExit("compile: missing -o OUT.json (use -o - for standard output)")
    indent = options.get("indent")
    try:
        indent = int(indent) if indent is not None else None
    except ValueError:
        raise SystemExit(f"compile: --indent takes a number, got {indent!r}") from None
    if options.get("source_locations") and options.get("no_source_locations"):
        raise SystemExit("compile: --source-locations and --no-source-locations exclude each other")
    keep_locations = bool(options.get("source_locations")) or locations.enabled()  # or MSCCLPP_DSL_SOURCE_LOCATIONS
    try:
        # Locations on by default: the verifier's findings then name the DSL line of each op.
        with locations.capture(not options.get("no_source_locations")):
            program = run_program(path, rest, options.get("function"), options.get("program"))
        located = program.to_json(indent=None)
        text = program.to_json(indent=indent) if keep_locations else program.to_json_without_locations(indent=indent)
    except (DSLError, ProgramFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        plan_verify.check_plan_text(located, f"{program.name}.json", False if options.get("no_verify") else None)
    except plan_verify.NotProven as error:
        print(f"error: the plan verifier does not prove {program.name!r}; nothing written (--no-verify writes it "
              f"anyway):\n{error}", file=sys.stderr)
        return 1
    if output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"wrote {output} ({program.name}: {program.collective.name}, {program.num_ranks} ranks)", file=sys.stderr)
    return 0


def cmd_install(argv):
    from ..dsl.presets import write_all

    parser = argparse.ArgumentParser(prog="python3 -m mscclpp --install")
    parser.add_argument("--dir", default=None, help="where to write (default: where the runtime reads them)")
    args = parser.parse_args(argv)
    directory = args.dir or _paths.default_install_dir()
    if directory is None:
        print("error: no plan cache folder (this user has no home directory): pass --dir DIR or set "
              "MSCCLPP_CACHE_DIR", file=sys.stderr)
        return 1
    paths = write_all(directory)
    print(f"installed {len(paths)} default plans into {directory}")
    if os.path.abspath(directory) not in [os.path.abspath(d) for d in _paths.plan_directories()]:
        print(f"note: the runtime does not read {directory}: set MSCCLPP_PLAN_DIR={directory}", file=sys.stderr)
    return 0


def cmd_list(argv):
    from .plan_files import list_plans

    parser = argparse.ArgumentParser(prog="python3 -m mscclpp list")
    parser.add_argument("--dir", action="append", default=None, help="plan directory (repeatable)")
    args = parser.parse_args(argv)
    if args.dir:
        return list_plans(args.dir, sys.stdout, sys.stderr, named=args.dir)
    named = _paths.split_directories(os.environ.get("MSCCLPP_PLAN_DIR"))  # as the runtime: missing is an error
    return list_plans(_paths.plan_directories(), sys.stdout, sys.stderr, named=named,
                      optional=[_paths.user_plan_cache()])


def cmd_show(argv):
    from .plan_files import show

    if not any(word in ("-o", "--output") or word.startswith(("-o=", "--output=")) for word in argv):
        parser = argparse.ArgumentParser(prog="python3 -m mscclpp show")
        parser.add_argument("plan")
        args = parser.parse_args(argv)
        try:
            return show(args.plan, sys.stdout)
        except BrokenPipeError:
            raise
        except (OSError, ValueError, KeyError) as error:
            print(f"error: {args.plan}: {error}", file=sys.stderr)
            return 1
    from .picture import draw

    with_value = dict(_OURS_WITH_VALUE, **{"--ranks": "ranks"})
    with_value.pop("--indent")
    options, path, rest = _split_compile_args(argv, with_value, {"--no-verify": "no_verify"}, "show")
    return draw(path, rest, options)


def cmd_info(argv):
    """mscclpp-plan info for a plan file; mscclpp-info (the build, --params) otherwise."""
    if argv and not argv[0].startswith("-"):
        return _forward("mscclpp-plan", ["info"], argv)
    return _forward("mscclpp-info", [], argv)


def cmd_perf(argv):
    """mscclpp-perf, or with --versus LIBNCCL both ways side by side."""
    if not argv or argv[0] not in ("--versus",) and not argv[0].startswith("--versus="):
        return _forward("mscclpp-perf", [], argv)
    from .perf_compare import compare
    from .tools import find_tool

    if argv[0] == "--versus":
        if len(argv) < 2:
            raise SystemExit("perf: --versus needs the path of a libnccl.so.2")
        versus, rest = argv[1], argv[2:]
    else:
        versus, rest = argv[0].split("=", 1)[1], argv[1:]
    if not os.path.isfile(versus):
        raise SystemExit(f"perf: --versus {versus}: no such file")
    path, looked = find_tool("mscclpp-perf")
    if path is None:
        print(f"error: mscclpp-perf is not built or not found (looked in: {'; '.join(looked)})", file=sys.stderr)
        return 127
    return compare(path, versus, rest)


def _forward(tool, prefix_args, argv):
    from .tools import find_tool

    path, looked = find_tool(tool)
    if path is None:
        print(
            f"error: {tool} is not built or not found (looked in: {'; '.join(looked)}). Build the C++ tools "
            f"(meson setup build && ninja -C build) and put them on PATH or set MSCCLPP_BUILD_DIR=build.",
            file=sys.stderr,
        )
        return 127
    return subprocess.call([path, *prefix_args, *argv])


def _print_path(what, path, hint):
    if path is None or not os.path.exists(path):
        where = f" (looked at {path})" if path else ""
        print(f"error: no {what} found{where}: {hint}", file=sys.stderr)
        return 1
    print(path)
    return 0


_NOT_INSTALLED = ("this package was installed without its runtime (pip install dsl_compiler/, or a source "
                  "checkout): install the repository (pip install <repository>) or set MSCCLPP_BUILD_DIR to a build")


def cmd_shim_path(argv):
    return _print_path("NCCL shim", _paths.shim_path(), _NOT_INSTALLED)


def cmd_nccl_dir(argv):
    return _print_path("replace-mode folder (libnccl.so.2)", _paths.nccl_replace_dir(), _NOT_INSTALLED)


def cmd_version(argv):
    print(f"mscclpp {__version__}")
    return 0


def cmd_paths(argv):
    from .. import _runtime_lib

    try:
        runtime = _paths.library_file(_runtime_lib.load()) or "(loaded, file unknown)"
    except _runtime_lib.RuntimeNotLoaded as error:
        runtime = f"(not found: {error})"
    rows = [("package", _paths.PACKAGE_DIR), ("runtime", runtime), ("shim (LD_PRELOAD)", _paths.shim_path()),
            ("replace mode (libnccl.so.2)", _paths.nccl_replace_dir()), ("tools", _paths.tools_dir()),
            ("plan cache", _paths.user_plan_cache())]
    rows += [("plan directory", d) for d in _paths.plan_directories()]
    for what, path in rows:
        print(f"{what + ':':<29} {path if path is not None else '(none)'}")
    return 0


_COMMANDS = {
    "compile": cmd_compile,
    "install": cmd_install,
    "--install": cmd_install,
    "list": cmd_list,
    "show": cmd_show,
    "emulate": lambda argv: _forward("mscclpp-emulate", [], argv),
    "verify": lambda argv: _forward("mscclpp-plan", ["verify"], argv),
    "validate": lambda argv: _forward("mscclpp-plan", ["validate"], argv),
    "select": lambda argv: _forward("mscclpp-plan", ["select"], argv),
    "explain": lambda argv: _forward("mscclpp-plan", ["explain"], argv),
    "plan": lambda argv: _forward("mscclpp-plan", [], argv),
    "info": cmd_info,
    "perf": lambda argv: cmd_perf(argv),
    "paths": cmd_paths,
    "--shim-path": cmd_shim_path,
    "--nccl-dir": cmd_nccl_dir,
    "--version": cmd_version,
    "version": cmd_version,
}


def _run(argv):
    if not argv:
        print(USAGE.strip(), file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(USAGE.strip())
        return 0
    command = _COMMANDS.get(argv[0])
    if command is None:
        print(f"unknown command {argv[0]!r}\n\n{USAGE.strip()}", file=sys.stderr)
        return 2
    return command(argv[1:])


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return status
    except BrokenPipeError:  # e.g. `list | head`: the reader has all it wanted
        # Python flushes stdout again at exit: /dev/null lets that succeed.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
