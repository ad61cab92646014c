"""The rest of MSCCL++'s current DSL surface: reset(), SwitchChannelRankView,
LoopIterationContext.add_operation, star-import names, Rank method signatures, the rank-less
switch calls of the DSL concepts snippets, MSCCLPPLang's collective arguments."""
import importlib
import inspect
import json

import dsl_concepts_snippets
import pytest

from mscclpp.language import (
    AllGather,
    AllReduce,
    Buffer,
    CollectiveProgram,
    DSLError,
    LoopIterationContext,
    MemoryChannel,
    PortChannel,
    Rank,
    Semaphore,
    SwitchChannel,
    TestCollective,
)
from mscclpp.language.internal.ops import Copy

THIS = __file__


def guarded_call_line():
    """Line of the call two lines below the caller's (after its ``with pytest.raises(...)``)."""
    return inspect.currentframe().f_back.f_lineno + 2


# ---- reset() ----


@pytest.mark.parametrize("kind", [MemoryChannel, PortChannel, SwitchChannel, Semaphore])
def test_reset_is_a_no_op_between_programs_refused_inside(kind):
    for _ in range(2):
        kind.reset()
        with CollectiveProgram("r", TestCollective(2, 1, 1), 2):
            assert MemoryChannel(1, 0).channel_id == 0  # ids start from 0 in every program
            line = guarded_call_line()
            with pytest.raises(DSLError) as error:
                kind.reset()
    assert str(error.value).startswith(f"{THIS}:{line}: {kind.__name__}.reset() inside a program")


# ---- SwitchChannel ----


def test_switch_channel_rank_view_is_nested_as_in_mscclpp():
    with CollectiveProgram("s", AllReduce(2, 1, True), 2):
        channel = SwitchChannel([0, 1], Buffer.input)
        assert isinstance(channel.at_rank(1), SwitchChannel.SwitchChannelRankView)
        assert (channel.rank_group.size, channel.rank_group.ranks) == (2, [0, 1])


def test_rankless_switch_calls_run_on_the_range_owner():
    program = dsl_concepts_snippets.nvls_snippet_without_rank()
    plan = json.loads(program.to_json())
    for rank in range(2):
        ops = plan["gpus"][rank]["threadblocks"][0]["ops"]
        assert [op["name"] for op in ops] == ["glres"]
        assert ops[0]["src_buff"] == [{"switch_channel_id": 0, "index": rank, "size": 1}]
    assert program.collective.check(program)


# ---- loops ----


def test_loop_context_add_operation_puts_an_op_in_the_loop():
    with CollectiveProgram("l", TestCollective(1, 2, 2), 1) as program:
        with LoopIterationContext(unit=1024, num_chunks=2) as loop:
            loop.add_operation(0, 1, Copy("copy", [("i", 0, 2)], [("o", 0, 2)], None))
            line = guarded_call_line()
            with pytest.raises(DSLError) as error:
                loop.add_operation(0, 1, "copy")
        assert str(error.value).startswith(f"{THIS}:{line}: add_operation takes one compiler op")
        with pytest.raises(DSLError, match="this loop is not the active one"):
            loop.add_operation(0, 0, Copy("copy", [("i", 0, 1)], [("o", 0, 1)], None))
    ops = json.loads(program.to_json())["gpus"][0]["threadblocks"][1]["ops"]
    assert ops[0]["name"] == "pipeline" and ops[0]["iter_context"] == {"unit_size": 1024, "num_chunks": 2}
    assert [op["name"] for op in ops[0]["ops"]] == ["copy"]


# ---- names and signatures ----

