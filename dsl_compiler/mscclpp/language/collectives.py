"""Collectives: the name a plan serves and the sizes of each rank's input and output buffers.

Sizes are in chunks; the runtime divides the message by them. For AllGather the message size a
plan serves is the output size; for Gather and Scatter the per-rank part (Gather's input, Scatter's
output); for the others it is the input size.
"""
import sys

from .buffer import BaseBuffer
from .errors import DSLError, user_location
from .types import BufferType

__all__ = [
    "BaseBuffer",
    "BufferType",
    "Collective",
    "TestCollective",
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "AllToAll",
    "SendRecv",
    "Broadcast",
    "Reduce",
    "Gather",
    "Scatter",
    "AllToAllV",
    "AllGatherV",
    "ReduceScatterV",
]


class Collective:
    """Base class: ``input_chunks``/``output_chunks`` per rank, the plan's collective name and in-place flag.

    MSCCLPPLang's constructors took two more arguments, accepted here: ``num_ranks_per_node`` (NVLS
    groups stay within a node; default: all ranks) and ``num_chunk_groups`` (a field of its plan
    format that ours does not have: kept, unused).
    """

    name = "custom"

    def __init__(self, num_ranks, chunk_factor, inplace, num_ranks_per_node=-1, **kwargs):
        where = user_location()
        if not isinstance(num_ranks, int) or num_ranks < 1:
            raise DSLError(f"num_ranks must be a positive integer, got {num_ranks!r}", where)
        if not isinstance(chunk_factor, int) or chunk_factor < 0:
            raise DSLError(f"chunk_factor must be a non-negative integer, got {chunk_factor!r}", where)
        if not isinstance(num_ranks_per_node, int) or (num_ranks_per_node < 1 and num_ranks_per_node != -1):
            raise DSLError(f"num_ranks_per_node must be a positive integer (or -1: all), got {num_ranks_per_node!r}", where)
        unknown = sorted(set(kwargs) - {"num_chunk_groups"})
        if unknown:
            raise DSLError(f"{type(self).__name__}() got unexpected keyword argument(s) {', '.join(unknown)}", where)
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = bool(inplace)
        self.num_ranks_per_node = num_ranks if num_ranks_per_node == -1 else num_ranks_per_node
        self.num_chunk_groups = kwargs.get("num_chunk_groups", 1)

    def sizes(self):
        """(input chunks, output chunks) of every rank."""
        raise NotImplementedError

    def init_buffers(self, sizes=None):
        """Every rank's input and output BaseBuffers; ``sizes`` (input, output) overrides sizes()."""
        inp, out = self.sizes() if sizes is None else sizes
        return [
            {
                BufferType.input: BaseBuffer(rank, BufferType.input, 0, inp),
                BufferType.output: BaseBuffer(rank, BufferType.output, 0, out),
            }
            for rank in range(self.num_ranks)
        ]

    def report(self, prog):
        """The CheckReport of prog (compiled if it was not): its plan run symbolically against this
        collective's definition (internal/collective_check.py)."""
        from .internal.collective_check import CHECKED, SimulationError, check_plan

        where = user_location()
        if getattr(prog, "collective", None) is not self:
            raise DSLError(f"check: {prog!r} is not a program of this {type(self).__name__}", where)
        if self.name not in CHECKED:
            raise DSLError(
                f"check: a {self.name!r} collective ({type(self).__name__}) defines no result to check against", where
            )
        try:
            return check_plan(prog.to_dict())
        except SimulationError as error:
            raise DSLError(f"check: {error}", where) from None

    def check(self, prog):
        """Whether prog leaves this collective's result on every rank (see report). Prints the wrong
        chunks to standard error when it does not."""
        report = self.report(prog)
        if not report.ok:
            print(f"{prog.name}: {report.summary()}", file=sys.stderr)
        return report.ok


class TestCollective(Collective):
    """Free buffer sizes, for unit programs; the plan's collective is "test"."""

    name = "test"
    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, num_ranks, input_size, output_size):
        Collective.__init__(self, num_ranks, 1, False)
        self.input_size = input_size
        self.output_size = output_size

    def sizes(self):
        return self.input_size, self.output_size


class AllReduce(Collective):
    name = "allreduce"

    def sizes(self):
        return self.num_ranks * self.chunk_factor, self.num_ranks * self.chunk_factor


class AllGather(Collective):
    name = "allgather"

    def sizes(self):
        return self.chunk_factor, self.num_ranks * self.chunk_factor


