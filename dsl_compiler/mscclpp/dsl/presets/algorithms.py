"""The algorithms behind the default plans, one function per algorithm, for n ranks on one node.

Every algorithm follows the same safety rules, which the emulator checks:
- a rank writes into a peer's user buffer only after a signal from that peer in this launch (the
  peer has entered the collective, so its buffers are ready and free);
- scratch a peer writes is read only after the peer's signal (Simple) or through packet flags (LL);
- the last ops make sure nothing is still in flight when the kernel ends, and that no peer can start
  the next launch into scratch this rank still reads;
- LL plans use double scratch, so back-to-back launches never overwrite packets still being read.
"""
from mscclpp.language import (
    AllGather,
    AllReduce,
    AllToAll,
    AllToAllV,
    Broadcast,
    Buffer,
    BufferType,
    CollectiveProgram,
    Gather,
    MemoryChannel,
    Rank,
    Reduce,
    ReduceScatter,
    ReduceScatterV,
    Scatter,
    SendRecv,
    SwitchChannel,
    SyncType,
)

MAX = 2**64 - 1


def _slot(of, at):
    """Position of rank ``of`` among rank ``at``'s peers."""
    return of if of < at else of - 1


def _peers(n, r):
    return [p for p in range(n) if p != r]


def _channels(n):
    return {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}


def _program(name, collective, n, size_range, tags, protocol="Simple", **options):
    low, high = size_range
    return CollectiveProgram(
        name,
        collective,
        n,
        protocol=protocol,
        min_message_size=low,
        max_message_size=high,
        tags=tags,
        use_double_scratch_buffer=protocol == "LL",
        **options,
    )


def _handshake(channels, n, tb_of):
    """Every rank tells every peer it has entered this launch (relaxed: only execution order)."""
    for r in range(n):
        for p in _peers(n, r):
            channels[(r, p)].signal(tb=tb_of(r, p), relaxed=True)
        for p in _peers(n, r):
            channels[(r, p)].wait(tb=tb_of(r, p), relaxed=True, data_sync=SyncType.after)


def _finish(channels, n, tb_of):
    """Every rank signals every peer after its last access and waits for theirs."""
    for r in range(n):
        for p in _peers(n, r):
            channels[(r, p)].signal(tb=tb_of(r, p), data_sync=SyncType.before)
        for p in _peers(n, r):
            channels[(r, p)].wait(tb=tb_of(r, p), data_sync=SyncType.after)


def allreduce_ll(name, n, inplace, size_range, tags):
    """LL all-pairs: scatter chunk p to rank p as packets; rank r reduces its chunk with the copies
    it received and sends the result to every peer as packets (one respkt); unpack the results.
    Threadblock j talks to the j-th peer; threadblock n-1 reduces."""
    with _program(name, AllReduce(n, 1, inplace), n, size_range, tags, protocol="LL") as program:
        scratch = [Buffer(r, 2 * (n - 1)) for r in range(n)]
        channels = _channels(n)
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for p in _peers(n, r):
                at = _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], inp[p : p + 1], tb=_slot(p, r))
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            mine = out[r : r + 1]
            received = [scratch[r][_slot(p, r) : _slot(p, r) + 1] for p in _peers(n, r)]
            rank.reduce(inp[r : r + 1], received, tb=n - 1, dst_chunk=mine, packet=True)
            for p in _peers(n, r):
                at = n - 1 + _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], mine, tb=n - 1)
            for p in _peers(n, r):
                at = n - 1 + _slot(p, r)
                rank.unpack_packets(out[p : p + 1], scratch[r][at : at + 1], tb=_slot(p, r))
    return program


