"""The plan operations the compiler may emit: the Python side of the runtime's one op table.

runtime/plan/op_table.def is the table the plan loader decodes op names through and the executor
switches on; this is the same table row for row (enum name, JSON name, whether the op reads or
writes LL packets), so the compiler and the runtime agree on every name. tests/python/dsl/
test_op_table.py fails on any difference between the two, and checks that every plan the compiler
produced (plans/, the reference corpus) uses only these names.
"""
from typing import FrozenSet, NamedTuple, Tuple


class OpSpec(NamedTuple):
    enum_name: str  # the runtime's OpType enumerator
    name: str  # the "name" of the op in plan JSON
    packet: bool  # reads or writes LL packets (its packet references must be in scratch)


OPS: Tuple[OpSpec, ...] = (
    OpSpec("Nop", "nop", False),
    OpSpec("Barrier", "barrier", False),
    OpSpec("Signal", "signal", False),
    OpSpec("Wait", "wait", False),
    OpSpec("RelaxedSignal", "rlxsignal", False),
    OpSpec("RelaxedWait", "rlxwait", False),
    OpSpec("Flush", "flush", False),
    OpSpec("Put", "put", False),
    OpSpec("PutWithSignal", "pws", False),
    OpSpec("PutWithSignalAndFlush", "pwsf", False),
    OpSpec("Get", "get", False),
    OpSpec("Copy", "copy", False),
    OpSpec("Reduce", "re", False),
    OpSpec("ReduceSend", "res", False),
    OpSpec("ReadReduce", "rre", False),
    OpSpec("ReadReduceSend", "rres", False),
    OpSpec("PutPackets", "ppkt", True),
    OpSpec("ReadPutPackets", "rppkt", True),
    OpSpec("CopyPackets", "cpkt", True),
    OpSpec("UnpackPackets", "upkt", True),
    OpSpec("ReducePackets", "repkt", True),
    OpSpec("ReduceSendPackets", "respkt", True),
    OpSpec("ReduceCopyPackets", "recpkt", True),
    OpSpec("ReduceCopySendPackets", "recspkt", True),
    OpSpec("GroupLoadReduce", "glre", False),
    OpSpec("GroupLoadReduceStore", "glres", False),
    OpSpec("GroupStore", "gstore", False),
    OpSpec("GroupStorePackets", "gstorepkt", True),
    OpSpec("SemAcquire", "sem_acquire", False),
    OpSpec("SemRelease", "sem_release", False),
    OpSpec("Pipeline", "pipeline", False),
)

OP_NAMES: FrozenSet[str] = frozenset(op.name for op in OPS)
PACKET_OP_NAMES: FrozenSet[str] = frozenset(op.name for op in OPS if op.packet)
