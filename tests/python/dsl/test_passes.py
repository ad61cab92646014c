"""The compiler passes: fusion, data_sync expansion, dependency syncs, replication, pipelines."""
import json

import pytest
from dsl_test_support import compile_plan, op_names

from mscclpp.language import (
    AllGather,
    AllReduce,
    Buffer,
    JSON,
    CollectiveProgram,
    LoopIterationContext,
    MemoryChannel,
    PortChannel,
    Rank,
    ReplicationPolicy,
    Semaphore,
    SyncType,
    TestCollective,
    ThreadBlockGroup,
)


def two_ranks(inputs=4, outputs=4, **options):
    return CollectiveProgram("p", TestCollective(2, inputs, outputs), 2, **options)


# ---- fusion ----


def test_signals_on_distinct_channels_fuse_repeats_do_not():
    with two_ranks() as prog:
        chans = {(r, k): MemoryChannel(1 - r, r) for r in range(2) for k in range(2)}
        for r in range(2):
            chans[(r, 0)].signal(tb=0, data_sync=SyncType.none)
            chans[(r, 1)].signal(tb=0, data_sync=SyncType.none)
            chans[(r, 1)].signal(tb=0, data_sync=SyncType.none)
            for k in (0, 1, 1):
                chans[(r, k)].wait(tb=0, data_sync=SyncType.none)
    ops = compile_plan(prog)["gpus"][0]["threadblocks"][0]["ops"]
    assert [(o["name"], o["channel_ids"]) for o in ops] == [
        ("signal", [0, 1]),
        ("signal", [1]),
        ("wait", [0, 1]),
        ("wait", [1]),
    ]


def test_relaxed_and_strict_signals_stay_apart_syncs_trimmed():
    with two_ranks() as prog:
        for r in range(2):
            c = MemoryChannel(1 - r, r)
            d = MemoryChannel(1 - r, r)
            c.signal(tb=0, relaxed=True)  # both: its "after" nop is dropped, d's "before" is kept
            d.signal(tb=0)
            c.wait(tb=0, relaxed=True)
            d.wait(tb=0)
    assert op_names(compile_plan(prog)) == ["nop", "rlxsignal", "nop", "signal", "nop", "rlxwait", "nop", "wait", "nop"]


def test_reduce_put_fuses_to_res_and_read_reduce_put_to_rres():
    with two_ranks() as prog:
        for r in range(2):
            rank, peer = Rank(r), Rank(1 - r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            c = MemoryChannel(1 - r, r)
            rank.reduce(inp[0:1], [inp[1:2]], tb=0, dst_chunk=out[0:1])
            c.put(peer.get_output_buffer()[0:1], out[0:1], tb=0)
            c.reduce(inp[2:3], [peer.get_input_buffer()[2:3]], tb=1)
            c.put(peer.get_output_buffer()[2:3], inp[2:3], tb=1)
    plan = compile_plan(prog)
    assert op_names(plan, 0, 0) == ["res"]
    assert op_names(plan, 0, 1) == ["rres"]
    rres = plan["gpus"][0]["threadblocks"][1]["ops"][0]
    assert rres["src_buff"] == [{"type": "i", "index": 2, "size": 1}, {"buffer_id": 0, "index": 2, "size": 1}]
    assert rres["channel_type"] == "memory"


def test_put_to_another_chunk_does_not_fuse_with_the_reduce():
    with two_ranks() as prog:
        rank = Rank(0)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        rank.reduce(inp[0:1], [inp[1:2]], tb=0, dst_chunk=out[0:1])
        MemoryChannel(1, 0).put(Rank(1).get_output_buffer()[0:1], inp[3:4], tb=0)
    assert op_names(compile_plan(prog)) == ["re", "put"]


def test_packet_fusions_respkt_recpkt_recspkt():
    with CollectiveProgram("p", TestCollective(2, 1, 0), 2, protocol="LL") as prog:
        s0, s1 = Buffer(0, 4), Buffer(1, 4)
        rank = Rank(0)
        inp = rank.get_input_buffer()
        c = MemoryChannel(1, 0)
        rank.reduce(s0[0:1], [s0[1:2]], tb=0, dst_chunk=s0[2:3], packet=True)
        c.put_packets(s1[3:4], s0[2:3], tb=0)  # -> respkt
        rank.reduce(inp[0:1], [s0[0:1]], tb=1, packet=True)
        rank.copy_packets(s0[3:4], inp[0:1], tb=1)  # -> recpkt
        rank.reduce(inp[0:1], [s0[1:2]], tb=2, packet=True)
        rank.copy_packets(s0[3:4], inp[0:1], tb=2)
        c.read_put_packets(s1[0:1], s0[3:4], tb=2)  # -> recspkt
    plan = compile_plan(prog)
    assert [op_names(plan, 0, t) for t in range(3)] == [["respkt"], ["recpkt"], ["recspkt"]]
    recspkt = plan["gpus"][0]["threadblocks"][2]["ops"][0]
    assert recspkt["dst_buff"] == [
        {"type": "i", "index": 0, "size": 1},
        {"type": "s", "index": 3, "size": 1},
        {"buffer_id": 0, "index": 0, "size": 1},
    ]


def test_switch_reduce_then_broadcast_fuses_to_glres():
    # A reduce alone keeps its glre, in both forms.
    from mscclpp.language import BufferType, SwitchChannel

    with CollectiveProgram("p", AllReduce(2, 1, True), 2) as prog:
        switch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.input)
        inp = Rank(0).get_input_buffer()
        switch.at_rank(0).reduce(buffer_offset=0, size=1, dst_chunk=inp[0:1], tb=0)
        switch.at_rank(0).broadcast(src_chunk=inp[0:1], buffer_offset=0, size=1, tb=0)
        switch.at_rank(0).reduce(buffer_offset=1, size=1, dst_chunk=inp[1:2], tb=1)
    plan = compile_plan(prog)
    assert op_names(plan, 0, 0) == ["glres"]
    glre = plan["gpus"][0]["threadblocks"][1]["ops"][0]
    assert glre["src_buff"] == [{"switch_channel_id": 0, "index": 1, "size": 1}]
    assert glre["dst_buff"] == [{"type": "i", "index": 1, "size": 1}]
    assert glre["dst_chunk"] == {"rank": 0, "type": "i", "index": 1, "size": 1}
    assert (glre["buffer_type"], glre["buffer_offset"], glre["size"]) == ("i", 1, 1)


