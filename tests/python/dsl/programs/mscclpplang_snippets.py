"""The snippets and API listing of MSCCLPPLang's documentation, completed minimally.

Lines marked "completion" define what a fragment leaves undefined; every DSL call is the
document's, with the argument names its API listing gives."""
from mscclpp.language import *  # noqa: F403


def chunk_snippet():
    with MSCCLPPProgram("mscclpplang_chunk", AllReduce(2, 4, True), 2, 1) as program:
        rank, index, size = 0, 1, 2  # completion
        c = chunk(rank, Buffer.input, index, size)
        c = chunk(0, Buffer.input, 0, 2)
        c.copy(0, Buffer.scratch, 0, sendtb=0)  # completion: a program that does something
    return program


def basic_api_snippet():
    """The basic APIs, each called as listed: put, get, signal, wait, copy, reduce (a 2-rank
    allreduce: each rank sums its chunk from the peer's put, then gets the peer's sum)."""
    with MSCCLPPProgram("mscclpplang_basic", AllReduce(2, 2, False), 2, 1) as program:
        for r in range(2):  # completion: both ranks, so every signal meets its wait
            other = 1 - r  # completion
            c = chunk(r, Buffer.input, other)  # completion
            c.put(dst=other, chunk=Buffer.scratch, index=0, sendtb=0, chan_type=ChannelType.sm)
            c.signal(dst=other, buffer=Buffer.scratch, index=0, sendtb=0, chan_type=ChannelType.sm)
        for r in range(2):
            other = 1 - r  # completion
            landed = chunk(r, Buffer.scratch, 0)  # completion
            landed.wait(src=other, buffer=Buffer.input, index=r, recvtb=0, chan_type=ChannelType.sm)
            mine = chunk(r, Buffer.input, r).copy(dst=r, buffer=Buffer.output, index=r, sendtb=0)
            mine.reduce(other_chunkref=landed, recvtb=0, channel_type=ChannelType.sm)
            mine.signal(dst=other, buffer=Buffer.output, index=r, sendtb=0, chan_type=ChannelType.sm)
        for r in range(2):
            other = 1 - r  # completion
            theirs = chunk(r, Buffer.output, other)  # completion
            theirs.wait(src=other, buffer=Buffer.output, index=other, recvtb=0, chan_type=ChannelType.sm)
            theirs.get(src=other, chunk=Buffer.output, index=other, recvtb=0, chan_type=ChannelType.sm)
            theirs.signal(dst=other, buffer=Buffer.output, index=other, sendtb=0)  # completion: done reading
        for r in range(2):
            chunk(r, Buffer.output, r).wait(1 - r, Buffer.output, r, recvtb=0)  # completion
    return program


def packet_api_snippet():
    """The packet APIs, each called as listed: packet_put, copy_packet, reduce_packet."""
    with MSCCLPPProgram("mscclpplang_packets", AllReduce(2, 2, False), 2, 1, protocol="LL") as program:
        for r in range(2):  # completion
            other = 1 - r  # completion
            c = chunk(r, Buffer.input, other)  # completion
            c.packet_put(dst=other, chunk=Buffer.scratch, index=0, sendtb=0, chan_type=ChannelType.sm)
        for r in range(2):
            total = chunk(r, Buffer.input, r).copy(r, Buffer.output, r, sendtb=0)  # completion
            total.reduce_packet(other_chunkref=chunk(r, Buffer.scratch, 0), recvtb=0)
            total.packet_put(dst=1 - r, chunk=Buffer.scratch, index=1, sendtb=0, chan_type=ChannelType.sm)
        for r in range(2):
            landed = chunk(r, Buffer.scratch, 1)  # completion
            landed.copy_packet(dst=r, buffer=Buffer.output, index=1 - r, sendtb=0)
    return program


def proxy_snippet():
    """ChannelType.proxy, with MSCCLPPLang's flush."""
    with MSCCLPPProgram("mscclpplang_proxy", AllGather(2, 1, False), 2, 1) as program:
        for r in range(2):  # completion
            other = 1 - r  # completion
            c = chunk(r, Buffer.input, 0)  # completion
            c.copy(r, Buffer.output, r, sendtb=0)  # completion
            c.put(other, Buffer.output, r, sendtb=0, chan_type=ChannelType.proxy)
            c.signal(other, Buffer.output, r, sendtb=0, chan_type=ChannelType.proxy)
            c.flush(other, Buffer.output, r, sendtb=0, chan_type=ChannelType.proxy)
        for r in range(2):
            chunk(r, Buffer.output, 1 - r).wait(1 - r, Buffer.input, 0, recvtb=0, chan_type=ChannelType.proxy)
    return program


SNIPPETS = [chunk_snippet, basic_api_snippet, packet_api_snippet, proxy_snippet]
