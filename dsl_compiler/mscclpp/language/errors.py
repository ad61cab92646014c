"""The one exception of the DSL (and its warning), and how they find the user's line.

Every mistake in a program is reported as ``DSLError("file:line: what is wrong")`` where file:line
is the user's call into the DSL, not a line of this package: the first frame on the stack whose code
lives outside ``mscclpp/language``.
"""
import os
import sys

_LANGUAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class DSLError(Exception):
    """A mistake in a DSL program. The message starts with ``file:line:`` of the offending call."""

    def __init__(self, message, location=None):
        self.location = location
        self.detail = message
        super().__init__(f"{location[0]}:{location[1]}: {message}" if location else message)


def user_location(skip=1):
    """(filename, line) of the innermost frame outside this package's ``language`` folder."""
    frame = sys._getframe(skip)
    while frame is not None and frame.f_code.co_filename.startswith(_LANGUAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return ("<unknown>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


def user_site(skip=1):
    """(code object, instruction offset) of the same frame as user_location: cheaper to take than a
    line number, which internal/pairing.source_location computes only when an error needs it."""
    frame = sys._getframe(skip)
    while frame is not None and frame.f_code.co_filename.startswith(_LANGUAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    return (frame.f_code, frame.f_lasti)


class DSLWarning(UserWarning):
    """A program the compiler accepts but whose plan probably does not do what was meant."""


def warn_at(message, location):
    """Issues a DSLWarning attributed to location (filename, line), the user's line."""
    import warnings

    filename, line = location if location else ("<unknown>", 0)
    warnings.warn_explicit(message, DSLWarning, filename, line)


def package_caller_location():
    """(filename, line) of the innermost frame outside the whole mscclpp package: for errors of the
    integration helpers (jit), which the user calls directly."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return ("<unknown>", 0) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def fail(message):
    """Raise DSLError located at the user's current call."""
    raise DSLError(message, user_location())
