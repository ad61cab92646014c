"""The snippets of MSCCL++'s DSL guide (the current DSL), completed minimally.

Lines marked "completion" define what a fragment leaves undefined; every DSL call is the
guide's, unchanged."""
from mscclpp.language import *  # noqa: F403


def chunk_snippet():
    with CollectiveProgram("guide_chunk", TestCollective(1, 2, 0), 1) as program:
        rank_id = 0  # completion
        rank = Rank(rank_id)
        input_buffer = rank.get_input_buffer()
        dst_chunk = input_buffer[0:1]
        src_chunk = input_buffer[1:2]
        rank.copy(dst_chunk, src_chunk, tb=0)
        rank.reduce(dst_chunk, src_chunk, op=ReduceOperationType.sum, tb=0)
    return program


def channel_snippet():
    with CollectiveProgram("guide_channel", TestCollective(2, 0, 0), 2) as program:
        nranks = 2
        for i in range(nranks):
            src_rank = i
            dst_rank = (i + 1) % nranks
            channel = MemoryChannel(dst_rank, src_rank)
            channel.relaxedSignal(tb=0, data_sync=SyncType.none)
            channel.relaxedWait(tb=0, data_sync=SyncType.after)
    return program


def switch_snippet():
    gpu_size = 2  # completion
    with CollectiveProgram("guide_switch", AllReduce(gpu_size, 1, True), gpu_size) as program:
        switch_chan = SwitchChannel(rank_list=[gpu for gpu in range(gpu_size)], buffer_type=BufferType.input)
        for gpu in range(gpu_size):
            buffer_offset = gpu
            rank = Rank(gpu)
            input_buffer = rank.get_input_buffer()
            switch_chan.at_rank(gpu).group_load_reduce(buffer_offset, size=1, dst_chunk=input_buffer[gpu : gpu + 1], tb=0)
            switch_chan.at_rank(gpu).group_store(input_buffer[gpu : gpu + 1], buffer_offset, size=1, tb=0)
    return program


def sync_snippet():
    with CollectiveProgram("guide_sync", TestCollective(1, 0, 0), 1) as program:
        rank = Rank(0)
        rank.barrier([0, 1])
        sem = Semaphore(rank=0, initial_value=1)
        sem.acquire(tb=0, data_sync=SyncType.after)
        sem.release(tb=0, data_sync=SyncType.before)
    return program


def pipeline_snippet():
    with CollectiveProgram("guide_pipeline", TestCollective(2, 1, 1), 2) as program:
        src_rank, dst_rank, channel_type = 0, 1, ChannelType.memory  # completion
        rank = src_rank  # completion: the guide passes rank= before rebinding it
        scratch = Buffer(src_rank, 1)  # completion
        dst_chunk, src_chunk = scratch[0:1], Rank(src_rank).get_input_buffer()[0:1]  # completion
        other_peer_chunk = Rank(dst_rank).get_output_buffer()[0:1]  # completion
        sem = Rank.Semaphore(rank=rank, initial_value=1)
        rank = Rank(src_rank)
        with Loop.iteration(unit=2**20, num_chunks=1) as iter:
            # The dst_chunk and src_chunk sizes should match the num_chunks parameter in the loop context.
            rank.copy(dst_chunk, src_chunk, tb=0, iter_context=iter)
            sem.release(tb=0)
            channel = Channel(dst_rank, src_rank, channel_type)
            sem.acquire(tb=1)
            channel.put(other_peer_chunk, dst_chunk, tb=1, iter_context=iter)
    return program


def allreduce_snippet():
    scratch_buffer_size = 2  # completion
    nranks = 2
    with CollectiveProgram("guide_allreduce", AllReduce(nranks, 1, True), nranks) as program:
        nvls_chan = SwitchChannel(rank_list=[0, 1], buffer=Buffer.scratch)
        for i in range(nranks):
            src_rank = i
            dst_rank = (i + 1) % nranks
            chan = Channel(dst_rank, src_rank, channel_type=Channel.memory)
            chan1 = Channel(dst_rank, src_rank, channel_type=Channel.memory)
            rank = Rank(i)
            sem0 = Rank.Semaphore(rank=i, size=1)
            sem1 = Rank.Semaphore(rank=i, size=1)
            input_buffer = rank.get_input_buffer()
            output_buffer = rank.get_output_buffer()
            scratch_buffer = Buffer(i, scratch_buffer_size)
            with Loop.iteration(unit=2**20, num_chunks=1) as iter:
                # copy data to scratch buffer
                for offset in range(nranks):
                    dst_chunk = scratch_buffer[offset : offset + 1]
                    src_chunk = input_buffer[offset : offset + 1]
                    rank.copy(dst_chunk, src_chunk, tb=0, iter_context=iter)
                chan.signal(tb=0, sync="before")
                chan.wait(tb=0, sync="after")
                sem0.release(tb=0)

                # do allreduce in scratch buffer
                sem0.acquire(tb=1, sync="after")
                nvls_chan.group_load_reduce(offset, size=1, op="sum", tb=1, iter_context=iter)
                nvls_chan.group_store(offset, size=1, tb=1, iter_context=iter)
                chan1.signal(tb=1, sync="before")
                sem1.release(tb=1)

                # copy data back to output buffer
                sem1.acquire(tb=2)
                chan1.wait(tb=2, sync="after")
                for index in range(nranks):
                    dst_chunk = output_buffer[index : index + 1]
                    src_chunk = scratch_buffer[index : index + 1]
                    rank.copy(dst_chunk, src_chunk, tb=2, iter_context=iter)
    return program


SNIPPETS = [chunk_snippet, channel_snippet, switch_snippet, sync_snippet, pipeline_snippet, allreduce_snippet]
