"""Single-feature programs: each exercises one op family (and, for *_fuse, its fusion).

``PROGRAMS`` maps a name to a function returning the CollectiveProgram; the reference corpus
(reference_corpus.py) pairs them with MSCCL++'s unit-test plans.
"""
from mscclpp.language import (
    Buffer,
    BufferType,
    CollectiveProgram,
    LoopIterationContext,
    MemoryChannel,
    PortChannel,
    Rank,
    Semaphore,
    SwitchChannel,
    SyncType,
    TestCollective,
    ThreadBlockGroup,
)

PROGRAMS = {}


def program(function):
    PROGRAMS[function.__name__] = function
    return function


def _two_ranks(name, inputs, outputs, protocol="Simple"):
    return CollectiveProgram(name, TestCollective(2, inputs, outputs), 2, protocol=protocol)


def _handshake_then(channel, body):
    """Relaxed handshake, the op under test, then a full signal/wait: the memory-channel test shape."""
    channel.signal(tb=0, relaxed=True)
    channel.wait(tb=0, relaxed=True, data_sync=SyncType.after)
    body()
    channel.signal(tb=0, data_sync=SyncType.before)
    channel.wait(tb=0, data_sync=SyncType.after)


@program
def barrier_test():
    with CollectiveProgram("barrier_test", TestCollective(1, 0, 0), 1) as prog:
        Rank(0).barrier(tb_list=[0, 1])
    return prog


@program
def copy_test(group=False):
    with CollectiveProgram("copy_test", TestCollective(1, 1, 1), 1) as prog:
        rank = Rank(0)
        dst, src = rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1]
        if group:
            rank.copy(dst, src, tb_group=ThreadBlockGroup(tb_list=[0, 1, 2, 3]))
        else:
            rank.copy(dst, src, tb=0)
    return prog


@program
def copy_packets_test():
    with CollectiveProgram("copy_packets_test", TestCollective(1, 1, 1), 1, protocol="LL") as prog:
        rank = Rank(0)
        scratch = Buffer(0, 1)
        rank.copy_packets(scratch[0:1], rank.get_input_buffer()[0:1], tb=0)
    return prog


@program
def unpack_packets_test():
    with CollectiveProgram("unpack_packets_test", TestCollective(1, 1, 1), 1, protocol="LL") as prog:
        rank = Rank(0)
        scratch = Buffer(0, 1)
        rank.copy_packets(scratch[0:1], rank.get_input_buffer()[0:1], tb=0)
        rank.unpack_packets(rank.get_output_buffer()[0:1], scratch[0:1], tb=0)
    return prog


@program
def flush_test(channels=1):
    with _two_ranks("flush_test", 0, 0) as prog:
        ports = [PortChannel(1, 0) for _ in range(channels)]
        for port in ports:
            port.flush(tb=0, data_sync=SyncType.before if channels == 1 else SyncType.both)
    return prog


@program
def get_test(fused=False):
    with _two_ranks("get_test", 2, 0) as prog:
        for r in range(2):
            peer = 1 - r
            channel = MemoryChannel(peer, r)
            mine, theirs = Rank(r).get_input_buffer(), Rank(peer).get_input_buffer()
            times = 2 if fused else 1
            _handshake_then(channel, lambda: [channel.get(mine[0:1], theirs[1:2], tb=0) for _ in range(times)])
    return prog


@program
def put_test(fused=False):
    with _two_ranks("put_test", 2, 0) as prog:
        for r in range(2):
            peer = 1 - r
            mine, theirs = Rank(r).get_input_buffer(), Rank(peer).get_input_buffer()
            if not fused:
                channel = MemoryChannel(peer, r)
                _handshake_then(channel, lambda: channel.put(theirs[1:2], mine[0:1], tb=0))
            else:
                first, second = MemoryChannel(peer, r), MemoryChannel(peer, r)
                first.signal(tb=0, relaxed=True)
                first.wait(tb=0, relaxed=True, data_sync=SyncType.after)
                first.put(theirs[1:2], mine[0:1], tb=0)
                second.put(theirs[0:1], mine[1:2], tb=0)
                second.signal(tb=0, data_sync=SyncType.before)
                second.wait(tb=0, data_sync=SyncType.after)
    return prog