# The names programs take from MSCCL++'s star imports (its modules have no
# __all__, so they also give what they import; its implementation classes are
# left out: docs/dsl-compiler.md).
UPSTREAM_STAR_NAMES = {
    "mscclpp.language": ["AlgoSpec", "ReplicationPolicy", "MSCCLPPProgram", "chunk", "rank", "Json", "Check"],
    "mscclpp.language.channel": [
        "MemoryChannel", "PortChannel", "SwitchChannel", "SyncType", "ReduceOperationType", "Chunk", "RankGroup",
        "ThreadBlockGroup", "BufferType", "ChannelType", "get_program", "List", "Dict", "Any",
    ],
    "mscclpp.language.rank": [
        "Rank", "BaseBuffer", "Buffer", "Semaphore", "BufferType", "Chunk", "ThreadBlockGroup", "ReduceOperationType",
        "SyncType", "ChannelType", "get_program", "List", "Dict", "Any",
    ],
    "mscclpp.language.program": [
        "CollectiveProgram", "Collective", "TestCollective", "AllGather", "AllReduce", "ReduceScatter", "AllToAll",
        "BaseBuffer", "BufferType", "ChannelType", "MemoryChannel", "PortChannel", "SwitchChannel", "Semaphore",
        "AlgoSpec", "ReplicationPolicy", "SyncType", "ReduceOperationType", "Chunk", "RankGroup", "ThreadBlockGroup",
        "get_program", "List", "MSCCLPPProgram", "Json", "chunk", "rank", "Check",
    ],
    "mscclpp.language.collectives": [
        "Collective", "TestCollective", "AllGather", "AllReduce", "ReduceScatter", "AllToAll", "BufferType", "BaseBuffer",
    ],
    "mscclpp.language.general": ["JSON", "get_program"],
    "mscclpp.language.loop": ["LoopIterationContext", "get_program", "Dict"],
    "mscclpp.language.thread_block_group": ["ThreadBlockGroup", "List", "Dict", "Any"],
    "mscclpp.language.utils": ["AlgoSpec", "ReplicationPolicy"],
    "mscclpp.language.internal.types": [
        "SyncType", "ReduceOperationType", "BufferType", "ChannelType", "Chunk", "RankGroup", "ReplicationPolicy",
    ],
    # MSCCLPPLang's modules
    "mscclpp.language.buffer": ["Buffer"],
    "mscclpp.language.types": ["ChannelType", "ReplicationPolicy", "DataFormat"],
}


@pytest.mark.parametrize("module", sorted(UPSTREAM_STAR_NAMES))
def test_star_imports_give_mscclpps_names(module):
    namespace = {}
    exec(f"from {module} import *", namespace)
    missing = [name for name in UPSTREAM_STAR_NAMES[module] if name not in namespace]
    assert missing == []
    for name in getattr(importlib.import_module(module), "__all__", ()):
        assert name in namespace  # every listed name exists


def test_rank_copy_and_reduce_signatures_work_both_ways():
    assert list(inspect.signature(Rank.copy).parameters)[:5] == ["self", "dst_chunk", "src_chunk", "tb", "tb_group"]
    assert list(inspect.signature(Rank.reduce).parameters)[:8] == [
        "self", "src_chunk", "other_chunks", "tb", "tb_group", "dst_chunk", "reduce_op", "packet",
    ]
    assert Rank.copy.__doc__ and Rank.copy.__name__ == "copy"
    with CollectiveProgram("c", TestCollective(1, 3, 0), 1) as program:
        rank = Rank(0)
        buffer = rank.get_input_buffer()
        Rank.copy(rank, buffer[0:1], buffer[1:2], tb=0)  # the unbound call of a plain method
        Rank.copy(buffer[1:2], buffer[2:3], tb=0)  # the DSL concepts snippets' class-level form
        Rank.reduce(buffer[0:1], buffer[2:3], tb=0)
    ops = json.loads(program.to_json())["gpus"][0]["threadblocks"][0]["ops"]
    assert [(op["name"], op["dst_buff"][0]["index"]) for op in ops if op["name"] != "nop"] == [
        ("copy", 0), ("copy", 1), ("re", 0),
    ]


def test_collectives_take_msccpplangs_extra_arguments():
    collective = AllReduce(8, 1, True, num_ranks_per_node=4, num_chunk_groups=8)
    assert (collective.num_ranks_per_node, collective.num_chunk_groups) == (4, 8)
    assert AllGather(4, 1, True).num_ranks_per_node == 4
    with pytest.raises(DSLError, match="unexpected keyword argument\\(s\\) chunks"):
        AllReduce(2, 1, True, chunks=3)