class ReduceScatter(Collective):
    name = "reducescatter"

    def sizes(self):
        return self.num_ranks * self.chunk_factor, self.chunk_factor


class AllToAll(Collective):
    name = "alltoall"

    def sizes(self):
        return self.num_ranks * self.chunk_factor, self.num_ranks * self.chunk_factor


class SendRecv(Collective):
    """Each rank sends its input to a peer's output; input and output have chunk_factor chunks."""

    name = "sendrecv"

    def sizes(self):
        return self.chunk_factor, self.chunk_factor


class _Rooted(Collective):
    def __init__(self, num_ranks, chunk_factor, inplace, root=0, num_ranks_per_node=-1, **kwargs):
        Collective.__init__(self, num_ranks, chunk_factor, inplace, num_ranks_per_node, **kwargs)
        if not isinstance(root, int) or not 0 <= root < num_ranks:
            raise DSLError(f"root {root!r} is not a rank of a {num_ranks}-rank collective", user_location())
        self.root = root

    def sizes(self):
        return self.chunk_factor, self.chunk_factor


class Broadcast(_Rooted):
    """The root's input reaches every rank's output. The plan carries the root as "root"."""

    name = "broadcast"


class Reduce(_Rooted):
    """Every rank's input, reduced, lands in the root's output. The plan carries the root as "root"."""

    name = "reduce"


class Gather(_Rooted):
    """Rank r's input (chunk_factor chunks) lands in the root's output at part r; every rank's output
    has num_ranks parts but only the root's is written. In place, a rank's input is part ``rank`` of
    its output (NCCL's sendbuff == recvbuff + root * count on the root). Our extension of MSCCL++'s
    collectives; the plan carries the root as "root"."""

    name = "gather"

    def sizes(self):
        return self.chunk_factor, self.num_ranks * self.chunk_factor


class Scatter(_Rooted):
    """Part r of the root's input lands in rank r's output (chunk_factor chunks); only the root's
    input is read. In place, a rank's output is part ``rank`` of its input (NCCL's recvbuff ==
    sendbuff + root * count on the root). Our extension of MSCCL++'s collectives; the plan carries
    the root as "root"."""

    name = "scatter"

    def sizes(self):
        return self.num_ranks * self.chunk_factor, self.chunk_factor


class _Variable(Collective):
    """A collective whose segment sizes are known only at call time (docs/dsl-compiler.md,
    "Variable sizes"). The program is written with one chunk per segment, as the fixed-size
    collective with chunk_factor 1; the compiler turns each chunk into a segment reference the
    call's counts place and size. Scratch chunks are slots of ``slot_bytes``, each holding one
    segment; a program without scratch leaves it 0. The plan is out of place: the runtime stages
    an in-place call."""

    variable = True

    def __init__(self, num_ranks, slot_bytes=0, num_ranks_per_node=-1):
        Collective.__init__(self, num_ranks, 1, False, num_ranks_per_node)
        if not isinstance(slot_bytes, int) or slot_bytes < 0:
            raise DSLError(f"slot_bytes must be a non-negative integer, got {slot_bytes!r}", user_location())
        self.slot_bytes = slot_bytes

    def report(self, prog):
        """The check of the program's unit plan (every count equal) against the fixed-size collective."""
        from .internal.collective_check import SimulationError, check_plan

        where = user_location()
        if getattr(prog, "collective", None) is not self:
            raise DSLError(f"check: {prog!r} is not a program of this {type(self).__name__}", where)
        prog.post_process_operations()
        try:
            return check_plan(prog.unit_plan())
        except SimulationError as error:
            raise DSLError(f"check: {error}", where) from None


class AllToAllV(_Variable):
    """Rank r's input chunk q is what it sends to rank q; output chunk s what it receives from rank s."""

    name = "alltoallv"
    fixed = "alltoall"

    def sizes(self):
        return self.num_ranks, self.num_ranks


class AllGatherV(_Variable):
    """Rank r's input (one chunk) reaches output chunk r of every rank; ranks' parts differ in size."""

    name = "allgatherv"
    fixed = "allgather"

    def sizes(self):
        return 1, self.num_ranks


class ReduceScatterV(_Variable):
    """Input chunk q of every rank, reduced, lands in rank q's output (one chunk); parts differ in size."""

    name = "reducescatterv"
    fixed = "reducescatter"

    def sizes(self):
        return self.num_ranks, 1
