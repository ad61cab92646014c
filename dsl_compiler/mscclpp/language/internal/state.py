"""The program being built: the one global the DSL needs (channels and chunks know no program)."""
from ..errors import DSLError, user_location

_active = None


def set_program(program):
    global _active
    _active = program


def get_program():
    if _active is None:
        raise DSLError(
            "no active CollectiveProgram: create channels, ranks and buffers inside "
            "`with CollectiveProgram(...):`",
            user_location(),
        )
    return _active


def active_program():
    return _active