def test_instr_fusion_off_keeps_ops_apart():
    def build(fusion):
        with two_ranks(instr_fusion=fusion) as prog:
            for r in range(2):
                a, b = MemoryChannel(1 - r, r), MemoryChannel(1 - r, r)
                a.signal(tb=0, data_sync=SyncType.none)
                b.signal(tb=0, data_sync=SyncType.none)
                a.wait(tb=0, data_sync=SyncType.none)
                b.wait(tb=0, data_sync=SyncType.none)
        return op_names(compile_plan(prog))

    assert build(True) == ["signal", "wait"]
    assert build(False) == ["signal", "signal", "wait", "wait"]


def test_gets_puts_and_port_puts_fuse():
    with two_ranks() as prog:
        for r in range(2):
            mine, theirs = Rank(r).get_input_buffer(), Rank(1 - r).get_input_buffer()
            m = MemoryChannel(1 - r, r)
            m.get(mine[0:1], theirs[1:2], tb=0)
            m.get(mine[2:3], theirs[3:4], tb=0)
            p1, p2 = PortChannel(1 - r, r), PortChannel(1 - r, r)
            p1.put(theirs[0:1], mine[0:1], tb=1)
            p2.put(theirs[1:2], mine[1:2], tb=1)
            p1.flush(tb=1, data_sync=SyncType.none)
            p2.flush(tb=1, data_sync=SyncType.none)
    plan = compile_plan(prog)
    get = plan["gpus"][0]["threadblocks"][0]["ops"][0]
    assert (get["name"], len(get["src_buff"]), get["channel_ids"]) == ("get", 2, [0, 0])
    port = plan["gpus"][0]["threadblocks"][1]["ops"]
    assert [(o["name"], o["channel_ids"]) for o in port] == [("put", [0, 1]), ("flush", [0, 1])]


# ---- data_sync and dependency syncs ----


def test_data_sync_expansion():
    with CollectiveProgram("p", TestCollective(1, 0, 0), 1) as prog:
        sem = Semaphore(0, 0)
        sem.release(tb=0, data_sync=SyncType.before)
        sem.acquire(tb=1, data_sync=SyncType.after)
        sem.release(tb=2, data_sync=SyncType.none)
        sem.acquire(tb=3, sync="both")
    plan = compile_plan(prog)
    assert [op_names(plan, 0, t) for t in range(4)] == [
        ["nop", "sem_release"],
        ["sem_acquire", "nop"],
        ["sem_release"],
        ["nop", "sem_acquire", "nop"],
    ]


