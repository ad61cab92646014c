"""Pipelined 2-rank NVLS AllReduce in 1 MiB steps: tb0 copies input to scratch and handshakes,
tb1 reduces/broadcasts over the switch, tb2 copies the result out; semaphores chain the stages."""
from mscclpp.language import (
    AllReduce,
    Buffer,
    BufferType,
    CollectiveProgram,
    LoopIterationContext,
    MemoryChannel,
    Rank,
    Semaphore,
    SwitchChannel,
    SyncType,
)


def build(name="allreduce_pipeline", num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
    nranks = 2
    with CollectiveProgram(
        name,
        AllReduce(nranks, 1, True),
        nranks,
        reuse_resources=True,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        switch = SwitchChannel(rank_list=[0, 1], buffer_type=BufferType.scratch)
        scratch = [Buffer(r, nranks) for r in range(nranks)]
        for r in range(nranks):
            peer = (r + 1) % nranks
            ready = MemoryChannel(peer, r)
            done = MemoryChannel(peer, r)
            rank = Rank(r)
            copied, reduced = Semaphore(rank=r, initial_value=0), Semaphore(rank=r, initial_value=0)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            with LoopIterationContext(unit=2**20, num_chunks=1):
                for i in range(nranks):
                    rank.copy(scratch[r][i : i + 1], inp[i : i + 1], tb=0)
                ready.signal(tb=0, data_sync=SyncType.before)
                ready.wait(tb=0, data_sync=SyncType.after)
                copied.release(tb=0)

                copied.acquire(tb=1, data_sync=SyncType.after)
                switch.at_rank(r).reduce(buffer_offset=r, size=1, dst_chunk=scratch[r][r : r + 1], tb=1)
                switch.at_rank(r).broadcast(src_chunk=scratch[r][r : r + 1], buffer_offset=r, size=1, tb=1)
                done.signal(tb=1, data_sync=SyncType.before)
                reduced.release(tb=1)

                reduced.acquire(tb=2)
                done.wait(tb=2, data_sync=SyncType.after)
                for i in range(nranks):
                    rank.copy(out[i : i + 1], scratch[r][i : i + 1], tb=2)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
