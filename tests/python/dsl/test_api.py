"""The public API surface: modules, collectives, program options, MSCCL++'s alternative spellings."""
import json

import pytest
from dsl_test_support import compile_plan, op_names

import mscclpp
from mscclpp.language import (
    JSON,
    AlgoSpec,
    AllGather,
    AllReduce,
    AllToAll,
    Broadcast,
    Buffer,
    BufferType,
    Channel,
    ChannelType,
    CollectiveProgram,
    DSLError,
    Gather,
    Loop,
    MemoryChannel,
    PortChannel,
    Rank,
    Reduce,
    ReduceOperationType,
    ReduceScatter,
    Scatter,
    SendRecv,
    SyncType,
    TestCollective,
)


def test_mscclpp_module_layout_and_star_imports():
    namespace = {}
    for module in ("channel", "rank", "general", "program", "collectives", "loop", "thread_block_group", "utils"):
        exec(f"from mscclpp.language.{module} import *", namespace)
    for name in ("MemoryChannel", "Rank", "JSON", "CollectiveProgram", "AllReduce", "LoopIterationContext",
                 "ThreadBlockGroup", "AlgoSpec", "SyncType", "BufferType", "ReduceOperationType", "ChannelType"):
        assert name in namespace, name
    from mscclpp.language.internal.types import SyncType as internal_sync

    assert internal_sync is SyncType
    assert mscclpp.DSLError is DSLError


@pytest.mark.parametrize(
    "collective, sizes",
    [
        (AllReduce(4, 2, True), (8, 8)),
        (AllGather(4, 2, True), (2, 8)),
        (ReduceScatter(4, 2, False), (8, 2)),
        (AllToAll(4, 2, False), (8, 8)),
        (SendRecv(2, 3, False), (3, 3)),
        (Broadcast(4, 2, True, root=1), (2, 2)),
        (Reduce(4, 2, False, root=3), (2, 2)),
        (Gather(4, 2, True, root=1), (2, 8)),
        (Scatter(4, 2, False, root=3), (8, 2)),
        (TestCollective(4, 5, 6), (5, 6)),
    ],
)
def test_collective_buffer_sizes(collective, sizes):
    with CollectiveProgram("p", collective, collective.num_ranks):
        rank = Rank(0)
        assert (len(rank.get_input_buffer()), len(rank.get_output_buffer())) == sizes


def test_rooted_collectives_emit_root():
    with CollectiveProgram("b", Broadcast(2, 1, False, root=1), 2) as prog:
        pass
    plan = compile_plan(prog)
    assert (plan["collective"], plan["root"]) == ("broadcast", 1)
    with pytest.raises(DSLError):
        Broadcast(2, 1, False, root=2)
    for cls, name in ((Gather, "gather"), (Scatter, "scatter")):
        with CollectiveProgram("g", cls(4, 1, True, root=3), 4) as prog:
            pass
        plan = compile_plan(prog)
        assert (plan["collective"], plan["root"], plan["inplace"]) == (name, 3, True)
        with pytest.raises(DSLError, match="root -1 is not a rank of a 4-rank collective"):
            cls(4, 1, False, root=-1)


def test_program_settings_reach_the_plan():
    spec = AlgoSpec(
        name="spec",
        collective=AllReduce(2, 1, False),
        nranks_per_node=2,
        world_size=2,
        in_place=False,
        instances=1,
        protocol="LL",
        num_threads_per_block=512,
        use_double_scratch_buffer=True,
        min_message_size=16,
        max_message_size=1024,
        reuse_resources=True,
        tags={"x"},
    )
    with CollectiveProgram.from_spec(spec) as prog:
        text = JSON()
    plan = json.loads(text)
    assert {k: plan[k] for k in ("name", "protocol", "inplace", "reuse_resources", "num_threads_per_block",
                                  "use_double_scratch_buffer", "min_message_size", "max_message_size", "tags")} == {
        "name": "spec", "protocol": "LL", "inplace": False, "reuse_resources": True, "num_threads_per_block": 512,
        "use_double_scratch_buffer": True, "min_message_size": 16, "max_message_size": 1024, "tags": ["x"],
    }
    assert prog.to_json() == text  # compiled once, same text


