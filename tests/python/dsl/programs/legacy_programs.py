"""Complete MSCCLPPLang programs, written in its style: ``chunk(...)`` references,
``sendtb``/``recvtb``, ``ChannelType.sm``/``proxy``/``nvls``, ``Json()``/``Check()``.

Each function builds its program for ``num_gpus`` ranks and returns it; ``emit=True`` also prints
the plan and the check (the way such programs end). test_legacy.py compiles, validates and
emulates every one at 2, 4 and 8 ranks (2 for those written for a pair).
"""
from mscclpp.language import *
from mscclpp.language.buffer import Buffer
from mscclpp.language.collectives import AllGather, AllReduce, AllToAll, SendRecv
from mscclpp.language.types import ChannelType, ReplicationPolicy


def _peers(rank, size):
    return [peer for peer in range(size) if peer != rank]


def _finish(emit):
    if emit:
        Json()
        Check()


def allreduce_allpairs(num_gpus=4, num_tb=2, instances=1, inplace=True, policy=None, emit=False):
    """Rank r owns chunks r*num_tb + t: it reads them from every peer (rre) once they signal, then
    puts the sum back to all peers and tells them."""
    size = num_gpus
    kwargs = {} if policy is None else {"replication_policy": policy}
    with MSCCLPPProgram("legacy_allreduce_allpairs", AllReduce(size, size * num_tb, inplace), size, instances,
                        **kwargs) as program:
        for r in range(size):
            for tb in range(num_tb):
                index = r * num_tb + tb
                for peer in _peers(r, size):  # my copy of the peer's chunk may be read now
                    theirs = peer * num_tb + tb
                    chunk(r, Buffer.input, theirs).signal(peer, Buffer.input, theirs, sendtb=tb)
                mine = chunk(r, Buffer.input, index)
                for peer in _peers(r, size):
                    mine.wait(peer, Buffer.input, index, recvtb=tb)
                total = mine.copy(r, Buffer.output, index, sendtb=tb)
                for peer in _peers(r, size):
                    total.reduce(chunk(peer, Buffer.input, index), recvtb=tb)
                for peer in _peers(r, size):
                    total.put(peer, Buffer.output, index, sendtb=tb)
                for peer in _peers(r, size):
                    total.signal(peer, Buffer.output, index, sendtb=tb)
                for peer in _peers(r, size):
                    chunk(r, Buffer.output, peer * num_tb + tb).wait(peer, Buffer.output, peer * num_tb + tb, recvtb=tb)
        _finish(emit)
    return program


def allreduce_get(num_gpus=4, num_tb=1, inplace=False, emit=False):
    """The get variant: each rank gets its chunk from every peer into scratch, reduces locally,
    then every rank gets the other owners' sums."""
    size = num_gpus
    with MSCCLPPProgram("legacy_allreduce_get", AllReduce(size, size * num_tb, inplace), size, 1) as program:
        for r in range(size):
            for tb in range(num_tb):
                index = r * num_tb + tb
                for peer in _peers(r, size):
                    theirs = peer * num_tb + tb
                    chunk(r, Buffer.input, theirs).signal(peer, Buffer.input, theirs, sendtb=tb)
                for peer in _peers(r, size):
                    chunk(r, Buffer.input, index).wait(peer, Buffer.input, index, recvtb=tb)
                total = chunk(r, Buffer.input, index).copy(r, Buffer.output, index, sendtb=tb)
                for slot, peer in enumerate(_peers(r, size)):
                    landed = chunk(r, Buffer.scratch, slot * num_tb + tb)
                    landed.get(peer, Buffer.input, index, recvtb=tb)
                    total.reduce(landed, recvtb=tb)
                for peer in _peers(r, size):  # my sum is ready
                    total.signal(peer, Buffer.output, index, sendtb=tb)
                for peer in _peers(r, size):
                    theirs = chunk(r, Buffer.output, peer * num_tb + tb)
                    theirs.wait(peer, Buffer.output, theirs.index, recvtb=tb)
                    theirs.get(peer, Buffer.output, theirs.index, recvtb=tb)
                for peer in _peers(r, size):  # done reading the peer's sum
                    chunk(r, Buffer.output, peer * num_tb + tb).signal(peer, Buffer.output, peer * num_tb + tb, sendtb=tb)
                for peer in _peers(r, size):
                    total.wait(peer, Buffer.output, index, recvtb=tb)
        _finish(emit)
    return program


