"""The MSCCL++ DSL: write a collective algorithm in Python, compile it to an execution plan.

Everything a program needs is importable from here. MSCCL++'s module layout works too, star
imports included: ``mscclpp.language.program``, ``.collectives``, ``.channel``, ``.rank``,
``.general``, ``.loop``, ``.thread_block_group``, ``.utils``, ``.buffer``, ``.types``.
MSCCLPPLang programs (``chunk``, ``rank``, ``Json``, ``Check`` inside ``MSCCLPPProgram``) import
the same way; legacy/ implements them.
"""
from .buffer import BaseBuffer, Buffer
from .channel import Channel, MemoryChannel, PortChannel, SwitchChannel
from .collectives import (
    AllGather,
    AllGatherV,
    AllReduce,
    AllToAll,
    AllToAllV,
    Broadcast,
    Collective,
    Gather,
    Reduce,
    ReduceScatter,
    ReduceScatterV,
    Scatter,
    SendRecv,
    TestCollective,
)
from .errors import DSLError, DSLWarning
from .general import JSON
from .loop import Loop, LoopIterationContext
from .program import CollectiveProgram, MSCCLPPProgram  # noqa: I001 (before legacy, which subclasses it)
from .legacy import Check, Json, chunk, rank
from .rank import Rank, Semaphore
from .thread_block_group import ThreadBlockGroup
from .types import BufferType, ChannelType, Chunk, DataFormat, ReduceOperationType, ReplicationPolicy, SyncType
from .utils import AlgoSpec

__all__ = [
    "AlgoSpec",
    "AllGather",
    "AllGatherV",
    "AllReduce",
    "AllToAll",
    "AllToAllV",
    "BaseBuffer",
    "Broadcast",
    "Buffer",
    "BufferType",
    "Channel",
    "Check",
    "ChannelType",
    "Chunk",
    "Collective",
    "CollectiveProgram",
    "DSLError",
    "DSLWarning",
    "DataFormat",
    "Gather",
    "JSON",
    "Json",
    "Loop",
    "LoopIterationContext",
    "MSCCLPPProgram",
    "MemoryChannel",
    "PortChannel",
    "Rank",
    "Reduce",
    "ReduceOperationType",
    "ReduceScatter",
    "ReduceScatterV",
    "ReplicationPolicy",
    "Scatter",
    "Semaphore",
    "SendRecv",
    "SwitchChannel",
    "SyncType",
    "TestCollective",
    "ThreadBlockGroup",
    "chunk",
    "rank",
]