def allreduce_allpairs(name, n, inplace, size_range, tags, num_tb=4):
    """Simple all-pairs: threadblock t of rank r owns chunk r*T+t; it reads that chunk from every
    peer, reduces, and writes the result into every peer's output (one rres). Handshake first, a
    full signal/wait at the end."""
    with _program(name, AllReduce(n, num_tb, inplace), n, size_range, tags) as program:
        channels = {(r, p, t): MemoryChannel(p, r) for r in range(n) for t in range(num_tb) for p in _peers(n, r)}
        for r in range(n):
            for t in range(num_tb):
                for p in _peers(n, r):
                    channels[(r, p, t)].signal(t, relaxed=True)
                for p in _peers(n, r):
                    channels[(r, p, t)].wait(t, relaxed=True, data_sync=SyncType.after)
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            for t in range(num_tb):
                i = r * num_tb + t
                for p in _peers(n, r):
                    channels[(r, p, t)].reduce(inp[i : i + 1], [Rank(p).get_input_buffer()[i : i + 1]], t, local_dst_chunk=out[i : i + 1])
                for p in _peers(n, r):
                    channels[(r, p, t)].put(Rank(p).get_output_buffer()[i : i + 1], out[i : i + 1], t)
                for p in _peers(n, r):
                    channels[(r, p, t)].signal(t, data_sync=SyncType.before)
                for p in _peers(n, r):
                    channels[(r, p, t)].wait(t, data_sync=SyncType.after)
    return program


def _scatter_reduce(n, channels, scratch, collective_out, send_tb, reduce_tb):
    """Reduce-scatter core: rank r puts its chunk p into p's scratch and signals; once every peer
    has signalled, it reduces its own chunk with what arrived into collective_out(r)."""
    for r in range(n):
        inp = Rank(r).get_input_buffer()
        for p in _peers(n, r):
            at = _slot(r, p)
            channels[(r, p)].put(scratch[p][at : at + 1], inp[p : p + 1], tb=send_tb(r, p))
            channels[(r, p)].signal(tb=send_tb(r, p), data_sync=SyncType.before)
    for r in range(n):
        rank = Rank(r)
        if send_tb(r, _peers(n, r)[0]) != reduce_tb:
            # The sends go before this rank's later signals on those channels.
            rank.barrier(sorted({send_tb(r, p) for p in _peers(n, r)} | {reduce_tb}))
        for p in _peers(n, r):
            channels[(r, p)].wait(tb=reduce_tb, data_sync=SyncType.after)
        inp = rank.get_input_buffer()
        received = [scratch[r][_slot(p, r) : _slot(p, r) + 1] for p in _peers(n, r)]
        rank.reduce(inp[r : r + 1], received, tb=reduce_tb, dst_chunk=collective_out(r))


def allreduce_rsag(name, n, inplace, size_range, tags):
    """Reduce-scatter + all-gather with puts only (no remote reads): chunks go to their owner's
    scratch, the owner reduces and puts the result into every peer's output. Threadblock j sends
    to the j-th peer; threadblock n-1 reduces and gathers."""
    with _program(name, AllReduce(n, 1, inplace), n, size_range, tags) as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        outputs = [Rank(r).get_output_buffer() for r in range(n)]
        _scatter_reduce(n, channels, scratch, lambda r: outputs[r][r : r + 1], lambda r, p: _slot(p, r), n - 1)
        for r in range(n):
            for p in _peers(n, r):
                channels[(r, p)].put(outputs[p][r : r + 1], outputs[r][r : r + 1], tb=n - 1)
        _finish(channels, n, lambda r, p: n - 1)
    return program


def allreduce_nvls(name, n, inplace, size_range, tags, instances=4):
    """NVLS: rank r load-reduces chunk r over the switch and stores the result to every rank
    (in place: one glres on the input; out of place: glre from the input into the own output chunk,
    then gstore to every output). Handshakes before and after."""
    with _program(name, AllReduce(n, 1, inplace), n, size_range, tags, instances=instances) as program:
        source = SwitchChannel(rank_list=list(range(n)), buffer_type=BufferType.input)
        target = source if inplace else SwitchChannel(rank_list=list(range(n)), buffer_type=BufferType.output)
        channels = _channels(n)
        _handshake(channels, n, lambda r, p: 0)
        for r in range(n):
            rank = Rank(r)
            local = (rank.get_input_buffer() if inplace else rank.get_output_buffer())[r : r + 1]
            source.at_rank(r).reduce(buffer_offset=r, size=1, dst_chunk=local, tb=0)
            target.at_rank(r).broadcast(src_chunk=local, buffer_offset=r, size=1, tb=0)
        _finish(channels, n, lambda r, p: 0)
    return program


def allgather_ll(name, n, inplace, size_range, tags):
    """LL: my chunk to every peer's scratch as packets; unpack each peer's into my output."""
    with _program(name, AllGather(n, 1, inplace), n, size_range, tags, protocol="LL") as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            for p in _peers(n, r):
                at = _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], inp[0:1], tb=_slot(p, r))
            for p in _peers(n, r):
                at = _slot(p, r)
                rank.unpack_packets(out[p : p + 1], scratch[r][at : at + 1], tb=_slot(p, r))
            if not inplace:
                rank.copy(out[r : r + 1], inp[0:1], tb=0)
    return program


