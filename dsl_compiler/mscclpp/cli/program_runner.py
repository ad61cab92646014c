"""Running a user's DSL program file and getting the CollectiveProgram it builds.

Script style: the file runs as ``__main__`` with ``sys.argv = [file, *args]``, as in ``python3
prog.py --num_gpus 8``; the plan JSON it prints is dropped and its other output goes to stderr.
Function style (``function=NAME``): the file is imported, so its ``__main__`` block does not run,
and NAME is called with the args (``parse_call_args``). ``program_name`` picks one of several
programs; docs/dsl-compiler.md, "Command line", says the rest.
"""
import ast
import contextlib
import importlib.util
import io
import json
import os
import runpy
import sys

from ..language.errors import DSLError
from ..language.program import CollectiveProgram, observe_programs


class ProgramFileError(Exception):
    """The file did not yield exactly one program (message says why)."""


def _literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_call_args(args):
    """(positional, keywords) of a function-style call from the program's command-line words.

    ``--key value``, ``--key=value`` and ``key=value`` are keywords; a ``--flag`` with no value is
    True. Values are Python literals when they parse, else strings; other words are positional.
    """
    positional, keywords = [], {}
    i = 0
    while i < len(args):
        token = args[i]
        if token.startswith("--") and len(token) > 2:
            key, eq, value = token[2:].partition("=")
            key = key.replace("-", "_")
            if eq:
                keywords[key] = _literal(value)
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                keywords[key] = _literal(args[i + 1])
                i += 1
            else:
                keywords[key] = True
        elif "=" in token and token.split("=", 1)[0].isidentifier():
            key, value = token.split("=", 1)
            keywords[key] = _literal(value)
        else:
            positional.append(_literal(token))
        i += 1
    return positional, keywords


@contextlib.contextmanager
def _argv(argv):
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def _pick(programs, path, program_name):
    if program_name is not None:
        chosen = [p for p in programs if p.name == program_name]
        if len(chosen) != 1:
            names = ", ".join(repr(p.name) for p in programs) or "none"
            raise ProgramFileError(f"{path}: no single program named {program_name!r} (built: {names})")
        return chosen[0]
    if not programs:
        raise ProgramFileError(
            f"{path} built no CollectiveProgram; if it only defines functions, name one with --function"
        )
    if len(programs) > 1:
        names = ", ".join(repr(p.name) for p in programs)
        raise ProgramFileError(f"{path} built {len(programs)} programs ({names}); choose one with --program NAME")
    return programs[0]


def run_program(path, args=(), function=None, program_name=None):
    """The CollectiveProgram that the file at path builds (see the module doc for the styles)."""
    if not os.path.isfile(path):
        raise ProgramFileError(f"{path}: no such file")
    built = []
    stop_observing = observe_programs(built.append)
    captured = io.StringIO()
    directory = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, directory)
    try:
        if function is None:
            with _argv([path, *args]), contextlib.redirect_stdout(captured):
                try:
                    runpy.run_path(path, run_name="__main__")
                except SystemExit as exit_:
                    if exit_.code not in (None, 0):
                        raise ProgramFileError(f"{path} exited: {exit_.code}") from None
            result = None
        else:
            spec = importlib.util.spec_from_file_location("__mscclpp_program__", path)
            module = importlib.util.module_from_spec(spec)
            with _argv([path]), contextlib.redirect_stdout(captured):
                spec.loader.exec_module(module)
                target = getattr(module, function, None)
                if not callable(target):
                    raise ProgramFileError(f"{path} has no function {function!r}")
                positional, keywords = parse_call_args(list(args))
                result = target(*positional, **keywords)
    finally:
        stop_observing()
        sys.path.remove(directory)
        _forward_output(captured.getvalue())
    if isinstance(result, CollectiveProgram):
        if program_name is None or result.name == program_name:
            return result
    return _pick(built, path, program_name)


def _forward_output(text):
    """What the program printed, minus the plan JSON it printed itself (compact or indented, as
    JSON() and MSCCLPPLang's Json() print it), goes to stderr."""
    decoder = json.JSONDecoder()
    position = 0
    kept = []
    while position < len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end + 1
        if text.startswith("{", position):
            try:
                value, stop = decoder.raw_decode(text, position)
            except ValueError:
                value = None
            if isinstance(value, dict) and "gpus" in value:
                position = stop + 1 if text.startswith("\n", stop) else stop
                continue
        kept.append(text[position:end])
        position = end
    for line in "".join(kept).splitlines():
        print(line, file=sys.stderr)


__all__ = ["run_program", "parse_call_args", "ProgramFileError", "DSLError"]
