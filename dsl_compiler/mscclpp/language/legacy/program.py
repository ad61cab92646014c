"""MSCCLPPProgram: the program of MSCCLPPLang and of early current-DSL programs.

It is a CollectiveProgram whose model the program's first DSL call decides. ``chunk(...)`` or
``rank(...)`` make it a MSCCLPPLang program: legacy collective sizes, replication ``duplicated``
unless given, ref.py's operations lowered at compile time. ``Rank``, channels, ``Buffer`` and the
other current-DSL calls make it an ordinary CollectiveProgram, the class's old name. Mixing the
two in one program is an error at the second model's first call.

``Json()`` prints the plan, indented; ``Check()`` runs it symbolically and says whether every
rank ends with the collective's result.
"""
import sys

from ..errors import DSLError, user_location, warn_at
from ..internal import state as _state
from ..program import CollectiveProgram
from ..types import BufferType, ReplicationPolicy
from .layout import legacy_location, legacy_sizes
from .lower import lower
from .ref import RankRef, Ref

__all__ = ["MSCCLPPProgram", "chunk", "rank", "Json", "Check"]

_SCRATCH = BufferType.scratch


class MSCCLPPProgram(CollectiveProgram):
    """See the module doc. The positional order is MSCCLPPLang's; the current DSL's other settings
    are keywords."""

    def __init__(
        self,
        name,
        collective,
        num_ranks,
        instances=1,
        protocol="Simple",
        instr_fusion=True,
        replication_policy=None,
        num_threads_per_block=1024,
        use_double_scratch_buffer=False,
        min_message_size=0,
        max_message_size=2**64 - 1,
        *,
        auto_sync=True,
        reuse_resources=False,
        buffer_alignment=16,
        tags=(),
    ):
        CollectiveProgram.__init__(
            self,
            name,
            collective,
            num_ranks,
            instances=instances,
            protocol=protocol,
            instr_fusion=instr_fusion,
            auto_sync=auto_sync,
            replication_policy=ReplicationPolicy.interleaved if replication_policy is None else replication_policy,
            reuse_resources=reuse_resources,
            num_threads_per_block=num_threads_per_block,
            use_double_scratch_buffer=use_double_scratch_buffer,
            buffer_alignment=buffer_alignment,
            min_message_size=min_message_size,
            max_message_size=max_message_size,
            tags=tags,
        )
        self._policy_given = replication_policy is not None
        self._current_model = False  # undecided: the first DSL call decides (see the module doc)
        self.model = None
        self._model_location = None
        self._front = None

    # ---- which model ----

    _CLASH = {
        "legacy": "uses MSCCLPPLang's chunk() API (since {}); Rank, channels and Buffer(...) are the current DSL",
        "current": "uses the current DSL (since {}); chunk() and rank() are MSCCLPPLang's API",
    }

    def _decide(self, model):
        """Makes this program a program of model ("current" or "legacy"), unless it is one of the other."""
        if self.model is not None and self.model != model:
            where = "{}:{}".format(*self._model_location)
            raise DSLError(
                f"this MSCCLPPProgram {self._CLASH[self.model].format(where)}: write one model per program "
                "(CollectiveProgram for the current one)",
                user_location(),
            )
        self.model = model
        self._model_location = user_location()

    def claim_current(self):
        self._decide("current")
        self._current_model = True

    def legacy_front_end(self):
        """The MSCCLPPLang state of this program, making it a MSCCLPPLang program on first use."""
        front = self._front
        if front is None:
            if _state.active_program() is not self:
                raise DSLError(f"MSCCLPPProgram {self.name!r} is not the active program", user_location())
            self._decide("legacy")
            self._use_legacy_layout()
            front = self._front = _FrontEnd(self)
        if self._json is not None:
            self.check_writable()
        return front

    def _use_legacy_layout(self):
        if not self._policy_given:
            self.replication_policy = ReplicationPolicy.duplicated  # MSCCLPPLang's default
        sizes = legacy_sizes(self.collective)
        if sizes is not None:
            self.buffers = self.collective.init_buffers(sizes)
            for state in self.ranks:
                state.input_chunks, state.output_chunks = sizes

    def _before_compile(self):
        if self._front is not None:
            front = self._front
            lower(self, front.ops, front.scratch_used)
            front.ops = []


