"""MSCCLPPLang: complete programs compile to plans our loader accepts and our executor
(CPU emulation) runs with the right result; the API's shape and semantics; errors at the user's line."""
import inspect
import json
import os
import subprocess
import sys

import legacy_programs as programs
import pytest
from dsl_test_support import HERE, REPO

from mscclpp.cli.tools import find_tool
from mscclpp.language import *  # noqa: F403 (the way MSCCLPPLang programs import it)
from mscclpp.language.buffer import Buffer
from mscclpp.language.collectives import AllGather, AllReduce, AllToAll, ReduceScatter, SendRecv
from mscclpp.language.types import ChannelType, DataFormat, ReplicationPolicy

THIS = __file__
SIZES = (2, 4, 8)

# (program, keyword arguments, rank counts it is written for)
CASES = [
    ("allreduce_allpairs", {}, SIZES),
    ("allreduce_allpairs", {"inplace": False, "instances": 2}, SIZES),
    ("allreduce_allpairs", {"instances": 3, "policy": ReplicationPolicy.interleaved}, SIZES),
    ("allreduce_get", {}, SIZES),
    ("allreduce_get", {"inplace": True, "num_tb": 2}, SIZES),
    ("allreduce_packets", {}, SIZES),
    ("allreduce_packets", {"inplace": True}, SIZES),
    ("allreduce_ring", {}, SIZES),
    ("allreduce_nvls", {}, SIZES),
    ("sendrecv_proxy", {}, SIZES),
    ("sendrecv_packets", {}, (2,)),
    ("sendrecv_packets", {"chan_type": ChannelType.proxy}, (2,)),
    ("allgather_barrier", {}, SIZES),
    ("allgather_barrier", {"inplace": True}, SIZES),
    ("alltoall_proxy", {}, SIZES),
]
PARAMS = [(name, kwargs, n) for name, kwargs, sizes in CASES for n in sizes]


def case_id(param):
    name, kwargs, n = param
    extra = "".join(f"-{k}={getattr(v, 'name', v)}" for k, v in kwargs.items())
    return f"{name}{extra}-n{n}"


def tool(name):
    path, _ = find_tool(name)
    if path is None:
        pytest.skip(f"{name} not built (set MSCCLPP_BUILD_DIR)")
    return path