def test_plan_key_order_follows_the_reference():
    with CollectiveProgram("p", TestCollective(1, 0, 0), 1) as prog:
        pass
    assert list(json.loads(prog.to_json())) == [
        "name", "collective", "protocol", "inplace", "reuse_resources", "gpus", "num_threads_per_block",
        "use_double_scratch_buffer", "buffer_alignment", "min_message_size", "max_message_size", "format_version",
    ]


def test_mscclpp_spellings_are_aliases():
    with CollectiveProgram("p", AllReduce(2, 1, True), 2) as prog:
        assert Buffer.input is BufferType.input and Buffer.scratch is BufferType.scratch
        assert ChannelType.sm is ChannelType.memory and Channel.memory is ChannelType.memory
        port = Channel(1, 0, channel_type="proxy", tag=7)
        assert isinstance(port, PortChannel)
        a, b = Channel(1, 0), Channel(0, 1, Channel.memory)
        assert isinstance(a, MemoryChannel)
        a.relaxedSignal(tb=0, data_sync=SyncType.none)
        b.relaxedWait(tb=0, sync="after")
        rank = Rank(0)
        inp = rank.get_input_buffer()
        rank.reduce(inp[0:1], inp[1:2], op="max", tb=1)
        Rank.copy(inp[1:2], inp[0:1], tb=2)
        sem = Rank.Semaphore(rank=0, size=1)
        sem.release(tb=3, sync="before")
        with Loop.iteration(unit=1024, num_chunks=1) as it:
            rank.copy(inp[0:1], inp[1:2], tb=4, iter_context=it)
    plan = compile_plan(prog)
    assert op_names(plan, 0, 0) == ["rlxsignal"]
    assert op_names(plan, 1, 0) == ["rlxwait", "nop"]
    assert plan["gpus"][0]["threadblocks"][1]["ops"][0]["reduce_op"] == "max"
    assert op_names(plan, 0, 2) == ["copy"]
    assert op_names(plan, 0, 3) == ["nop", "sem_release"]
    assert op_names(plan, 0, 4) == ["pipeline"]


def test_reduce_operation_types():
    assert [op.value for op in ReduceOperationType] == ["sum", "prod", "min", "max"]
    with CollectiveProgram("p", TestCollective(1, 2, 0), 1):
        rank = Rank(0)
        with pytest.raises(DSLError, match="invalid reduce operation 'avg'"):
            rank.reduce(rank.get_input_buffer()[0:1], [rank.get_input_buffer()[1:2]], tb=0, op="avg")


def test_program_outlives_its_block_and_blocks_do_not_nest():
    with CollectiveProgram("p", TestCollective(1, 1, 1), 1) as prog:
        rank = Rank(0)
        rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        with pytest.raises(DSLError, match="cannot be nested"):
            with CollectiveProgram("q", TestCollective(1, 1, 1), 1):
                pass
    assert op_names(compile_plan(prog)) == ["copy"]


def test_gc_state_is_restored():
    import gc

    assert gc.isenabled()
    with CollectiveProgram("p", TestCollective(1, 1, 1), 1):
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.parametrize("compiled", [False, True])
def test_reference_counting_frees_a_program(compiled):
    # A program holds a million objects at 64 ranks: a reference cycle through it would leave them
    # to the cycle collector, a full scan of the heap at the process's exit.
    import gc
    import weakref

    import allreduce_allpairs

    gc.disable()
    try:
        program = allreduce_allpairs.build(num_gpus=4)
        if compiled:
            program.to_json()
        freed = weakref.ref(program)
        del program
        assert freed() is None
    finally:
        gc.enable()