def allgather_put(name, n, inplace, size_range, tags):
    """Simple: after a handshake, put my chunk straight into every peer's output; signal/wait."""
    with _program(name, AllGather(n, 1, inplace), n, size_range, tags) as program:
        channels = _channels(n)
        tb_of = lambda r, p: _slot(p, r)  # noqa: E731
        _handshake(channels, n, tb_of)
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            for p in _peers(n, r):
                channels[(r, p)].put(Rank(p).get_output_buffer()[r : r + 1], inp[0:1], tb=tb_of(r, p))
            if not inplace:
                rank.copy(out[r : r + 1], inp[0:1], tb=0)
        _finish(channels, n, tb_of)
    return program


def reducescatter_ll(name, n, inplace, size_range, tags):
    """LL: chunk p to rank p's scratch as packets; reduce my chunk with the packets received."""
    with _program(name, ReduceScatter(n, 1, inplace), n, size_range, tags, protocol="LL") as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for p in _peers(n, r):
                at = _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], inp[p : p + 1], tb=_slot(p, r))
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            received = [scratch[r][_slot(p, r) : _slot(p, r) + 1] for p in _peers(n, r)]
            rank.reduce(inp[r : r + 1], received, tb=n - 1, dst_chunk=out[0:1], packet=True)
    return program


def reducescatter_put(name, n, inplace, size_range, tags):
    """Simple: the reduce-scatter half of allreduce_rsag, then a signal/wait so no peer refills my
    scratch (next launch) before I have read it."""
    with _program(name, ReduceScatter(n, 1, inplace), n, size_range, tags) as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        outputs = [Rank(r).get_output_buffer() for r in range(n)]
        _scatter_reduce(n, channels, scratch, lambda r: outputs[r][0:1], lambda r, p: _slot(p, r), n - 1)
        _finish(channels, n, lambda r, p: n - 1)
    return program


def alltoall_put(name, n, inplace, size_range, tags):
    """Out of place: after a handshake, put block p straight into rank p's output; in place: through
    the peer's scratch, copied into place after the peer's signal. Signal/wait at the end."""
    with _program(name, AllToAll(n, 1, inplace), n, size_range, tags) as program:
        channels = _channels(n)
        tb_of = lambda r, p: _slot(p, r)  # noqa: E731
        scratch = [Buffer(r, n - 1) for r in range(n)] if inplace else None
        if not inplace:
            _handshake(channels, n, tb_of)
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in _peers(n, r):
                if inplace:
                    at = _slot(r, p)
                    target = scratch[p][at : at + 1]
                else:
                    target = Rank(p).get_output_buffer()[r : r + 1]
                channels[(r, p)].put(target, inp[p : p + 1], tb=tb_of(r, p))
                channels[(r, p)].signal(tb=tb_of(r, p), data_sync=SyncType.before)
            if not inplace:
                rank.copy(rank.get_output_buffer()[r : r + 1], inp[r : r + 1], tb=0)
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in _peers(n, r):
                channels[(r, p)].wait(tb=tb_of(r, p), data_sync=SyncType.after)
                if inplace:
                    at = _slot(p, r)
                    rank.copy(inp[p : p + 1], scratch[r][at : at + 1], tb=tb_of(r, p))
        if inplace:
            _finish(channels, n, tb_of)
    return program


def broadcast_put(name, n, inplace, size_range, tags, root):
    """The root waits for every peer to enter, puts its input into every peer's output and signals."""
    with _program(name, Broadcast(n, 1, inplace, root), n, size_range, tags) as program:
        channels = _channels(n)
        for p in _peers(n, root):
            channels[(p, root)].signal(tb=0, relaxed=True)
        rank = Rank(root)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        for p in _peers(n, root):
            tb = _slot(p, root)
            channels[(root, p)].wait(tb=tb, relaxed=True, data_sync=SyncType.after)
            channels[(root, p)].put(Rank(p).get_output_buffer()[0:1], inp[0:1], tb=tb)
            channels[(root, p)].signal(tb=tb, data_sync=SyncType.before)
        if not inplace:
            rank.copy(out[0:1], inp[0:1], tb=0)
        for p in _peers(n, root):
            channels[(p, root)].wait(tb=0, data_sync=SyncType.after)
    return program