def allreduce_packets(num_gpus=4, num_tb=1, inplace=False, emit=False):
    """LL: every rank sends each owner its chunk as packets, the owner reduces the packets and
    sends the sum as packets to everyone, who unpack it. No signal/wait: packet flags order it."""
    size = num_gpus
    results = size * num_tb  # scratch: operands first, sums after
    with MSCCLPPProgram("legacy_allreduce_packets", AllReduce(size, size * num_tb, inplace), size, 1,
                        protocol="LL") as program:
        for r in range(size):
            for tb in range(num_tb):
                for peer in _peers(r, size):
                    chunk(r, Buffer.input, peer * num_tb + tb).packet_put(peer, Buffer.scratch, r * num_tb + tb, sendtb=tb)
                index = r * num_tb + tb
                total = chunk(r, Buffer.input, index).copy(r, Buffer.output, index, sendtb=tb)
                for peer in _peers(r, size):
                    total.reduce_packet(chunk(r, Buffer.scratch, peer * num_tb + tb), recvtb=tb)
                for peer in _peers(r, size):
                    total.put_packet(peer, Buffer.scratch, results + index, sendtb=tb)
                for peer in _peers(r, size):
                    theirs = peer * num_tb + tb
                    chunk(r, Buffer.scratch, results + theirs).copy_packet(r, Buffer.output, theirs, sendtb=tb)
        _finish(emit)
    return program


def allreduce_ring(num_gpus=4, emit=False):
    """Ring: reduce-scatter (put into the next rank's scratch, it adds) then all-gather (put into
    the next rank's buffer), one signal per step, on one threadblock."""
    size = num_gpus
    with MSCCLPPProgram("legacy_allreduce_ring", AllReduce(size, size, True), size, 1) as program:
        for r in range(size):
            # the previous rank may write into my scratch from now on
            chunk(r, Buffer.input, 0).signal((r - 1) % size, Buffer.scratch, 0, sendtb=0)
        for r in range(size):
            chunk(r, Buffer.scratch, 0).wait((r + 1) % size, Buffer.input, 0, recvtb=0)
        for step in range(size - 1):
            for r in range(size):
                nxt, index = (r + 1) % size, (r - step) % size
                sent = chunk(r, Buffer.input, index).put(nxt, Buffer.scratch, step, sendtb=0)
                chunk(r, Buffer.input, index).signal(nxt, Buffer.scratch, step, sendtb=0)
                sent.wait(r, Buffer.input, index, recvtb=0)
                chunk(nxt, Buffer.input, index).reduce(sent, recvtb=0)
        for step in range(size - 1):
            for r in range(size):
                nxt, index = (r + 1) % size, (r + 1 - step) % size
                chunk(r, Buffer.input, index).put(nxt, Buffer.input, index, sendtb=0)
                chunk(r, Buffer.input, index).signal(nxt, Buffer.input, index, sendtb=0)
                chunk(nxt, Buffer.input, index).wait(r, Buffer.input, index, recvtb=0)
        _finish(emit)
    return program


def allreduce_nvls(num_gpus=4, emit=False):
    """NVLS: each rank multimem-reduces its chunk over the group and multimem-stores the sum."""
    size = num_gpus
    with MSCCLPPProgram("legacy_allreduce_nvls", AllReduce(size, size, True), size, 1) as program:
        for r in range(size):
            mine = chunk(r, Buffer.input, r)
            for peer in _peers(r, size):
                chunk(r, Buffer.input, peer).signal(peer, Buffer.input, peer, sendtb=0)
            for peer in _peers(r, size):
                mine.wait(peer, Buffer.input, r, recvtb=0)
            mine = mine.group_load_reduce([chunk(peer, Buffer.input, r) for peer in _peers(r, size)], recvtb=0)
            mine.group_store(_peers(r, size), sendtb=0, chan_type=ChannelType.nvls)
            for peer in _peers(r, size):
                mine.signal(peer, Buffer.input, r, sendtb=0)
            for peer in _peers(r, size):
                chunk(r, Buffer.input, peer).wait(peer, Buffer.input, peer, recvtb=0)
        _finish(emit)
    return program


