"""Enumerations and the Chunk value type of the DSL.

The enum values are the strings the plan JSON uses, so emitting a plan never needs a lookup table.
Each enum's ``parse`` also accepts the spellings of older DSL versions and of MSCCL++'s DSL
documents: ``"before"`` for SyncType.before, ``"sum"`` for ReduceOperationType.sum, ``"sm"`` for
ChannelType.memory and so on.
"""
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "SyncType",
    "ReduceOperationType",
    "BufferType",
    "ChannelType",
    "ReplicationPolicy",
    "DataFormat",
    "Chunk",
    "RankGroup",
]


class SyncType(Enum):
    """Where a threadblock-wide barrier (``nop``) goes relative to a synchronisation op."""

    none = "none"
    before = "before"
    after = "after"
    both = "both"

    def __str__(self):
        return self.value

    # Fusion merges and strips syncs by bit arithmetic: before=1, after=2.
    def __or__(self, other):
        return _SYNC_BY_BITS[_SYNC_BITS[self] | _SYNC_BITS[SyncType.parse(other)]]

    def __and__(self, other):
        return _SYNC_BY_BITS[_SYNC_BITS[self] & _SYNC_BITS[SyncType.parse(other)]]

    def __xor__(self, other):
        return _SYNC_BY_BITS[_SYNC_BITS[self] ^ _SYNC_BITS[SyncType.parse(other)]]

    @property
    def bits(self):
        return _SYNC_BITS[self]

    @classmethod
    def parse(cls, value):
        """A SyncType from an enum member or its name ("before", "after", "both", "none")."""
        if isinstance(value, cls):
            return value
        if value is None:
            return cls.none
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        raise ValueError(f"invalid sync {value!r}: expected one of none, before, after, both")


_SYNC_BITS = {SyncType.none: 0, SyncType.before: 1, SyncType.after: 2, SyncType.both: 3}
_SYNC_BY_BITS = {v: k for k, v in _SYNC_BITS.items()}


class ReduceOperationType(Enum):
    sum = "sum"
    prod = "prod"
    min = "min"
    max = "max"

    def __str__(self):
        return self.value

    @classmethod
    def parse(cls, value):
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        raise ValueError(f"invalid reduce operation {value!r}: expected one of sum, prod, min, max")


class BufferType(Enum):
    input = "i"
    output = "o"
    scratch = "s"
    intermediate = "s"  # MSCCLPPLang's name for scratch

    def __str__(self):
        return self.value

    def __lt__(self, other):
        return self.value < other.value

    @classmethod
    def parse(cls, value):
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            if value in cls.__members__:
                return cls[value]
            for member in cls:
                if member.value == value:
                    return member
        raise ValueError(f"invalid buffer type {value!r}: expected input, output or scratch")


class ChannelType(Enum):
    port = "port"
    memory = "memory"
    switch = "switch"
    none = "none"
    # Older names, aliases of the members above:
    # SmChannel and ProxyChannel of MSCCL++ 0.5-0.6, nvls for switch.
    sm = "memory"
    proxy = "port"
    nvls = "switch"

    def __str__(self):
        return self.value

    @classmethod
    def parse(cls, value):
        if isinstance(value, cls):
            return value
        if isinstance(value, str) and value in cls.__members__:
            return cls[value]
        raise ValueError(f"invalid channel type {value!r}: expected memory, port or switch")


class ReplicationPolicy(Enum):
    """How ``instances`` copies of a program share the buffers.

    interleaved: chunk c of size s of instance k lands at c*instances + k*s (round-robin).
    none: instance k works on its own contiguous block: chunk c lands at c + k*chunks(buffer).
    duplicated, packed: MSCCLPPLang's names. Its compiler placed both as ``none`` does
    (only interleaved had its own formula), so they replicate the same way here.
    """

    interleaved = "interleaved"
    none = "none"
    duplicated = "duplicated"
    packed = "packed"

    def __str__(self):
        return self.value


class DataFormat(Enum):
    """MSCCLPPLang's put_packet source format: plain data, or LL packets already in scratch."""

    raw = "raw"
    packet = "packet"

    def __str__(self):
        return self.value


@dataclass
class RankGroup:
    """The ranks a SwitchChannel binds (``SwitchChannel.rank_group``), as MSCCL++ names them."""

    size: int
    ranks: list

    def to_json(self):
        return {"size": self.size, "ranks": list(self.ranks)}


class Chunk:
    """A slice [index, index+size) of one rank's input, output or scratch buffer, in chunk units.

    ``Chunk(rank, buffer, index, size)`` is the current form; ``Chunk(rank, index, size)``, MSCCL++'s
    early spelling, names a slice of the input buffer.
    """

    __slots__ = ("rank", "buffer", "index", "size")

    def __init__(self, rank, buffer, index, size=None):
        if size is None:  # Chunk(rank, index, size): the early spelling, input buffer implied
            buffer, index, size = BufferType.input, buffer, index
        elif not isinstance(buffer, BufferType):
            buffer = BufferType.parse(buffer)
        self.rank = getattr(rank, "rank", rank)
        self.buffer = buffer
        self.index = index
        self.size = size
        _check_chunk(self)

    def __eq__(self, other):
        return (
            isinstance(other, Chunk)
            and self.rank == other.rank
            and self.buffer is other.buffer
            and self.index == other.index
            and self.size == other.size
        )

    def __hash__(self):
        return hash((self.rank, self.buffer, self.index, self.size))

    def __repr__(self):
        return f"Chunk(rank={self.rank}, buffer={self.buffer.name}, index={self.index}, size={self.size})"

    def to_dict(self):
        return {"rank": self.rank, "type": self.buffer.value, "index": self.index, "size": self.size}


def _check_chunk(chunk):
    """A Chunk built directly (not by slicing a buffer) is checked against the active program."""
    from .errors import DSLError, user_location  # late: errors does not import types
    from .internal.state import active_program

    program = active_program()
    if program is None:
        return
    if not program._current_model:
        program.claim_current()
    if not isinstance(chunk.rank, int) or not 0 <= chunk.rank < program.num_ranks:
        raise DSLError(f"chunk rank {chunk.rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())
    have = program.rank_state(chunk.rank).chunks(chunk.buffer.value)
    if not isinstance(chunk.index, int) or not isinstance(chunk.size, int) or chunk.index < 0 or chunk.size < 0 or chunk.index + chunk.size > have:
        raise DSLError(
            f"chunk [{chunk.index}:{chunk.index + chunk.size}] is out of bounds for rank {chunk.rank}'s "
            f"{chunk.buffer.name} buffer, which has {have} chunk(s)",
            user_location(),
        )