def message_bytes(plan):
    gpu = plan["gpus"][0]
    chunks = gpu["output_chunks"] if plan["collective"] == "allgather" else gpu["input_chunks"]
    return chunks * 256


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every case compiled once: {case id: (plan dict, path)}; all validated in one mscclpp-plan run."""
    folder = tmp_path_factory.mktemp("legacy_plans")
    result = {}
    for name, kwargs, n in PARAMS:
        program = getattr(programs, name)(n, **kwargs)
        text = program.to_json(indent=None)
        path = folder / f"{case_id((name, kwargs, n))}.json"
        path.write_text(text)
        result[case_id((name, kwargs, n))] = (json.loads(text), str(path), program)
    return result


def test_every_plan_loads_in_the_cpp_loader(compiled):
    validate = tool("mscclpp-plan")
    paths = [path for _, path, _ in compiled.values()]
    run = subprocess.run([validate, "validate", *paths], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(": OK") == len(paths)


@pytest.mark.parametrize("param", PARAMS, ids=[case_id(p) for p in PARAMS])
def test_program_leaves_the_collective_result(param, compiled):
    _, _, program = compiled[case_id(param)]
    assert program.collective.check(program) is True


@pytest.mark.parametrize("param", PARAMS, ids=[case_id(p) for p in PARAMS])
def test_program_runs_correctly_in_the_emulator(param, compiled):
    plan, path, _ = compiled[case_id(param)]
    n = param[2]
    emulate = tool("mscclpp-emulate")
    run = subprocess.run(
        [emulate, path, "--ranks", str(n), "--size", str(message_bytes(plan)), "--iterations", "3"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_json_prints_the_plan_and_check_says_it_is_right(capsys):
    program = programs.allreduce_ring(4, emit=True)
    out, err = capsys.readouterr()
    plan = json.loads(out)
    assert out.startswith('{\n  "name": "legacy_allreduce_ring"')  # indented, as MSCCLPPLang printed it
    assert (plan["name"], plan["collective"], plan["format_version"]) == ("legacy_allreduce_ring", "allreduce", 1)
    assert "Check: legacy_allreduce_ring: allreduce result correct on all 4 rank(s)" in err
    assert program.to_json() == out.rstrip("\n")


def test_check_reports_a_wrong_result(capsys):
    # The duplicated policy gives each instance a contiguous half of every
    # buffer, which mixes up the peers' all-to-all blocks: Check() says so, as
    # the emulator does.
    with MSCCLPPProgram("a2a", AllToAll(2, 1, False), 2, 2) as program:
        for r in range(2):
            chunk(r, Buffer.input, r).copy(r, Buffer.output, r, sendtb=0)
            peer = 1 - r
            chunk(r, Buffer.input, peer).put(peer, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.input, peer).signal(peer, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.output, peer).wait(peer, Buffer.input, r, recvtb=0)
        assert Check() is False
    err = capsys.readouterr().err
    assert "Check: a2a: alltoall result wrong" in err
    assert "rank 0 output chunk 1: expected rank 0's input chunk 1, got rank 1's input chunk 0" in err
    assert program.replication_policy is ReplicationPolicy.duplicated  # MSCCLPPLang's default


def test_check_reports_a_missing_step(capsys):
    with MSCCLPPProgram("ag", AllGather(2, 1, False), 2, 1):
        for r in range(2):
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r, sendtb=0)
        chunk(0, Buffer.input, 0).put(1, Buffer.output, 0, sendtb=0)
        assert Check() is False
    assert "rank 0 output chunk 1: expected rank 1's input chunk 0, got nothing defined" in capsys.readouterr().err


def test_check_reports_a_deadlock_at_the_check():
    with MSCCLPPProgram("sr", SendRecv(2, 1, False), 2, 1, protocol="LL"):
        for r in range(2):
            chunk(r, Buffer.scratch, 0).copy_packet(r, Buffer.output, 0, sendtb=0)  # nobody sends the packets
        line = inspect.currentframe().f_lineno + 2
        with pytest.raises(DSLError) as error:
            Check()
    assert str(error.value).startswith(f"{THIS}:{line}: check: the plan deadlocks; blocked: rank 0 threadblock 0 op 0 (upkt)")


# ---- the model: sizes, layout, replication, channels ----


def test_allreduce_sizes_are_legacy_only_in_msccpplang():
    collective = AllReduce(4, 2, False)
    with MSCCLPPProgram("legacy", collective, 4, 1) as legacy:
        chunk(0, Buffer.input, 1).copy(0, Buffer.output, 1, sendtb=0)
    with CollectiveProgram("current", collective, 4) as current:
        Rank(0).copy(Rank(0).get_output_buffer()[0:1], Rank(0).get_input_buffer()[0:1], tb=0)
    with MSCCLPPProgram("early_current", collective, 4) as early:  # MSCCLPPProgram with the current API
        Rank(0).copy(Rank(0).get_output_buffer()[7:8], Rank(0).get_input_buffer()[7:8], tb=0)
    assert [json.loads(p.to_json())["gpus"][0]["input_chunks"] for p in (legacy, current, early)] == [2, 8, 8]
    assert early.replication_policy is ReplicationPolicy.interleaved and early.model == "current"
    assert legacy.replication_policy is ReplicationPolicy.duplicated and legacy.model == "legacy"


def test_in_place_references_name_the_buffer_they_alias():
    with MSCCLPPProgram("ag", AllGather(4, 1, True), 4, 1):
        assert chunk(2, Buffer.input, 0) == chunk(2, Buffer.output, 2)
    with MSCCLPPProgram("ar", AllReduce(2, 2, True), 2, 1):
        assert chunk(1, Buffer.output, 1).buffer is BufferType.input
    with MSCCLPPProgram("rs", ReduceScatter(2, 2, True), 2, 1):
        ref = chunk(1, Buffer.output, 1)
        assert (ref.buffer, ref.index) == (BufferType.input, 3)


@pytest.mark.parametrize("policy,indexes", [(None, [1, 3, 5]), (ReplicationPolicy.interleaved, [3, 4, 5])])
def test_instances_replicate_as_the_legacy_compiler(policy, indexes):
    # duplicated (the default): instance k works on block k (index + k*chunks);
    # interleaved: index*instances + k*size. Threadblock t of instance k is
    # t*instances + k.
    kwargs = {} if policy is None else {"replication_policy": policy}
    with MSCCLPPProgram("rep", AllReduce(2, 2, False), 2, 3, **kwargs) as program:
        chunk(0, Buffer.input, 1).copy(0, Buffer.output, 1, sendtb=1)
    tbs = json.loads(program.to_json())["gpus"][0]["threadblocks"]
    copies = [tb["ops"][0]["src_buff"][0]["index"] for tb in tbs if tb["ops"]]
    assert [tb["id"] for tb in tbs if tb["ops"]] == [3, 4, 5]
    assert copies == indexes


def test_channels_pair_as_in_legacy_plans():
    # A rank keeps one channel per (local buffer, remote buffer, type,
    # threadblock, peer); both sides number them in that order, so the signal on
    # rank 0's (input, output) channel of threadblock 1 meets the wait rank 1
    # does on its (input, output) channel, whatever threadblock that is in.
    with MSCCLPPProgram("pairs", AllGather(2, 1, False), 2, 1) as program:
        for r, tb in ((0, 1), (1, 3)):
            peer = 1 - r
            mine = chunk(r, Buffer.input, 0)
            mine.put(peer, Buffer.output, r, sendtb=tb)
            mine.signal(peer, Buffer.output, r, sendtb=tb)
            mine.copy(r, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.output, peer).wait(peer, Buffer.input, 0, recvtb=tb)
        assert Check()
    plan = json.loads(program.to_json())
    assert [c["connected_to"] for c in plan["gpus"][0]["channels"]] == [[1]]
    assert plan["gpus"][1]["threadblocks"][3]["channels"] == [{"channel_type": "memory", "channel_ids": [0]}]


def test_a_misnamed_wait_channel_is_a_pairing_error():
    # The legacy compiler keys a wait's channel (signaller's buffer, waiter's
    # buffer): naming the wrong buffer puts rank 1's wait on a second channel,
    # which rank 0 does not have, so the wait never meets the signal (made on
    # the channel of rank 0's put).
    with MSCCLPPProgram("bad", AllGather(2, 1, False), 2, 1) as program:
        for r in range(2):
            chunk(r, Buffer.input, 0).put(1 - r, Buffer.output, r, sendtb=0)
        chunk(0, Buffer.input, 0).signal(1, Buffer.output, 0, sendtb=0)
        line = inspect.currentframe().f_lineno + 1
        chunk(1, Buffer.output, 0).wait(0, Buffer.output, 0, recvtb=0)
    with pytest.raises(DSLError) as error:
        program.to_json()
    assert str(error.value).startswith(f"{THIS}:{line}: wait on rank 1's memory channel #1 to rank 0 cannot pair")


def allgather_waiting_on(index):
    with MSCCLPPProgram("ag_wait", AllGather(2, 1, False), 2, 1) as program:
        for r in range(2):
            peer = 1 - r
            chunk(r, Buffer.input, 0).copy(r, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.input, 0).put(peer, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.input, 0).signal(peer, Buffer.output, r, sendtb=0)
            chunk(r, Buffer.output, peer).wait(peer, Buffer.input, index(peer), recvtb=0)
        assert Check()
    return program.to_json()


def test_a_wait_past_the_buffer_end_warns_and_compiles():
    # A wait moves no data: MSCCL++'s legacy compiler accepted any chunk index
    # there, so it is a warning at the wait's line, and the plan is the one the
    # in-bounds index gives.
    line = inspect.getsourcelines(allgather_waiting_on)[1] + 7
    with pytest.warns(DSLWarning) as caught:
        past_the_end = allgather_waiting_on(lambda peer: 5)
    assert [(w.filename, w.lineno) for w in caught] == [(THIS, line)] * 2
    assert "wait: chunks [5:6] are out of bounds for rank 1's input buffer, which has 1 chunk(s); a wait moves no " \
        "data" in str(caught[0].message)
    assert past_the_end == allgather_waiting_on(lambda peer: 0)


def test_port_put_packet_packs_into_the_temporary_buffer():
    program = programs.sendrecv_packets(2, chunks=2, chan_type=ChannelType.proxy)
    ops = json.loads(program.to_json())["gpus"][0]["threadblocks"][0]["ops"]
    names = [op["name"] for op in ops]
    assert names[:3] == ["cpkt", "nop", "ppkt"]
    assert ops[0]["dst_buff"] == [{"type": "s", "index": 2, "size": 2}]
    assert ops[2]["channel_type"] == "port" and ops[2]["src_buff"] == ops[0]["dst_buff"]


def test_put_packet_of_packets_forwards_them():
    with MSCCLPPProgram("fwd", SendRecv(2, 1, False), 2, 1, protocol="LL") as program:
        chunk(0, Buffer.scratch, 0).put_packet(1, Buffer.scratch, 1, sendtb=0, src_format=DataFormat.packet)
    assert json.loads(program.to_json())["gpus"][0]["threadblocks"][0]["ops"][0]["name"] == "rppkt"


def test_scratch_index_minus_one_appends():
    with MSCCLPPProgram("app", AllReduce(2, 2, False), 2, 1, protocol="LL"):
        first = chunk(0, Buffer.input, 0).put_packet(1, Buffer.scratch, sendtb=0)
        second = chunk(0, Buffer.input, 1).put_packet(1, Buffer.scratch, sendtb=0)
        assert (first.index, second.index) == (0, 1)


def test_the_api_has_msccpplangs_parameters():
    expected = {
        "put": ["dst", "buffer", "index", "sendtb", "chan_type", "chunk"],
        "get": ["src", "buffer", "index", "recvtb", "chan_type", "chunk"],
        "signal": ["dst", "buffer", "index", "sendtb", "chan_type"],
        "wait": ["src", "buffer", "index", "recvtb", "chan_type"],
        "flush": ["dst", "buffer", "index", "sendtb", "chan_type"],
        "copy": ["dst", "buffer", "index", "sendtb"],
        "reduce": ["other_chunkref", "recvtb", "channel_type"],
        "put_packet": ["dst", "buffer", "index", "sendtb", "src_format", "chan_type", "temp_buffer", "temp_buffer_index", "chunk"],
        "packet_put": ["dst", "buffer", "index", "sendtb", "src_format", "chan_type", "temp_buffer", "temp_buffer_index", "chunk"],
        "copy_packet": ["dst", "buffer", "index", "sendtb"],
        "reduce_packet": ["other_chunkref", "recvtb"],
        "group_load_reduce": ["other_chunkrefs", "recvtb", "chan_type"],
        "group_store": ["dsts", "index", "buffer", "sendtb", "chan_type"],
    }
    with MSCCLPPProgram("api", AllReduce(2, 2, True), 2, 1):
        ref = chunk(0, Buffer.input, 0, 2)
        for name, parameters in expected.items():
            assert list(inspect.signature(getattr(ref, name)).parameters) == parameters, name
        assert [r.index for r in ref.split(2)] == [0, 1]
        assert ref.split(2)[0].group(ref.split(2)[1]) == ref
    assert list(inspect.signature(chunk).parameters) == ["rank", "buffer", "index", "size"]
    assert list(inspect.signature(MSCCLPPProgram).parameters)[:11] == [
        "name", "collective", "num_ranks", "instances", "protocol", "instr_fusion", "replication_policy",
        "num_threads_per_block", "use_double_scratch_buffer", "min_message_size", "max_message_size",
    ]
    assert AllReduce(8, 4, True, num_ranks_per_node=4, num_chunk_groups=2).num_ranks_per_node == 4
    assert (ChannelType.sm, ChannelType.proxy, ChannelType.nvls) == (ChannelType.memory, ChannelType.port, ChannelType.switch)
    assert Buffer.intermediate is Buffer.scratch


# ---- mistakes are reported at the user's line ----


def legacy_error(build, text):
    with pytest.raises(DSLError) as error:
        build()
    line = error.value.location[1]
    assert error.value.location[0] == THIS
    assert text in str(error.value)
    return line


def test_errors_point_at_the_users_line():
    def no_threadblock():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).put(1, Buffer.input, 0)

    legacy_error(no_threadblock, "put needs sendtb= (a threadblock id)")

    def out_of_bounds():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 1, 2)

    legacy_error(out_of_bounds, "chunk: chunks [1:3] are out of bounds for rank 0's input buffer, which has 2 chunk(s)")

    def to_itself():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).put(0, Buffer.input, 1, sendtb=0)

    legacy_error(to_itself, "put: rank 0 is this chunk's own rank")

    def packets_in_simple():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).put_packet(1, Buffer.scratch, 0, sendtb=0)

    legacy_error(packets_in_simple, 'put_packet moves LL packets, which need protocol="LL"')

    def get_over_port():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).get(1, Buffer.input, 0, recvtb=0, chan_type=ChannelType.proxy)

    legacy_error(get_over_port, "get works over ChannelType.memory, not ChannelType.port")

    def group_index():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).group_load_reduce([chunk(1, Buffer.input, 1)], recvtb=0)

    legacy_error(group_index, "group_load_reduce: every chunk has this chunk's buffer and index")

    def copy_across_ranks():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0).copy(1, Buffer.input, 0, sendtb=0)

    legacy_error(copy_across_ranks, "copy stays on one rank")

    def unpack_plain():
        with MSCCLPPProgram("e", AllReduce(2, 2, True), 2, 1, protocol="LL"):
            chunk(0, Buffer.input, 0).copy_packet(0, Buffer.output, 1, sendtb=0)

    legacy_error(unpack_plain, "copy_packet unpacks LL packets, which live only in scratch")


def test_mixing_models_fails_at_the_second_models_call():
    with pytest.raises(DSLError) as error:
        with MSCCLPPProgram("mix", AllReduce(2, 2, True), 2, 1):
            chunk(0, Buffer.input, 0)
            line = inspect.currentframe().f_lineno + 1
            Rank(0)
    assert str(error.value).startswith(f"{THIS}:{line}: this MSCCLPPProgram uses MSCCLPPLang's chunk() API (since {THIS}:")
    with pytest.raises(DSLError) as error:
        with MSCCLPPProgram("mix", AllReduce(2, 2, True), 2, 1):
            MemoryChannel(1, 0)
            chunk(0, Buffer.input, 0)
    assert "this MSCCLPPProgram uses the current DSL" in str(error.value)
    with pytest.raises(DSLError) as error:
        with CollectiveProgram("current", AllReduce(2, 2, True), 2):
            chunk(0, Buffer.input, 0)
    assert "chunk() is MSCCLPPLang's API and works inside `with MSCCLPPProgram(...):`" in str(error.value)


def test_legacy_script_compiles_through_the_cli(tmp_path):
    out = tmp_path / "plan.json"
    environment = dict(os.environ, PYTHONPATH=os.path.join(REPO, "dsl_compiler"))
    result = subprocess.run(
        [sys.executable, "-m", "mscclpp", "compile", os.path.join(HERE, "programs", "legacy_programs.py"),
         "allreduce_nvls", "4", "-o", str(out)],
        capture_output=True, text=True, env=environment, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(out.read_text())
    assert (plan["name"], len(plan["gpus"])) == ("legacy_allreduce_nvls", 4)
    assert "Check: legacy_allreduce_nvls: allreduce result correct on all 4 rank(s)" in result.stderr
    assert '"gpus"' not in result.stderr  # the plan it printed itself is not forwarded