class _FrontEnd:
    """What MSCCLPPLang calls need from the program: checks, the op records, scratch growth."""

    def __init__(self, program):
        self.program = program
        self.ops = []
        self.scratch_top = [0] * program.num_ranks  # chunks of each rank's scratch written so far
        self.scratch_used = [0] * program.num_ranks  # chunks of each rank's scratch referenced at all
        collective = program.collective
        per_node = getattr(collective, "num_ranks_per_node", -1)
        self.ranks_per_node = per_node if isinstance(per_node, int) and per_node > 0 else program.num_ranks

    def check_rank(self, rank, what):
        n = self.program.num_ranks
        if type(rank) is not int or not 0 <= rank < n:
            raise DSLError(f"{what}: rank {rank!r} is out of range: the program has {n} rank(s)", user_location())

    def buffer_type(self, buffer, what):
        try:
            return BufferType.parse(buffer)
        except ValueError as error:
            raise DSLError(f"{what}: {error}", user_location()) from None

    def ref(self, rank, buffer, index, size, what, moves_data=True):
        """A checked Ref (in place: moved to the buffer it aliases). A reference through which no data
        moves (a wait's) may lie past the buffer's end, as MSCCL++'s legacy compiler allowed: that is
        a DSLWarning, and it claims no scratch."""
        if type(index) is not int or type(size) is not int or index < 0 or size <= 0:
            raise DSLError(f"{what}: index must be >= 0 and size > 0, got index {index!r}, size {size!r}", user_location())
        buffer, index = legacy_location(self.program.collective, rank, buffer, index)
        if buffer is _SCRATCH:
            if moves_data:
                self.scratch_used[rank] = max(self.scratch_used[rank], index + size)
        else:
            have = self.program.ranks[rank].chunks(buffer.value)
            if index + size > have:
                message = (f"{what}: chunks [{index}:{index + size}] are out of bounds for rank {rank}'s "
                           f"{buffer.name} buffer, which has {have} chunk(s)")
                if moves_data:
                    raise DSLError(message, user_location())
                warn_at(message + f"; a {what} moves no data, so the plan ignores the chunk", user_location())
        return Ref(rank, buffer, index, size, self.program)

    def wrote(self, ref):
        """Scratch grows with what the program writes (``index=-1`` appends after it)."""
        if ref.buffer is _SCRATCH:
            top = self.scratch_top
            top[ref.rank] = max(top[ref.rank], ref.index + ref.size)

    def require_packets(self, what):
        protocol = self.program.protocol
        if protocol != "LL":
            raise DSLError(f'{what} moves LL packets, which need protocol="LL" (this program is "{protocol}")', user_location())


def _legacy_program(what):
    program = _state.active_program()
    if not isinstance(program, MSCCLPPProgram):
        where = "inside CollectiveProgram: slice rank buffers instead" if program is not None else "outside any program"
        raise DSLError(f"{what} is MSCCLPPLang's API and works inside `with MSCCLPPProgram(...):` (called {where})",
                       user_location())
    return program


def chunk(rank, buffer, index, size=1):
    """A reference to ``size`` chunks at ``index`` of rank ``rank``'s ``buffer`` (Buffer.input,
    Buffer.output, Buffer.scratch / Buffer.intermediate)."""
    program = _legacy_program("chunk()")
    front = program.legacy_front_end()
    front.check_rank(rank, "chunk")
    return front.ref(rank, front.buffer_type(buffer, "chunk"), index, size, "chunk")


def rank(rank):
    """The whole-rank operations of rank ``rank`` (``rank(r).barrier(tb_list)``)."""
    program = _legacy_program("rank()")
    program.legacy_front_end().check_rank(rank, "rank")
    return RankRef(rank, program)


def Json():  # noqa: N802 (MSCCLPPLang's name)
    """Compiles the active program and prints its plan (our plan format, indented) to standard output."""
    program = _state.active_program()
    if program is None:
        raise DSLError("Json() needs an active program: call it inside `with MSCCLPPProgram(...):`", user_location())
    print(program.to_json())


def Check():  # noqa: N802 (MSCCLPPLang's name)
    """Runs the compiled plan symbolically and checks every rank ends with the collective's result.

    Prints the verdict (and the wrong chunks) to standard error, keeping standard output for the
    plan; returns True when the result is right."""
    program = _state.active_program()
    if program is None:
        raise DSLError("Check() needs an active program: call it inside `with MSCCLPPProgram(...):`", user_location())
    report = program.collective.report(program)
    print(f"Check: {program.name}: {report.summary()}", file=sys.stderr)
    return report.ok
