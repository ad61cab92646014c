"""The program being built: the one global the DSL needs (channels and chunks know no program)."""
from ..errors import DSLError, user_location

_active = None


def set_program(program):
    global _active
    _active = program


def get_program():
    """The active program, for a current-DSL call (which decides an undecided MSCCLPPProgram)."""
    program = _active
    if program is None:
        raise DSLError(
            "no active CollectiveProgram: create channels, ranks and buffers inside "
            "`with CollectiveProgram(...):`",
            user_location(),
        )
    if not program._current_model:
        program.claim_current()
    return program


def active_program():
    return _active


def reset_ids(what):
    """``MemoryChannel.reset()`` and the like. MSCCL++ numbers channels and semaphores with
    class-level counters, which every program's exit resets. Here the numbers live in the program
    (RankState), so each program starts from 0 by itself: outside a program reset() has nothing left
    to do; inside one it is refused, as resetting MSCCL++'s counters there gives an id twice."""
    if _active is not None:
        raise DSLError(
            f"{what}.reset() inside a program would number two {what}s alike; channel and semaphore ids "
            "start from 0 in every program without it",
            user_location(),
        )
