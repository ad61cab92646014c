"""JSON(): compile the active program and return its plan as JSON text (indented by 2, as MSCCL++'s;
``JSON(indent=None)`` for the compact text)."""
from .errors import DSLError, user_location
from .internal.state import active_program, get_program

__all__ = ["JSON", "get_program"]


def JSON(indent=2):  # noqa: N802 (MSCCL++'s name)
    program = active_program()
    if program is None:
        raise DSLError("JSON() needs an active program: call it inside `with CollectiveProgram(...):`", user_location())
    return program.to_json(indent=indent)