@pytest.mark.parametrize(
    "first, second, synced",
    [
        (("i", 0, "o", 0), ("o", 0, "s", 0), True),  # RAW: reads what the first wrote
        (("i", 0, "o", 0), ("s", 0, "i", 0), True),  # WAR: writes what the first read
        (("i", 0, "o", 0), ("s", 0, "o", 0), True),  # WAW
        (("i", 0, "o", 0), ("i", 0, "s", 0), False),  # RAR: no hazard
        (("i", 0, "o", 0), ("i", 1, "o", 1), False),  # disjoint
    ],
)
def test_dependency_syncs(first, second, synced):
    with CollectiveProgram("p", TestCollective(1, 2, 2), 1) as prog:
        rank = Rank(0)
        scratch = Buffer(0, 2)
        buffers = {"i": rank.get_input_buffer(), "o": rank.get_output_buffer(), "s": scratch}
        for src_b, src_i, dst_b, dst_i in (first, second):
            rank.copy(buffers[dst_b][dst_i : dst_i + 1], buffers[src_b][src_i : src_i + 1], tb=0)
    assert op_names(compile_plan(prog)) == (["copy", "nop", "copy"] if synced else ["copy", "copy"])


def test_dependency_syncs_partial_overlap_and_reset_by_barrier():
    with CollectiveProgram("p", TestCollective(1, 4, 4), 1) as prog:
        rank = Rank(0)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        rank.copy(out[0:2], inp[0:2], tb=0)
        rank.copy(inp[2:4], out[2:4], tb=0)  # no overlap with out[0:2]
        rank.copy(inp[0:1], out[1:2], tb=0)  # reads out[1] written by the first copy: nop
        rank.barrier(tb_list=[0])
        rank.copy(out[1:2], inp[0:1], tb=0)  # after an explicit sync: no hazard left
    assert op_names(compile_plan(prog)) == ["copy", "copy", "nop", "copy", "nop", "copy"]


def test_auto_sync_off():
    with CollectiveProgram("p", TestCollective(1, 1, 1), 1, auto_sync=False) as prog:
        rank = Rank(0)
        rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        rank.copy(rank.get_input_buffer()[0:1], rank.get_output_buffer()[0:1], tb=0)
    assert op_names(compile_plan(prog)) == ["copy", "copy"]


def test_packet_reduce_orders_its_plain_operand():
    # A deliberate difference from the reference: src[0] of a packet reduce is plain data.
    with CollectiveProgram("p", TestCollective(1, 1, 0), 1, protocol="LL") as prog:
        rank = Rank(0)
        scratch = Buffer(0, 2)
        inp = rank.get_input_buffer()
        rank.unpack_packets(inp[0:1], scratch[0:1], tb=0)
        rank.reduce(inp[0:1], [scratch[1:2]], tb=0, packet=True)
    assert op_names(compile_plan(prog)) == ["upkt", "nop", "repkt"]


# ---- replication ----


def replicated(policy):
    with CollectiveProgram("p", AllGather(2, 2, False), 2, instances=2, replication_policy=policy) as prog:
        chans = {r: MemoryChannel(1 - r, r) for r in range(2)}
        sems = {r: Semaphore(r, 0) for r in range(2)}
        for r in range(2):
            rank = Rank(r)
            chans[r].put(Rank(1 - r).get_output_buffer()[2 * r : 2 * r + 2], rank.get_input_buffer()[0:2], tb=1)
            chans[r].signal(tb=1, data_sync=SyncType.before)
            sems[r].release(tb=1)
            sems[r].acquire(tb=0)
            chans[r].wait(tb=0)
            rank.barrier(tb_list=[0, 1])
    return compile_plan(prog)