def sendrecv_proxy(num_gpus=2, chunks=2, emit=False):
    """Rank r sends its input to rank r+1's output through a port (proxy) channel: a ready signal
    from the receiver, put, signal, flush."""
    size = num_gpus
    with MSCCLPPProgram("legacy_sendrecv_proxy", SendRecv(size, chunks, False), size, 1) as program:
        for r in range(size):
            prev = (r - 1) % size
            chunk(r, Buffer.output, 0, chunks).signal(prev, Buffer.input, 0, sendtb=0, chan_type=ChannelType.proxy)
        for r in range(size):
            nxt = (r + 1) % size
            data = chunk(r, Buffer.input, 0, chunks)
            data.wait(nxt, Buffer.output, 0, recvtb=0, chan_type=ChannelType.proxy)
            data.put(nxt, Buffer.output, 0, sendtb=0, chan_type=ChannelType.proxy)
            data.signal(nxt, Buffer.output, 0, sendtb=0, chan_type=ChannelType.proxy)
            data.flush(nxt, Buffer.output, 0, sendtb=0, chan_type=ChannelType.proxy)
        for r in range(size):
            chunk(r, Buffer.output, 0, chunks).wait((r - 1) % size, Buffer.input, 0, recvtb=0, chan_type=ChannelType.proxy)
        _finish(emit)
    return program


def sendrecv_packets(num_gpus=2, chunks=2, chan_type=ChannelType.sm, emit=False):
    """LL send/recv: packets into the next rank's scratch (over a port channel packed first into
    a temporary scratch area), unpacked into its output."""
    size = num_gpus
    with MSCCLPPProgram("legacy_sendrecv_packets", SendRecv(size, chunks, False), size, 1, protocol="LL") as program:
        for r in range(size):
            data = chunk(r, Buffer.input, 0, chunks)
            data.put_packet((r + 1) % size, Buffer.scratch, 0, sendtb=0, chan_type=chan_type,
                            temp_buffer=Buffer.scratch, temp_buffer_index=chunks)
        for r in range(size):
            chunk(r, Buffer.scratch, 0, chunks).copy_packet(r, Buffer.output, 0, sendtb=0)
        _finish(emit)
    return program


def allgather_barrier(num_gpus=4, inplace=False, emit=False):
    """Threadblock p of each rank serves peer p (the MSCCLPPLang convention that pairs channels):
    it waits until p's output slot is free and puts the rank's chunk there; a barrier joins the
    threadblocks, then each tells its peer."""
    size = num_gpus
    with MSCCLPPProgram("legacy_allgather_barrier", AllGather(size, 1, inplace), size, 1,
                        replication_policy=ReplicationPolicy.interleaved) as program:
        for r in range(size):
            for peer in _peers(r, size):  # my output slot for the peer's chunk is free
                chunk(r, Buffer.output, peer).signal(peer, Buffer.input, 0, sendtb=peer)
        for r in range(size):
            mine = chunk(r, Buffer.input, 0)
            for peer in range(size):
                if peer == r:
                    mine.copy(r, Buffer.output, r, sendtb=r)
                else:
                    mine.wait(peer, Buffer.output, r, recvtb=peer)
                    mine.put(peer, Buffer.output, r, sendtb=peer)
            rank(r).barrier(list(range(size)))
            for peer in _peers(r, size):
                mine.signal(peer, Buffer.output, r, sendtb=peer)
        for r in range(size):
            for peer in _peers(r, size):
                chunk(r, Buffer.output, peer).wait(peer, Buffer.input, 0, recvtb=peer)
        _finish(emit)
    return program


def alltoall_proxy(num_gpus=4, instances=2, policy=ReplicationPolicy.interleaved, emit=False):
    """All-to-all over port channels, one threadblock per peer, replicated. (With the duplicated
    policy each instance takes a contiguous half of the buffers, which mixes up the peers' blocks:
    a wrong all-to-all, which Check() reports.)"""
    size = num_gpus
    with MSCCLPPProgram("legacy_alltoall_proxy", AllToAll(size, 1, False), size, instances,
                        replication_policy=policy) as program:
        for r in range(size):
            for peer in _peers(r, size):
                chunk(r, Buffer.output, peer).signal(peer, Buffer.input, r, sendtb=peer, chan_type=ChannelType.proxy)
        for r in range(size):
            chunk(r, Buffer.input, r).copy(r, Buffer.output, r, sendtb=r)
            for peer in _peers(r, size):
                data = chunk(r, Buffer.input, peer)
                data.wait(peer, Buffer.output, r, recvtb=peer, chan_type=ChannelType.proxy)
                data.put(peer, Buffer.output, r, sendtb=peer, chan_type=ChannelType.proxy)
                data.signal(peer, Buffer.output, r, sendtb=peer, chan_type=ChannelType.proxy)
            for peer in _peers(r, size):
                chunk(r, Buffer.output, peer).wait(peer, Buffer.input, r, recvtb=peer, chan_type=ChannelType.proxy)
        _finish(emit)
    return program


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("program")
    parser.add_argument("num_gpus", type=int)
    args = parser.parse_args()
    globals()[args.program](args.num_gpus, emit=True)
