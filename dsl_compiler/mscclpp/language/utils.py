"""AlgoSpec: everything a program needs besides its algorithm (used by jit and from_spec)."""
from dataclasses import dataclass, field

from .types import ReplicationPolicy

__all__ = ["AlgoSpec", "ReplicationPolicy"]


@dataclass(frozen=True)
class AlgoSpec:
    name: str
    collective: object
    nranks_per_node: int
    world_size: int
    in_place: bool
    instances: int
    protocol: str
    instr_fusion: bool = True
    auto_sync: bool = True
    replication_policy: ReplicationPolicy = ReplicationPolicy.interleaved
    reuse_resources: bool = False
    num_threads_per_block: int = 1024
    use_double_scratch_buffer: bool = False
    buffer_alignment: int = 16
    min_message_size: int = 0
    max_message_size: int = 2**64 - 1
    tags: object = field(default_factory=dict)