def reduce_put(name, n, inplace, size_range, tags, root):
    """Every peer puts its input into the root's scratch and signals; the root reduces into its
    output and then releases the peers (its scratch is free again)."""
    with _program(name, Reduce(n, 1, inplace, root), n, size_range, tags) as program:
        channels = _channels(n)
        scratch = Buffer(root, n - 1)
        for p in _peers(n, root):
            at = _slot(p, root)
            channels[(p, root)].put(scratch[at : at + 1], Rank(p).get_input_buffer()[0:1], tb=0)
            channels[(p, root)].signal(tb=0, data_sync=SyncType.before)
        rank = Rank(root)
        for p in _peers(n, root):
            channels[(root, p)].wait(tb=0, data_sync=SyncType.after)
        received = [scratch[_slot(p, root) : _slot(p, root) + 1] for p in _peers(n, root)]
        rank.reduce(rank.get_input_buffer()[0:1], received, tb=0, dst_chunk=rank.get_output_buffer()[0:1])
        for p in _peers(n, root):
            channels[(root, p)].signal(tb=0, data_sync=SyncType.before)
        for p in _peers(n, root):
            channels[(p, root)].wait(tb=0, data_sync=SyncType.after)
    return program


def gather_put(name, n, inplace, size_range, tags, root):
    """The root tells every peer it has entered; each peer puts its input into part p of the root's
    output and signals; the root's call ends once every part has arrived."""
    with _program(name, Gather(n, 1, inplace, root), n, size_range, tags) as program:
        channels = _channels(n)
        for p in _peers(n, root):
            channels[(root, p)].signal(tb=_slot(p, root), relaxed=True)
        root_out = Rank(root).get_output_buffer()
        for p in _peers(n, root):
            channels[(p, root)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
            channels[(p, root)].put(root_out[p : p + 1], Rank(p).get_input_buffer()[0:1], tb=0)
            channels[(p, root)].signal(tb=0, data_sync=SyncType.before)
        rank = Rank(root)
        if not inplace:
            rank.copy(root_out[root : root + 1], rank.get_input_buffer()[0:1], tb=0)
        for p in _peers(n, root):
            channels[(root, p)].wait(tb=_slot(p, root), data_sync=SyncType.after)
    return program


def scatter_put(name, n, inplace, size_range, tags, root):
    """The root waits for every peer to enter, puts part p of its input into rank p's output and
    signals; each peer's call ends at that signal."""
    with _program(name, Scatter(n, 1, inplace, root), n, size_range, tags) as program:
        channels = _channels(n)
        for p in _peers(n, root):
            channels[(p, root)].signal(tb=0, relaxed=True)
        rank = Rank(root)
        inp, out = rank.get_input_buffer(), rank.get_output_buffer()
        for p in _peers(n, root):
            tb = _slot(p, root)
            channels[(root, p)].wait(tb=tb, relaxed=True, data_sync=SyncType.after)
            channels[(root, p)].put(Rank(p).get_output_buffer()[0:1], inp[p : p + 1], tb=tb)
            channels[(root, p)].signal(tb=tb, data_sync=SyncType.before)
        if not inplace:
            rank.copy(out[0:1], inp[root : root + 1], tb=0)
        for p in _peers(n, root):
            channels[(p, root)].wait(tb=0, data_sync=SyncType.after)
    return program


def sendrecv_put(name, n, inplace, size_range, tags):
    """The two-rank exchange the NCCL shim recognises (a grouped ncclSend + ncclRecv to and from the
    peer): each rank waits for the peer to enter, puts its input into the peer's output and signals."""
    assert n == 2 and not inplace, "an exchange is between the two ranks of a 2-rank job, out of place"
    with _program(name, SendRecv(n, 1, inplace), n, size_range, tags) as program:
        channels = _channels(n)
        _handshake(channels, n, lambda r, p: 0)
        for r in range(n):
            p = 1 - r
            channels[(r, p)].put(Rank(p).get_output_buffer()[0:1], Rank(r).get_input_buffer()[0:1], tb=0)
            channels[(r, p)].signal(tb=0, data_sync=SyncType.before)
        for r in range(n):
            channels[(r, 1 - r)].wait(tb=0, data_sync=SyncType.after)
    return program


def alltoallv_direct(name, n, inplace, size_range, tags):
    """All-to-all-v over every pair (docs/dsl-compiler.md, "Variable sizes"): after a handshake, put
    the segment for rank p straight into rank p's output, signal, copy the own segment, wait. The
    call's counts place and size every segment; an empty pair moves nothing."""
    with _program(name, AllToAllV(n), n, size_range, tags) as program:
        channels = _channels(n)
        tb_of = lambda r, p: _slot(p, r)  # noqa: E731
        _handshake(channels, n, tb_of)
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in _peers(n, r):
                channels[(r, p)].put(Rank(p).get_output_buffer()[r : r + 1], inp[p : p + 1], tb=tb_of(r, p))
                channels[(r, p)].signal(tb=tb_of(r, p), data_sync=SyncType.before)
            rank.copy(rank.get_output_buffer()[r : r + 1], inp[r : r + 1], tb=0)
        for r in range(n):
            for p in _peers(n, r):
                channels[(r, p)].wait(tb=tb_of(r, p), data_sync=SyncType.after)
    return program


def alltoallv_ll(name, n, inplace, size_range, tags, slot_bytes):
    """All-to-all-v staged through scratch for small segments: the segment for rank p goes to p's
    scratch slot as LL packets, which p unpacks into its output. A pair with a zero count moves no
    packet, so packets alone would let a rank run calls ahead of a peer and overwrite a slot the
    peer has not read: a relaxed handshake first keeps every rank within one call of its peers,
    which double scratch covers. A segment fits one slot of slot_bytes; the size range stops there."""
    with _program(name, AllToAllV(n, slot_bytes), n, size_range, tags, protocol="LL") as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        _handshake(channels, n, lambda r, p: _slot(p, r))
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            for p in _peers(n, r):
                at = _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], inp[p : p + 1], tb=_slot(p, r))
            for p in _peers(n, r):
                at = _slot(p, r)
                rank.unpack_packets(out[p : p + 1], scratch[r][at : at + 1], tb=_slot(p, r))
            rank.copy(out[r : r + 1], inp[r : r + 1], tb=0)
    return program