def _port_put_test(name, method):
    with _two_ranks(name, 2, 0) as prog:
        for r in range(2):
            peer = 1 - r
            port = PortChannel(peer, r)
            port.signal(tb=0)
            port.wait(tb=0)
            getattr(port, method)(Rank(peer).get_input_buffer()[1:2], Rank(r).get_input_buffer()[0:1], tb=0)
            port.wait(tb=0, data_sync=SyncType.after)
    return prog


@program
def put_with_signal_test():
    return _port_put_test("put_with_signal_test", "put_with_signal")


@program
def put_with_signal_and_flush_test():
    return _port_put_test("put_with_signal_and_flush_test", "put_with_signal_and_flush")


@program
def put_packets_test():
    with _two_ranks("put_packets_test", 1, 0, protocol="LL") as prog:
        scratch = [Buffer(r, 1) for r in range(2)]
        for r in range(2):
            peer = 1 - r
            MemoryChannel(peer, r).put_packets(scratch[peer][0:1], Rank(r).get_input_buffer()[0:1], tb=0)
    return prog


@program
def read_put_packets_test():
    with _two_ranks("read_put_packets_test", 0, 0, protocol="LL") as prog:
        scratch = [Buffer(r, 2) for r in range(2)]
        for r in range(2):
            peer = 1 - r
            MemoryChannel(peer, r).read_put_packets(scratch[peer][1:2], scratch[r][0:1], tb=0)
    return prog


@program
def reduce_test(operands=2, group=False):
    with CollectiveProgram("reduce_test", TestCollective(1, operands, operands - 1), 1) as prog:
        rank = Rank(0)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        where = dict(tb_group=ThreadBlockGroup(tb_list=[0, 1, 2, 3])) if group else dict(tb=0)
        for i in range(1, operands):
            rank.reduce(inp[0:1], [inp[i : i + 1]], dst_chunk=out[0:1], **where)
    return prog


@program
def reduce_packets_test(operands=2):
    with CollectiveProgram("reduce_packets_test", TestCollective(1, 0, 0), 1, protocol="LL") as prog:
        rank = Rank(0)
        scratch = Buffer(0, operands + 1)
        for i in range(1, operands):
            rank.reduce(scratch[0:1], [scratch[i : i + 1]], tb=0, dst_chunk=scratch[operands : operands + 1], packet=True)
    return prog


@program
def reduce_copy_packets_test():
    with CollectiveProgram("reduce_copy_packets_test", TestCollective(1, 1, 0), 1, protocol="LL") as prog:
        rank = Rank(0)
        scratch = Buffer(0, 2)
        inp = rank.get_input_buffer()
        rank.reduce(inp[0:1], [scratch[0:1]], tb=0, packet=True)
        rank.copy_packets(scratch[1:2], inp[0:1], tb=0)
    return prog


@program
def reduce_copy_send_packets_test():
    with _two_ranks("reduce_copy_send_packets_test", 1, 0, protocol="LL") as prog:
        scratch = [Buffer(0, 2), Buffer(1, 1)]
        rank = Rank(0)
        inp = rank.get_input_buffer()
        rank.reduce(inp[0:1], [scratch[0][0:1]], tb=0, packet=True)
        rank.copy_packets(scratch[0][1:2], inp[0:1], tb=0)
        MemoryChannel(1, 0).read_put_packets(scratch[1][0:1], scratch[0][1:2], tb=0)
    return prog


@program
def reduce_send_packets_test():
    with _two_ranks("reduce_send_packets_test", 0, 0, protocol="LL") as prog:
        scratch = [Buffer(r, 4) for r in range(2)]
        for r in range(2):
            peer = 1 - r
            rank = Rank(r)
            rank.reduce(scratch[r][0:1], [scratch[r][1:2]], tb=0, dst_chunk=scratch[r][2:3], packet=True)
            MemoryChannel(peer, r).put_packets(scratch[peer][3:4], scratch[r][2:3], tb=0)
    return prog


