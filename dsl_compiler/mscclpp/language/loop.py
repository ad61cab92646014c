"""Pipeline loops: ops written inside ``with LoopIterationContext(unit, num_chunks):`` become, per
(rank, threadblock), one ``pipeline`` op whose body the executor runs over the message in pieces of
``unit`` bytes. ``Loop.iteration(unit=..., num_chunks=...)`` is the seed-001 spelling.
"""
from .errors import DSLError, user_location
from .internal.state import get_program

__all__ = ["LoopIterationContext", "Loop"]


class LoopIterationContext:
    def __init__(self, unit, num_chunks):
        if not isinstance(unit, int) or unit <= 0:
            raise DSLError(f"loop unit must be a positive number of bytes, got {unit!r}", user_location())
        if not isinstance(num_chunks, int) or num_chunks <= 0:
            raise DSLError(f"loop num_chunks must be a positive integer, got {num_chunks!r}", user_location())
        self.unit = unit
        self.num_chunks = num_chunks
        self._program = None

    def __enter__(self):
        self._program = get_program()
        self._program.set_loop_context(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._program is not None:
            self._program.set_loop_context(None)
        return False


class Loop:
    """``with Loop.iteration(unit=2**20, num_chunks=1) as it:`` — same as LoopIterationContext."""

    @staticmethod
    def iteration(unit, num_chunks):
        return LoopIterationContext(unit, num_chunks)


def check_iter_context(program, iter_context):
    """The explicit ``iter_context=`` of seed-style calls must be the loop the call is in."""
    if iter_context is not None and iter_context is not program.loop_context:
        raise DSLError(
            "iter_context= names a loop this call is not inside: write the call in its `with` block",
            user_location(),
        )
