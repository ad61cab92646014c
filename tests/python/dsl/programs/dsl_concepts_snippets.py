"""The snippets of MSCCL++'s DSL concepts document, completed minimally.

Lines marked "completion" define what a fragment leaves undefined; every DSL call is the
document's, unchanged."""
from mscclpp.language import *  # noqa: F403


def channel_snippet():
    with CollectiveProgram("concepts_channel", TestCollective(2, 1, 1), 2) as program:
        for src_rank, dst_rank in ((0, 1), (1, 0)):  # completion: both directions, so signals pair
            channel_type, tag = ChannelType.memory, 0  # completion
            dst_chunk = Rank(dst_rank).get_output_buffer()[0:1]  # completion
            src_chunk = Rank(src_rank).get_input_buffer()[0:1]  # completion
            channel = Channel(dst_rank, src_rank, channel_type, tag)
            channel.put(dst_chunk, src_chunk, tb=0)
            channel.signal(tb=0, sync="before")
            channel.wait(tb=0, sync="after")
    return program


def nvls_snippet():
    with CollectiveProgram("concepts_nvls", AllReduce(2, 1, True), 2) as program:
        nvls_chan = SwitchChannel(rank_list=[], buffer_type=Buffer.input, tag=0)
        for rank in range(2):  # completion: each rank reduces and broadcasts its chunk
            Rank(rank)  # completion: the rank the channel-level calls run on
            index1, size1, index, size = rank, 1, rank, 1  # completion
            nvls_chan.group_reduce(index1, size1)
            nvls_chan.group_broadcast(index, size)
    return program


def nvls_snippet_without_rank():
    """The document's NVLS lines with no Rank(...) before them: each call runs on the group rank
    that owns its range (docs/dsl-compiler.md)."""
    with CollectiveProgram("concepts_nvls_no_rank", AllReduce(2, 1, True), 2) as program:
        nvls_chan = SwitchChannel(rank_list=[], buffer_type=Buffer.input, tag=0)
        for rank in range(2):  # completion: every chunk is reduced and broadcast
            index1, size1, index, size = rank, 1, rank, 1  # completion
            nvls_chan.group_reduce(index1, size1)
            nvls_chan.group_broadcast(index, size)
    return program


def chunk_snippet():
    with CollectiveProgram("concepts_chunk", TestCollective(1, 2, 0), 1) as program:
        rank, index, size = 0, 0, 1  # completion
        dst = Chunk(rank, index, size)
        scr = Chunk(rank, index + 1, size)
        dst_chunk, src_chunk = dst, scr  # completion: the next lines name them so
        Rank.copy(dst_chunk, src_chunk, tb=0)
        Rank.reduce(dst_chunk, src_chunk, op="sum", tb=0)
    return program


def sync_snippet():
    with CollectiveProgram("concepts_sync", TestCollective(1, 0, 0), 1) as program:
        rank = Rank(0)  # completion
        rank.barrier(tb_list=[])
        sem = Rank.Semaphore(size=1, tag=0)
        sem.acquire(tb=0)
        sem.release(tb=0)
    return program


def pipeline_snippet():
    with CollectiveProgram("concepts_pipeline", TestCollective(2, 1, 1), 2) as program:
        src_rank, dst_rank, channel_type, tag = 0, 1, ChannelType.memory, 0  # completion
        Rank(src_rank)  # completion: the semaphore's rank
        sem = Rank.Semaphore(size=1, tag=0)
        sme = sem  # completion: the document spells it both ways
        scratch = Buffer(src_rank, 1)  # completion
        dst_chunk, src_chunk = scratch[0:1], Rank(src_rank).get_input_buffer()[0:1]  # completion
        with Loop.iteration(unit=2**20, num_chunks=1) as iter:
            # the dst_chunk and src_chunk size but same as loop context
            Rank.copy(dst_chunk, src_chunk, tb=0, iter_context=iter)
            sem.release(tb=0)
            channel = Channel(dst_rank, src_rank, channel_type, tag)
            sme.acquire(tb=1)
            dst_chunk, src_chunk = Rank(dst_rank).get_output_buffer()[0:1], dst_chunk  # completion: now the put's
            channel.put(dst_chunk, src_chunk, tb=1, iter_context=iter)
    return program


SNIPPETS = [channel_snippet, nvls_snippet, nvls_snippet_without_rank, chunk_snippet, sync_snippet, pipeline_snippet]