@program
def reduce_send_test(group=False):
    with _two_ranks("reduce_send_test", 2, 2) as prog:
        for r in range(2):
            peer = 1 - r
            rank = Rank(r)
            channel = MemoryChannel(peer, r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            where = dict(tb_group=ThreadBlockGroup(tb_list=[0, 1, 2, 3])) if group else dict(tb=0)

            def body():
                rank.reduce(inp[0:1], [inp[1:2]], dst_chunk=out[0:1], **where)
                channel.put(Rank(peer).get_output_buffer()[1:2], out[0:1], **where)

            _handshake_then(channel, body)
    return prog


@program
def read_reduce_test(remote_operands=1, send=False):
    name = "read_reduce_send_test" if send else "read_reduce_test"
    with _two_ranks(name, 2, 2) as prog:
        for r in range(2):
            peer = 1 - r
            channel = MemoryChannel(peer, r)
            inp, out = Rank(r).get_input_buffer(), Rank(r).get_output_buffer()
            theirs = Rank(peer).get_input_buffer()
            picks = [theirs[1:2]] if remote_operands == 1 else [theirs[0:1], theirs[1:2]]

            def body():
                for chunk in picks:
                    channel.reduce(inp[0:1], [chunk], tb=0, local_dst_chunk=out[0:1])
                if send:
                    channel.put(Rank(peer).get_output_buffer()[1:2], out[0:1], tb=0)

            _handshake_then(channel, body)
    return prog


@program
def semaphore_test():
    with CollectiveProgram("semaphore_test", TestCollective(1, 0, 0), 1) as prog:
        semaphore = Semaphore(rank=0, initial_value=0)
        semaphore.acquire(tb=0, data_sync=SyncType.after)
        semaphore.release(tb=1, data_sync=SyncType.before)
    return prog


@program
def signal_wait_test(relaxed=False, channels_per_peer=1):
    name = "relaxed_signal_wait_test" if relaxed else "signal_wait_test"
    with _two_ranks(name, 0, 0) as prog:
        for r in range(2):
            peer = 1 - r
            chans = [MemoryChannel(peer, r) for _ in range(channels_per_peer)]
            if channels_per_peer == 1:
                sync = dict(data_sync=SyncType.both) if relaxed else dict(data_sync=SyncType.before)
                chans[0].signal(tb=0, relaxed=relaxed, **sync)
                chans[0].wait(tb=0, relaxed=relaxed, data_sync=SyncType.after if not relaxed else SyncType.both)
            else:
                # Signals on channels #0,#1, waits on #2,#3: MSCCL++'s fusion test.
                # They never meet; the totals balance, so it is a DSLWarning.
                half = channels_per_peer // 2
                for chan in chans[:half]:
                    chan.signal(tb=0, relaxed=relaxed)
                for chan in chans[half:]:
                    chan.wait(tb=0, relaxed=relaxed)
    return prog


@program
def pipeline_test():
    with CollectiveProgram("barrier_test", TestCollective(1, 1, 1), 1) as prog:
        rank = Rank(0)
        with LoopIterationContext(unit=2**20, num_chunks=1):
            rank.copy(rank.get_output_buffer()[0:1], rank.get_input_buffer()[0:1], tb=0)
    return prog


def _switch_program(name, build):
    with CollectiveProgram(name, TestCollective(3, 1, 1), 3) as prog:
        scratch = Buffer(0, 1)
        switch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.input)
        build(switch, scratch)
    return prog


@program
def switch_reduce_test():
    return _switch_program(
        "switch_reduce_test", lambda sw, s: sw.at_rank(0).reduce(buffer_offset=0, size=1, dst_chunk=s[0:1], tb=0)
    )


@program
def switch_broadcast_test():
    return _switch_program(
        "group_store_test", lambda sw, s: sw.at_rank(0).broadcast(src_chunk=s[0:1], buffer_offset=0, size=1, tb=0)
    )
