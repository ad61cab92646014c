"""MSCCL++ programs import the enums from here (``mscclpp.language.internal.types``); same objects."""
from ..types import BufferType, ChannelType, Chunk, ReduceOperationType, ReplicationPolicy, SyncType  # noqa: F401