def test_replication_interleaved():
    plan = replicated(ReplicationPolicy.interleaved)
    g = plan["gpus"][1]
    assert (g["input_chunks"], g["output_chunks"]) == (4, 8)
    assert [tb["id"] for tb in g["threadblocks"]] == [0, 1, 2, 3]
    assert g["channels"] == [{"channel_type": "memory", "connected_to": [0, 0]}]
    assert g["semaphores"] == [{"init_value": 0}, {"init_value": 0}]
    put = lambda k: g["threadblocks"][2 + k]["ops"][0]  # noqa: E731  (original tb 1, instance k)
    # chunk c of size s of instance k -> c*2 + k*s
    assert [put(k)["src_buff"][0]["index"] for k in (0, 1)] == [0, 2]
    assert [put(k)["dst_buff"][0]["index"] for k in (0, 1)] == [4, 6]
    assert [g["threadblocks"][2 + k]["channels"][0]["channel_ids"] for k in (0, 1)] == [[0], [1]]
    releases = [[o for o in g["threadblocks"][2 + k]["ops"] if o["name"] == "sem_release"][0] for k in (0, 1)]
    assert [r["semaphore_ids"] for r in releases] == [[0], [1]]
    barriers = [[o for o in g["threadblocks"][k]["ops"] if o["name"] == "barrier"][0] for k in (0, 1)]
    assert [(b["barrier_id"], b["num_threadblocks"]) for b in barriers] == [(0, 2), (1, 2)]


def test_replication_none_uses_contiguous_blocks():
    plan = replicated("none")
    g = plan["gpus"][1]
    put = lambda k: g["threadblocks"][2 + k]["ops"][0]  # noqa: E731
    # instance k works on block k: chunk c -> c + k*chunks(buffer); input has 2 chunks, output 4
    assert [put(k)["src_buff"][0]["index"] for k in (0, 1)] == [0, 2]
    assert [put(k)["dst_buff"][0]["index"] for k in (0, 1)] == [2, 6]


def test_replication_none_single_chunk_differs_from_interleaved():
    def indexes(policy):
        with CollectiveProgram("p", TestCollective(1, 4, 4), 1, instances=2, replication_policy=policy) as prog:
            rank = Rank(0)
            rank.copy(rank.get_output_buffer()[1:2], rank.get_input_buffer()[3:4], tb=0)
        ops = [tb["ops"][0] for tb in compile_plan(prog)["gpus"][0]["threadblocks"]]
        return [(o["src_buff"][0]["index"], o["dst_buff"][0]["index"]) for o in ops]

    assert indexes(ReplicationPolicy.interleaved) == [(6, 2), (7, 3)]
    assert indexes(ReplicationPolicy.none) == [(3, 1), (7, 5)]


# ---- pipelines and threadblock groups ----


def test_pipeline_body_is_fused_and_synced():
    with two_ranks() as prog:
        for r in range(2):
            rank = Rank(r)
            c = MemoryChannel(1 - r, r)
            with LoopIterationContext(unit=4096, num_chunks=2):
                rank.copy(rank.get_output_buffer()[0:2], rank.get_input_buffer()[0:2], tb=0)
                c.signal(tb=0, data_sync=SyncType.before)
                c.wait(tb=0, data_sync=SyncType.after)
            rank.copy(rank.get_input_buffer()[2:4], rank.get_output_buffer()[0:2], tb=0)
    tb = compile_plan(prog)["gpus"][0]["threadblocks"][0]
    pipeline = tb["ops"][0]
    assert pipeline["iter_context"] == {"unit_size": 4096, "num_chunks": 2}
    assert [o["name"] for o in pipeline["ops"]] == ["copy", "nop", "signal", "wait", "nop"]
    # the copy after the loop reads what the loop wrote: a nop (the body ends
    # with one, but the dependency pass treats the pipeline as one op)
    assert [o["name"] for o in tb["ops"]] == ["pipeline", "nop", "copy"]


def test_threadblock_group_splits_an_op():
    with CollectiveProgram("p", TestCollective(1, 1, 1), 1) as prog:
        rank = Rank(0)
        rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb_group=ThreadBlockGroup([2, 0]))
    tbs = compile_plan(prog)["gpus"][0]["threadblocks"]
    assert [tb["ops"][0]["tbg_info"] for tb in (tbs[2], tbs[0])] == [{"tb_id": 0, "tbg_size": 2}, {"tb_id": 1, "tbg_size": 2}]
    assert tbs[1]["ops"] == []


def test_json_is_indented_by_default_compact_on_request():
    with CollectiveProgram("p", TestCollective(1, 1, 1), 1) as prog:
        rank = Rank(0)
        rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        from_general = JSON()
    compact = prog.to_json(indent=None)
    assert "\n" not in compact and ": " not in compact
    indented = prog.to_json()
    assert indented == prog.to_json(indent=2) == from_general
    assert json.loads(indented) == json.loads(compact)
    assert indented.startswith('{\n  "name": "p"')
    assert JSON.__defaults__ == (2,)
    assert json.loads(compact)["format_version"] == 1