def reducescatterv_ll(name, n, inplace, size_range, tags, slot_bytes):
    """Reduce-scatter-v staged through scratch: rank r sends its segment for rank p to p's scratch
    slot as LL packets; p reduces its own segment with the packets received. Every rank sends rank p
    the same count, so a zero count removes all of p's packets: the relaxed handshake of
    alltoallv_ll keeps every rank within one call of its peers, which double scratch covers. A
    segment fits one slot of slot_bytes; the size range stops there."""
    with _program(name, ReduceScatterV(n, slot_bytes), n, size_range, tags, protocol="LL") as program:
        scratch = [Buffer(r, n - 1) for r in range(n)]
        channels = _channels(n)
        _handshake(channels, n, lambda r, p: _slot(p, r))
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for p in _peers(n, r):
                at = _slot(r, p)
                channels[(r, p)].put_packets(scratch[p][at : at + 1], inp[p : p + 1], tb=_slot(p, r))
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            received = [scratch[r][_slot(p, r) : _slot(p, r) + 1] for p in _peers(n, r)]
            rank.reduce(inp[r : r + 1], received, tb=n - 1, dst_chunk=out[0:1], packet=True)
    return program


def reducescatterv_read(name, n, inplace, size_range, tags):
    """Reduce-scatter-v without scratch, for segments of any size: after a handshake rank r adds the
    segment for r read from each peer's input to its own, peer by peer, into its output. A final
    signal/wait keeps every peer's input in place until its readers are done."""
    with _program(name, ReduceScatterV(n), n, size_range, tags) as program:
        channels = _channels(n)
        tb_of = lambda r, p: 0  # noqa: E731
        _handshake(channels, n, tb_of)
        for r in range(n):
            inp, out = Rank(r).get_input_buffer(), Rank(r).get_output_buffer()
            for k, p in enumerate(_peers(n, r)):
                source = inp[r : r + 1] if k == 0 else out[0:1]
                channels[(r, p)].reduce(source, [Rank(p).get_input_buffer()[r : r + 1]], 0, local_dst_chunk=out[0:1])
        _finish(channels, n, tb_of)
    return program
