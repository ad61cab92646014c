"""Rank (local ops of one rank), Semaphore (threadblock-to-threadblock sync within a rank)."""
import functools
from typing import Any, Dict, List  # noqa: F401 (re-exported: MSCCL++'s star import gives them)

from .buffer import BaseBuffer, Buffer
from .errors import DSLError, user_location
from .internal.ops import Barrier, Copy, Nop, Reduce, SemaphoreOp
from .internal import state as _state
from .internal.state import get_program, reset_ids
from .loop import check_iter_context
from .thread_block_group import ThreadBlockGroup, threadblocks
from .types import BufferType, ChannelType, Chunk, ReduceOperationType, SyncType

# The DSL's names among those MSCCL++'s star import of this module gives.
__all__ = [
    "Rank",
    "Semaphore",
    "Buffer",
    "BaseBuffer",
    "Chunk",
    "BufferType",
    "ChannelType",
    "SyncType",
    "ReduceOperationType",
    "ThreadBlockGroup",
    "get_program",
    "Any",
    "Dict",
    "List",
]

_SCRATCH = BufferType.scratch
_SUM = ReduceOperationType.sum


def sync_bits(data_sync, sync, default):
    """The data_sync of a sync op from ``data_sync=`` (SyncType) or the spelling ``sync="after"``."""
    value = sync if sync is not None else data_sync
    if value is None:
        value = default
    try:
        return SyncType.parse(value).bits
    except ValueError as error:
        raise DSLError(str(error), user_location()) from None


def reduce_op_value(reduce_op, op):
    try:
        return ReduceOperationType.parse(op if op is not None else reduce_op).value
    except ValueError as error:
        raise DSLError(str(error), user_location()) from None


def require_packets(program, what):
    if program.protocol != "LL":
        raise DSLError(
            f'{what} moves LL packets, which need protocol="LL" (this program is "{program.protocol}")',
            user_location(),
        )


def require_scratch(chunk, what, role):
    if chunk.buffer is not _SCRATCH:
        raise DSLError(
            f"{what}: the {role} chunk must be in a scratch buffer (packets live only in scratch), "
            f"but it is in rank {chunk.rank}'s {chunk.buffer.name} buffer",
            user_location(),
        )


class _RankOrClassMethod:
    """A Rank method MSCCL++'s DSL concepts also call on the class: ``Rank.copy(dst, src, tb=0)`` works like
    ``Rank(dst.rank).copy(dst, src, tb=0)`` (the rank is the first chunk's). Called on the class with
    a Rank first (``Rank.copy(rank, dst, src, tb=0)``) it is the plain method. Either way the
    function it returns has the method's own signature and documentation (functools.wraps), so
    ``inspect.signature(Rank.copy)`` shows the real parameters."""

    def __init__(self, function):
        self.function = function
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

        @functools.wraps(function)
        def on_the_class(first, *args, **kwargs):
            if isinstance(first, Rank):
                return function(first, *args, **kwargs)
            return function(Rank(first.rank), first, *args, **kwargs)

        self._on_the_class = on_the_class

    def __get__(self, instance, owner):
        if instance is not None:
            return self.function.__get__(instance, owner)
        return self._on_the_class

    def __set_name__(self, owner, name):
        self.__name__ = name


