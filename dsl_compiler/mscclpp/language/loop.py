"""Pipeline loops: ops written inside ``with LoopIterationContext(unit, num_chunks):`` become, per
(rank, threadblock), one ``pipeline`` op whose body the executor runs over the message in pieces of
``unit`` bytes. ``Loop.iteration(unit=..., num_chunks=...)`` is the spelling of MSCCL++'s DSL guide.
"""
from typing import Dict  # noqa: F401 (re-exported: MSCCL++'s star import gives it)

from .errors import DSLError, user_location
from .internal.state import get_program

__all__ = ["LoopIterationContext", "Loop", "get_program", "Dict"]


class LoopIterationContext:
    def __init__(self, unit, num_chunks):
        if not isinstance(unit, int) or unit <= 0:
            raise DSLError(f"loop unit must be a positive number of bytes, got {unit!r}", user_location())
        if not isinstance(num_chunks, int) or num_chunks <= 0:
            raise DSLError(f"loop num_chunks must be a positive integer, got {num_chunks!r}", user_location())
        self.unit = unit
        self.num_chunks = num_chunks
        self._program = None
        self._pipelines = {}  # (rank, tb) -> its Pipeline op in this loop

    def __enter__(self):
        self._program = get_program()
        self._pipelines = {}
        self._program.set_loop_context(self)
        return self

    def add_operation(self, rank, tb, operation):
        """Puts a compiler op (``mscclpp.language.internal.ops``) into this loop's body on (rank, tb),
        as every DSL call made inside the ``with`` block does; MSCCL++'s programs route their ops
        through this method. The op's channel and buffer ids are the caller's to get right."""
        from .internal.ops import Op, Pipeline

        program = self._program
        if program is None or program.loop_context is not self:
            raise DSLError("add_operation: this loop is not the active one; call it inside its `with` block", user_location())
        if not isinstance(operation, Op) or isinstance(operation, Pipeline):
            raise DSLError(f"add_operation takes one compiler op (not a pipeline), got {operation!r}", user_location())
        if type(rank) is not int or not 0 <= rank < program.num_ranks:
            raise DSLError(f"add_operation: rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())
        if type(tb) is not int or tb < 0:
            raise DSLError(f"add_operation: tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        program.add_op(rank, tb, operation)

    def _append(self, program, rank, tb, operation):
        """The body of add_operation without its checks (CollectiveProgram.add_op's loop case)."""
        key = (rank, tb)
        pipeline = self._pipelines.get(key)
        if pipeline is None:
            from .internal.ops import Pipeline

            pipeline = self._pipelines[key] = Pipeline(self.unit, self.num_chunks)
            program.ranks[rank].tb(tb).ops.append(pipeline)
        pipeline.ops.append(operation)

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
    """An explicit ``iter_context=`` (the DSL guide's spelling) must be the loop the call is in."""
    if iter_context is not None and iter_context is not program.loop_context:
        raise DSLError(
            "iter_context= names a loop this call is not inside: write the call in its `with` block",
            user_location(),
        )
