"""Every mistake is a DSLError whose message starts with the file:line of the user's call."""
import inspect

import pytest

from mscclpp.language import (
    AllReduce,
    Buffer,
    BufferType,
    CollectiveProgram,
    DSLError,
    DSLWarning,
    LoopIterationContext,
    MemoryChannel,
    PortChannel,
    Rank,
    SwitchChannel,
    SyncType,
    TestCollective,
)

THIS = __file__


def here():
    """Line of the caller, so each test states the line its failing call is on."""
    return inspect.currentframe().f_back.f_lineno


def program(ranks=2, inputs=2, outputs=2, protocol="Simple"):
    return CollectiveProgram("t", TestCollective(ranks, inputs, outputs), ranks, protocol=protocol)


def assert_error(error, line, message):
    assert str(error.value) == f"{THIS}:{line}: {message}"


def test_chunk_of_the_wrong_rank():
    with program():
        rank0 = Rank(0)
        other = Rank(1).get_input_buffer()[0:1]
        with pytest.raises(DSLError) as error:
            line = here() + 1
            rank0.copy(rank0.get_output_buffer()[0:1], other, tb=0)
    assert_error(
        error, line, "copy on rank 0: the src chunk belongs to rank 1; local ops use only their own rank's buffers"
    )


def test_slice_out_of_bounds():
    with program():
        buffer = Rank(0).get_input_buffer()
        with pytest.raises(DSLError) as error:
            line = here() + 1
            buffer[1:3]
    assert_error(error, line, "slice [1:3] is out of bounds for rank 0's input buffer, which has 2 chunk(s)")


def test_slice_with_a_step_or_an_index():
    with program():
        buffer = Rank(0).get_input_buffer()
        with pytest.raises(DSLError) as error:
            line = here() + 1
            buffer[0:2:2]
        assert_error(error, line, "slice step 2 is not supported on rank 0's input buffer: chunks are contiguous")
        with pytest.raises(DSLError) as error:
            line = here() + 1
            buffer[0]
        assert_error(error, line, "buffers are sliced, not indexed: use buffer[0:0+1] (got int)")


