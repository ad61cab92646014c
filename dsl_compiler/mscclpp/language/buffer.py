"""Buffers and slicing them into chunks.

``rank.get_input_buffer()[a:b]`` is the Chunk [a, b) of that rank's input. ``Buffer(rank, size)``
allocates ``size`` chunks of the rank's scratch space after what earlier Buffers took.
"""
from .errors import DSLError, user_location
from .internal.state import get_program
from .types import BufferType, Chunk

__all__ = ["BaseBuffer", "Buffer"]

_new_chunk = object.__new__


class BaseBuffer:
    """Chunks [offset, offset+size) of one of a rank's buffers; slicing is relative to offset."""

    __slots__ = ("rank", "buffer_type", "offset", "size")

    def __init__(self, rank, buffer_type, offset, size):
        self.rank = rank
        self.buffer_type = buffer_type
        self.offset = offset
        self.size = offset + size  # one past the last chunk, as MSCCL++ defines it

    def __len__(self):
        return self.size - self.offset

    def __getitem__(self, key):
        if type(key) is slice:
            start, stop = key.start, key.stop
            offset = self.offset
            if (
                type(start) is int
                and type(stop) is int
                and key.step is None
                and 0 <= start <= stop <= self.size - offset
            ):
                # Built field by field: slicing is the most frequent DSL call.
                chunk = _new_chunk(Chunk)
                chunk.rank = self.rank
                chunk.buffer = self.buffer_type
                chunk.index = offset + start
                chunk.size = stop - start
                return chunk
            return self._slow_slice(start, stop, key.step)
        raise DSLError(
            f"buffers are sliced, not indexed: use buffer[{key}:{key}+1] (got {type(key).__name__})", user_location()
        )

    def _slow_slice(self, start, stop, step):
        length = self.size - self.offset
        if start is None:
            start = 0
        if stop is None:
            stop = length
        if (step is not None and step != 1) or start < 0 or stop < 0 or start > stop or stop > length:
            raise DSLError(self._bad_slice(start, stop, step, length), user_location())
        return Chunk(self.rank, self.buffer_type, self.offset + start, stop - start)

    def _bad_slice(self, start, stop, step, length):
        name = f"rank {self.rank}'s {self.buffer_type.name} buffer"
        if step is not None and step != 1:
            return f"slice step {step} is not supported on {name}: chunks are contiguous"
        if start < 0 or stop < 0:
            return f"slice [{start}:{stop}] of {name} uses a negative index"
        if start > stop:
            return f"slice [{start}:{stop}] of {name} is empty or reversed"
        return f"slice [{start}:{stop}] is out of bounds for {name}, which has {length} chunk(s)"


class Buffer(BaseBuffer):
    """A scratch buffer of ``size`` chunks on ``rank``.

    The class also names the buffer kinds as MSCCL++'s DSL documents do: ``Buffer.input``, ``Buffer.output``,
    ``Buffer.scratch`` are BufferType members.
    """

    __slots__ = ()
    input = BufferType.input
    output = BufferType.output
    scratch = BufferType.scratch
    intermediate = BufferType.scratch

    def __init__(self, rank, size):
        program = get_program()
        rank = getattr(rank, "rank", rank)
        if not isinstance(rank, int) or not 0 <= rank < program.num_ranks:
            raise DSLError(f"rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())
        if not isinstance(size, int) or size < 0:
            raise DSLError(f"scratch buffer size must be a non-negative integer, got {size!r}", user_location())
        program.check_writable()
        state = program.rank_state(rank)
        BaseBuffer.__init__(self, rank, BufferType.scratch, state.scratch_chunks, size)
        state.scratch_chunks += size
