"""Collective.check(): a program's plan, run symbolically, against the collective's definition."""
import inspect

import pytest
from reference_corpus import CORPUS

from mscclpp.dsl import presets
from mscclpp.language import AllGather, CollectiveProgram, DSLError, MemoryChannel, Rank, SyncType, TestCollective
from mscclpp.language.internal.collective_check import CHECKED, check_plan, describe

THIS = __file__


def guarded_call_line():
    """Line of the call two lines below the caller's (after its ``with pytest.raises(...)``)."""
    return inspect.currentframe().f_back.f_lineno + 2


def allgather(n=2, drop_put_to=None):
    with CollectiveProgram("ag", AllGather(n, 1, False), n) as program:
        for r in range(n):
            rank = Rank(r)
            rank.copy(rank.get_output_buffer()[r : r + 1], rank.get_input_buffer()[0:1], tb=0)
            for p in range(n):
                if p == r:
                    continue
                channel = MemoryChannel(p, r)
                if p != drop_put_to:
                    channel.put(Rank(p).get_output_buffer()[r : r + 1], rank.get_input_buffer()[0:1], tb=0)
                channel.signal(tb=0, data_sync=SyncType.before)
                channel.wait(tb=0, data_sync=SyncType.after)
    return program


def test_check_accepts_a_correct_program_and_says_nothing(capsys):
    program = allgather(4)
    assert program.collective.check(program) is True
    assert capsys.readouterr().err == ""


def test_check_rejects_a_wrong_program_and_says_where(capsys):
    program = allgather(3, drop_put_to=2)
    assert program.collective.check(program) is False
    err = capsys.readouterr().err
    assert "ag: allgather result wrong (2 problem(s))" in err
    assert "rank 2 output chunk 0: expected rank 0's input chunk 0, got nothing defined" in err


def test_check_reports_a_deadlock_at_the_users_line():
    with CollectiveProgram("dl", AllGather(2, 1, False), 2) as program:
        for r in range(2):
            channel = MemoryChannel(1 - r, r)
            channel.wait(tb=0)  # both ranks wait before they signal: the counts pair, the order hangs
            channel.signal(tb=0)
    line = guarded_call_line()
    with pytest.raises(DSLError) as error:
        program.collective.check(program)
    assert str(error.value).startswith(f"{THIS}:{line}: check: the plan deadlocks; blocked: rank 0 threadblock 0 op 1 (wait)")


def test_check_needs_a_collective_with_a_defined_result():
    with CollectiveProgram("t", TestCollective(1, 1, 1), 1) as program:
        Rank(0).copy(Rank(0).get_output_buffer()[0:1], Rank(0).get_input_buffer()[0:1], tb=0)
    with pytest.raises(DSLError, match="a 'test' collective \\(TestCollective\\) defines no result to check against"):
        program.collective.check(program)
    with pytest.raises(DSLError, match="is not a program of this AllGather"):
        AllGather(2, 1, False).check(program)


def test_every_default_plan_checks():
    for preset in presets.catalog():
        program = preset.build()
        program = getattr(program, "program", program)  # multi-node presets wrap theirs
        assert program.collective.check(program), preset.name


def _standard(plan_file):
    build, kwargs = CORPUS[plan_file]
    return build(**kwargs).collective.name in CHECKED  # "test" plans define no result


@pytest.mark.parametrize("plan_file", [f for f in sorted(CORPUS) if _standard(f)])
def test_corpus_programs_of_standard_collectives_check(plan_file):
    build, kwargs = CORPUS[plan_file]
    program = build(**kwargs)
    assert program.collective.check(program)  # includes thread-block groups and pipelines


def test_values_name_the_data_they_hold():
    assert describe(((1, 3),), 1) == "rank 1's input chunk 3"
    assert describe(((0, 2), (1, 2), (2, 2)), 1) == "the sum of input chunk 2 of ranks 0-2"
    assert describe(((0, 5),), 2) == "rank 0's input chunk 2 (part 2/2)"
    assert describe(None, 1).startswith("nothing defined")


def test_thread_block_groups_split_chunks_into_parts():
    # Two threadblocks share a copy of 1 chunk: each moves one half, the check follows both halves.
    copies = 2
    plan = {
        "name": "tbg", "collective": "allgather", "protocol": "Simple", "inplace": False,
        "gpus": [
            {
                "id": 0, "input_chunks": 1, "output_chunks": 1, "scratch_chunks": 0, "channels": [], "remote_buffers": [],
                "threadblocks": [
                    {"id": t, "channels": [], "remote_buffer_refs": [], "ops": [
                        {"name": "copy", "src_buff": [{"type": "i", "index": 0, "size": 1}],
                         "dst_buff": [{"type": "o", "index": 0, "size": 1}], "tbg_info": {"tb_id": t, "tbg_size": 2}},
                    ]}
                    for t in range(copies)
                ],
            }
        ],
    }
    assert check_plan(plan).ok
    plan["gpus"][0]["threadblocks"] = plan["gpus"][0]["threadblocks"][:1]  # only the first half is copied
    report = check_plan(plan)
    assert not report.ok
    assert report.problems == ["rank 0 output chunk 0: expected rank 0's input chunk 0 (part 2/2), got nothing defined "
                               "(never written, or computed from unwritten data)"]