def test_size_mismatch():
    with program():
        channel = MemoryChannel(1, 0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            channel.put(Rank(1).get_input_buffer()[0:2], Rank(0).get_input_buffer()[0:1], tb=0)
    assert_error(error, line, "put: dst chunk has 2 chunk(s) but src chunk has 1")


def test_packet_op_outside_scratch():
    with program(protocol="LL"):
        rank = Rank(0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            rank.copy_packets(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        assert_error(
            error,
            line,
            "copy_packets: the dst chunk must be in a scratch buffer (packets live only in scratch), "
            "but it is in rank 0's output buffer",
        )
        channel = MemoryChannel(1, 0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            channel.put_packets(Rank(1).get_input_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        assert_error(
            error,
            line,
            "put_packets: the dst chunk must be in a scratch buffer (packets live only in scratch), "
            "but it is in rank 1's input buffer",
        )


def test_packets_need_the_ll_protocol():
    with program():
        rank = Rank(0)
        scratch = Buffer(0, 1)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            rank.copy_packets(scratch[0:1], rank.get_input_buffer()[0:1], tb=0)
    assert_error(error, line, 'copy_packets moves LL packets, which need protocol="LL" (this program is "Simple")')


def test_signal_without_its_wait():
    with program() as prog:
        a, b = MemoryChannel(1, 0), MemoryChannel(0, 1)
        a.signal(tb=0)
        b.wait(tb=0)
        line = here() + 1
        a.signal(tb=0)
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(
        error,
        line,
        "signal without a matching wait: rank 0 signals 2 time(s) on its memory channel #0 to rank 1, "
        "but rank 1 waits 1 time(s) on its memory channel #0 from rank 0",
    )


def test_wait_without_its_signal():
    with program() as prog:
        MemoryChannel(1, 0)
        line = here() + 1
        MemoryChannel(0, 1).wait(tb=0)
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(
        error,
        line,
        "wait without a matching signal: rank 1 waits 1 time(s) on its memory channel #0 from rank 0, "
        "but rank 0 signals 0 time(s) on its memory channel #0 to rank 1",
    )


def test_per_channel_pairing_only_warns_when_totals_balance():
    # Two channels each way; rank 0 signals on #1 but rank 1 waits on #0: they
    # never meet, but the totals per peer balance, which is all MSCCL++ checks:
    # the plan is written, with a warning there.
    with program() as prog:
        forward = [MemoryChannel(1, 0), MemoryChannel(1, 0)]
        backward = [MemoryChannel(0, 1), MemoryChannel(0, 1)]
        line = here() + 1
        forward[1].signal(tb=0)
        backward[0].wait(tb=0)
    with pytest.warns(DSLWarning) as caught:
        plan = prog.to_json(indent=None)
    assert '"signal"' in plan and '"wait"' in plan
    assert len(caught) == 1
    assert (caught[0].filename, caught[0].lineno) == (THIS, line)
    assert str(caught[0].message).startswith(
        "signal without a matching wait: rank 0 signals 1 time(s) on its memory channel #1 to rank 1, "
        "but rank 1 waits 0 time(s) on its memory channel #1 from rank 0; the signals and waits between these "
        "ranks balance only in total"
    )


def test_unbalanced_totals_stay_an_error():
    with program(ranks=3) as prog:
        MemoryChannel(1, 0).signal(tb=0)
        MemoryChannel(0, 1).wait(tb=0)
        MemoryChannel(2, 0)
        line = here() + 1
        MemoryChannel(0, 2).wait(tb=0)  # rank 0 never signals rank 2
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(
        error,
        line,
        "wait without a matching signal: rank 2 waits 1 time(s) on its memory channel #0 from rank 0, "
        "but rank 0 signals 0 time(s) on its memory channel #0 to rank 2",
    )


def test_pairing_is_per_channel_type():
    with program() as prog:
        MemoryChannel(0, 1)
        PortChannel(0, 1)
        line = here() + 1
        PortChannel(1, 0).signal(tb=0)
        MemoryChannel(1, 0)
        MemoryChannel(0, 1).wait(tb=0)  # a memory wait does not consume a port signal
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert str(error.value).startswith(f"{THIS}:{line}: signal without a matching wait: rank 0 signals 1 time(s) on its port")


def test_signal_on_a_channel_without_counterpart():
    with program() as prog:
        line = here() + 1
        MemoryChannel(1, 0).signal(tb=0)
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(
        error,
        line,
        "signal on rank 0's memory channel #0 to rank 1 cannot pair: rank 1 has no memory channel #0 to rank 0 "
        "(channels pair by order: the k-th from A to B with the k-th from B to A)",
    )


def test_signals_in_loops_pair_with_waits_in_like_loops():
    with program() as prog:
        a, b = MemoryChannel(1, 0), MemoryChannel(0, 1)
        with LoopIterationContext(unit=1024, num_chunks=1):
            line = here() + 1
            a.signal(tb=0)
        b.wait(tb=0)
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(
        error,
        line,
        "signal without a matching wait: rank 0 signals 1 time(s) on its memory channel #0 to rank 1, but rank 1 "
        "waits 0 time(s) on its memory channel #0 from rank 0 inside pipeline loops (unit 1024, 1 chunk(s))",
    )


def test_channel_used_by_the_wrong_rank():
    with program():
        channel = MemoryChannel(1, 0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            channel.put(Rank(1).get_input_buffer()[0:1], Rank(1).get_input_buffer()[1:2], tb=0)
    assert_error(
        error,
        line,
        "put on the channel from rank 0 to rank 1: the src chunk is on rank 1, but it must be on rank 0 (the local side)",
    )


def test_switch_channel_checks():
    with CollectiveProgram("t", AllReduce(3, 1, True), 3) as prog:
        switch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.input)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            switch.at_rank(2)
        assert_error(error, line, "rank 2 is not in this switch channel's group [0, 1]")
        view = switch.at_rank(0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            view.reduce(buffer_offset=2, size=2, dst_chunk=Rank(0).get_input_buffer()[0:2], tb=0)
        assert_error(error, line, "switch reduce: [2:4] is out of bounds for rank 0's input buffer, which has 3 chunk(s)")
        with pytest.raises(DSLError) as error:
            line = here() + 1
            view.reduce(buffer_offset=0, size=1, dst_chunk=Rank(1).get_input_buffer()[0:1], tb=0)
        assert_error(error, line, "switch reduce at rank 0: the dst chunk must be on rank 0, got rank 1")
        scratch_switch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.scratch)
        scratch = Buffer(0, 1)
        line = here() + 1
        scratch_switch.at_rank(0).broadcast(src_chunk=scratch[0:1], buffer_offset=0, size=1, tb=0)
    # Scratch may grow later in a program, so its range is checked at compile time (rank 1 has none).
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert_error(error, line, "switch broadcast: [0:1] is out of bounds for rank 1's scratch buffer, which has 0 chunk(s)")


def test_no_active_program():
    with pytest.raises(DSLError) as error:
        line = here() + 1
        Rank(0)
    assert_error(error, line, "no active CollectiveProgram: create channels, ranks and buffers inside `with CollectiveProgram(...):`")


def test_rank_out_of_range_and_bad_threadblock():
    with program():
        with pytest.raises(DSLError) as error:
            line = here() + 1
            Rank(2)
        assert_error(error, line, "rank 2 is out of range: the program has 2 rank(s)")
        rank = Rank(0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1])
        assert_error(error, line, "missing threadblock: give tb= (an id) or tb_group= (a ThreadBlockGroup)")
        with pytest.raises(DSLError) as error:
            line = here() + 1
            MemoryChannel(0, 0)
        assert_error(error, line, "a channel connects two different ranks, got 0 -> 0")


def test_loops_cannot_nest_and_iter_context_must_match():
    with program():
        rank = Rank(0)
        outer = LoopIterationContext(unit=1024, num_chunks=1)
        with outer:
            with pytest.raises(DSLError) as error:
                line = here() + 1
                with LoopIterationContext(unit=1024, num_chunks=1):
                    pass
            assert_error(error, line, "pipeline loops cannot be nested")
        with pytest.raises(DSLError) as error:
            line = here() + 1
            rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0, iter_context=outer)
        assert_error(error, line, "iter_context= names a loop this call is not inside: write the call in its `with` block")


def test_compiled_program_cannot_change():
    with program() as prog:
        rank = Rank(0)
        rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
        prog.to_json()
        with pytest.raises(DSLError) as error:
            line = here() + 1
            Buffer(0, 1)
    assert_error(error, line, "program 't' was already compiled; it cannot change")


def test_bad_program_settings():
    with pytest.raises(DSLError) as error:
        line = here() + 1
        CollectiveProgram("t", TestCollective(2, 1, 1), 2, protocol="LL128")
    assert_error(error, line, 'protocol \'LL128\' is not supported: use "Simple" or "LL"')
    with pytest.raises(DSLError) as error:
        line = here() + 1
        CollectiveProgram("t", TestCollective(2, 1, 1), 4)
    assert_error(error, line, "num_ranks 4 differs from the collective's num_ranks 2")


def test_bad_sync_value():
    with program():
        channel = MemoryChannel(1, 0)
        with pytest.raises(DSLError) as error:
            line = here() + 1
            channel.signal(tb=0, sync="sometimes")
    assert_error(error, line, "invalid sync 'sometimes': expected one of none, before, after, both")


def test_direct_chunk_is_bounds_checked():
    from mscclpp.language import Chunk

    with program():
        with pytest.raises(DSLError) as error:
            line = here() + 1
            Chunk(0, BufferType.input, 1, 2)
    assert_error(error, line, "chunk [1:3] is out of bounds for rank 0's input buffer, which has 2 chunk(s)")


def test_error_is_reported_at_the_users_line_through_aliases():
    with program() as prog:
        MemoryChannel(0, 1)
        line = here() + 1
        MemoryChannel(1, 0).relaxedSignal(tb=0, data_sync=SyncType.none)
    with pytest.raises(DSLError) as error:
        prog.to_json()
    assert str(error.value).startswith(f"{THIS}:{line}: signal without a matching wait")