class Semaphore:
    """A counter of one rank: ``release(tb)`` adds one, ``acquire(tb)`` waits for one and takes it.

    ``Semaphore(rank, initial_value)``. Also spelled ``Rank.Semaphore(rank=i, size=1)`` (size is
    the number of counters: only 1 is supported) and ``tag=`` (a label, not used in plans). Without
    ``rank`` it belongs to the rank of the latest ``Rank(...)`` of the program (or to rank 0 of a
    one-rank program).
    """

    def __init__(self, rank=None, initial_value=0, size=None, tag=None):
        program = get_program()
        program.check_writable()
        rank = getattr(rank, "rank", rank)
        if rank is None:
            rank = program.last_rank
            if rank is None:
                if program.num_ranks != 1:
                    raise DSLError(
                        f"Semaphore needs rank= (or a Rank(...) created before it) in a {program.num_ranks}-rank program",
                        user_location(),
                    )
                rank = 0
        if not isinstance(rank, int) or not 0 <= rank < program.num_ranks:
            raise DSLError(f"rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())
        if size is not None and size != 1:
            raise DSLError(f"Semaphore size={size}: only single-counter semaphores (size=1) exist", user_location())
        if not isinstance(initial_value, int) or initial_value < 0:
            raise DSLError(f"initial_value must be a non-negative integer, got {initial_value!r}", user_location())
        state = program.rank_state(rank)
        self.rank = rank
        self.initial_value = initial_value
        self.tag = tag
        self.id = len(state.semaphores)
        state.semaphores.append(initial_value)

    @classmethod
    def reset(cls):
        """MSCCL++'s counter reset: see internal/state.reset_ids."""
        reset_ids("Semaphore")

    def acquire(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):
        """Wait until the counter is positive, then decrement it (threadblock ``tb``)."""
        self._add("sem_acquire", tb, data_sync, sync, iter_context)

    def release(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):
        """Increment the counter (threadblock ``tb``)."""
        self._add("sem_release", tb, data_sync, sync, iter_context)

    def _add(self, name, tb, data_sync, sync, iter_context):
        program = get_program()
        check_iter_context(program, iter_context)
        if type(tb) is not int or tb < 0:
            raise DSLError(f"tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        program.add_op(self.rank, tb, SemaphoreOp(name, [self.id], sync_bits(data_sync, sync, SyncType.both)))


class Rank:
    """One rank (GPU): its buffers and the ops that stay on it."""

    Semaphore = Semaphore  # the spelling Rank.Semaphore(rank=..., ...)

    def __init__(self, rank):
        program = get_program()
        rank = getattr(rank, "rank", rank)
        if not isinstance(rank, int) or not 0 <= rank < program.num_ranks:
            raise DSLError(f"rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())
        self.rank = rank
        program.last_rank = rank

    def __repr__(self):
        return f"Rank({self.rank})"

    def get_input_buffer(self):
        return get_program().buffers[self.rank][BufferType.input]

    def get_output_buffer(self):
        return get_program().buffers[self.rank][BufferType.output]

    def _check_local(self, what, **chunks):
        for role, chunk in chunks.items():
            if not isinstance(chunk, Chunk):
                raise DSLError(f"{what}: {role} must be a Chunk (a buffer slice), got {chunk!r}", user_location())
            if chunk.rank != self.rank:
                raise DSLError(
                    f"{what} on rank {self.rank}: the {role} chunk belongs to rank {chunk.rank}; "
                    f"local ops use only their own rank's buffers",
                    user_location(),
                )

    def _copy(self, name, what, dst_chunk, src_chunk, tb, tb_group, iter_context):
        program = _state._active
        rank = self.rank
        if (
            program is not None
            and program._direct
            and type(tb) is int
            and tb >= 0
            and tb_group is None
            and iter_context is None
            and type(src_chunk) is Chunk
            and type(dst_chunk) is Chunk
            and src_chunk.rank == rank
            and dst_chunk.rank == rank
            and src_chunk.size == dst_chunk.size
            and (
                name == "copy"
                or (
                    program.protocol == "LL"
                    and (dst_chunk if name == "cpkt" else src_chunk).buffer is _SCRATCH
                )
            )
        ):
            # Fast path: the checks below, all passing. Else the full path.
            src = (src_chunk.buffer._value_, src_chunk.index, src_chunk.size)
            dst = (dst_chunk.buffer._value_, dst_chunk.index, dst_chunk.size)
            program.ranks[rank].tb(tb).ops.append(Copy(name, [src], [dst], None))
            return
        program = get_program()
        check_iter_context(program, iter_context)
        self._check_local(what, dst=dst_chunk, src=src_chunk)
        if dst_chunk.size != src_chunk.size:
            raise DSLError(
                f"{what}: dst chunk has {dst_chunk.size} chunk(s) but src chunk has {src_chunk.size}", user_location()
            )
        if name == "cpkt":
            require_packets(program, what)
            require_scratch(dst_chunk, what, "dst")
        elif name == "upkt":
            require_packets(program, what)
            require_scratch(src_chunk, what, "src")
        src = (src_chunk.buffer._value_, src_chunk.index, src_chunk.size)
        dst = (dst_chunk.buffer._value_, dst_chunk.index, dst_chunk.size)
        for tb_id, tbg in threadblocks(tb, tb_group):
            program.add_op(self.rank, tb_id, Copy(name, [src], [dst], tbg))

    @_RankOrClassMethod
    def copy(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """dst_chunk = src_chunk (plain data)."""
        self._copy("copy", "copy", dst_chunk, src_chunk, tb, tb_group, iter_context)

    @_RankOrClassMethod
    def copy_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Packs src_chunk (plain) into LL packets in dst_chunk (scratch)."""
        self._copy("cpkt", "copy_packets", dst_chunk, src_chunk, tb, tb_group, iter_context)

    @_RankOrClassMethod
    def unpack_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Waits for the LL packets in src_chunk (scratch) and unpacks them into dst_chunk."""
        self._copy("upkt", "unpack_packets", dst_chunk, src_chunk, tb, tb_group, iter_context)

    # Names of earlier MSCCL++ releases.
    copy_packet = copy_packets
    unpack_packet = unpack_packets
    unpack_copy_packet = unpack_packets

    @_RankOrClassMethod
    def reduce(
        self,
        src_chunk,
        other_chunks,
        tb=None,
        tb_group=None,
        dst_chunk=None,
        reduce_op=ReduceOperationType.sum,
        packet=False,
        op=None,
        iter_context=None,
    ):
        """dst_chunk = src_chunk (+) other_chunks[0] (+) ... (dst_chunk defaults to src_chunk).

        With ``packet=True`` the other chunks are LL packets in scratch. The spelling
        ``reduce(dst, src, op="sum", tb=0)`` (one chunk instead of a list) means dst = dst (+) src.
        """
        program = _state._active
        rank = self.rank
        if (
            program is not None
            and program._direct
            and type(tb) is int
            and tb >= 0
            and tb_group is None
            and iter_context is None
            and reduce_op is _SUM
            and op is None
            and type(src_chunk) is Chunk
            and src_chunk.rank == rank
            and type(other_chunks) is list
            and other_chunks
            and (not packet or program.protocol == "LL")
        ):
            # Fast path: the checks below, all passing. Else the full path.
            size = src_chunk.size
            if dst_chunk is None or (type(dst_chunk) is Chunk and dst_chunk.rank == rank and dst_chunk.size == size):
                for c in other_chunks:
                    if (
                        type(c) is not Chunk
                        or c.rank != rank
                        or c.size != size
                        or (packet and c.buffer is not _SCRATCH)
                    ):
                        break
                else:
                    if dst_chunk is None:
                        dst_chunk = src_chunk
                    src = [(src_chunk.buffer._value_, src_chunk.index, size)]
                    src += [(c.buffer._value_, c.index, size) for c in other_chunks]
                    dst = [(dst_chunk.buffer._value_, dst_chunk.index, size)]
                    op_ = Reduce(src, dst, [], [], [], [], [], "none", "sum", None, bool(packet))
                    program.ranks[rank].tb(tb).ops.append(op_)
                    return
        program = get_program()
        check_iter_context(program, iter_context)
        if isinstance(other_chunks, Chunk):
            other_chunks = [other_chunks]
        if dst_chunk is None:
            dst_chunk = src_chunk
        self._check_local("reduce", dst=dst_chunk, src=src_chunk)
        if not other_chunks:
            raise DSLError("reduce needs at least one other chunk to combine with", user_location())
        for chunk in other_chunks:
            self._check_local("reduce", other=chunk)
        for chunk in [dst_chunk] + list(other_chunks):
            if chunk.size != src_chunk.size:
                raise DSLError(
                    f"reduce: chunk sizes differ ({chunk.size} vs src {src_chunk.size}); every operand has the same size",
                    user_location(),
                )
        if packet:
            require_packets(program, "reduce(packet=True)")
            for chunk in other_chunks:
                require_scratch(chunk, "reduce(packet=True)", "other")
        value = reduce_op_value(reduce_op, op)
        src = [(src_chunk.buffer._value_, src_chunk.index, src_chunk.size)]
        src += [(c.buffer._value_, c.index, c.size) for c in other_chunks]
        dst = [(dst_chunk.buffer._value_, dst_chunk.index, dst_chunk.size)]
        for tb_id, tbg in threadblocks(tb, tb_group):
            program.add_op(
                self.rank, tb_id, Reduce(list(src), list(dst), [], [], [], [], [], "none", value, tbg, bool(packet))
            )

    def barrier(self, tb_list=None):
        """Synchronises threadblocks of this rank. ``barrier([])`` / ``barrier()`` means
        every threadblock the rank uses so far (at least threadblock 0)."""
        program = get_program()
        state = program.rank_state(self.rank)
        if not tb_list:
            tb_list = list(range(max(1, len(state.threadblocks))))
        tb_list = list(tb_list)
        for tb in tb_list:
            if type(tb) is not int or tb < 0:
                raise DSLError(f"barrier: threadblock {tb!r} is not a non-negative integer", user_location())
        if len(set(tb_list)) != len(tb_list):
            raise DSLError(f"barrier: threadblock list {tb_list} names a threadblock twice", user_location())
        if len(tb_list) == 1:
            program.add_op(self.rank, tb_list[0], Nop())
            return
        bid = state.barrier_id(tb_list)
        for tb in tb_list:
            program.add_op(self.rank, tb, Barrier(bid, len(tb_list)))
