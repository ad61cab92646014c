"""MSCCL++ programs import the enums from here (``mscclpp.language.internal.types``); same objects."""
from ..types import (  # noqa: F401
    BufferType,
    ChannelType,
    Chunk,
    DataFormat,
    RankGroup,
    ReduceOperationType,
    ReplicationPolicy,
    SyncType,
)
