"""Collectives: the name a plan serves and the sizes of each rank's input and output buffers.

Sizes are in chunks; the runtime divides the message by them. For AllGather the message size a
plan serves is the output size; for Gather and Scatter the per-rank part (Gather's input, Scatter's
output); for the others it is the input size.
"""
from .buffer import BaseBuffer
from .errors import DSLError, user_location
from .types import BufferType

__all__ = [
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
]


class Collective:
    """Base class: ``input_chunks``/``output_chunks`` per rank, the plan's collective name and in-place flag."""

    name = "custom"

    def __init__(self, num_ranks, chunk_factor, inplace):
        where = user_location()
        if not isinstance(num_ranks, int) or num_ranks < 1:
            raise DSLError(f"num_ranks must be a positive integer, got {num_ranks!r}", where)
        if not isinstance(chunk_factor, int) or chunk_factor < 0:
            raise DSLError(f"chunk_factor must be a non-negative integer, got {chunk_factor!r}", where)
        self.num_ranks = num_ranks
        self.chunk_factor = chunk_factor
        self.inplace = bool(inplace)

    def sizes(self):
        """(input chunks, output chunks) of every rank."""
        raise NotImplementedError

    def init_buffers(self):
        inp, out = self.sizes()
        return [
            {
                BufferType.input: BaseBuffer(rank, BufferType.input, 0, inp),
                BufferType.output: BaseBuffer(rank, BufferType.output, 0, out),
            }
            for rank in range(self.num_ranks)
        ]


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
    def __init__(self, num_ranks, chunk_factor, inplace, root=0):
        Collective.__init__(self, num_ranks, chunk_factor, inplace)
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
