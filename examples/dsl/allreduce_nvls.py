"""NVLS AllReduce in place, the example of MSCCL++'s DSL integration guide: rank r reduces
chunk r over the switch and stores the result back to every rank (fused into glres), between two
relaxed all-to-all handshakes."""
from mscclpp.language import AllReduce, BufferType, CollectiveProgram, MemoryChannel, Rank, SwitchChannel, SyncType


def build(
    name="allreduce_nvls_zero_copy",
    num_gpus=8,
    num_threads_per_block=1024,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=8,
):
    with CollectiveProgram(
        name,
        AllReduce(num_gpus, 1, True),
        num_gpus,
        instances=instances,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        switch = SwitchChannel(rank_list=list(range(num_gpus)), buffer_type=BufferType.input)
        channels = {(r, p): MemoryChannel(p, r) for r in range(num_gpus) for p in range(num_gpus) if p != r}
        for r in range(num_gpus):
            peers = [p for p in range(num_gpus) if p != r]
            for p in peers:
                channels[(r, p)].signal(tb=0, relaxed=True)
            for p in peers:
                channels[(r, p)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        for r in range(num_gpus):
            inp = Rank(r).get_input_buffer()
            switch.at_rank(r).reduce(buffer_offset=r, size=1, dst_chunk=inp[r : r + 1], tb=0)
            switch.at_rank(r).broadcast(src_chunk=inp[r : r + 1], buffer_offset=r, size=1, tb=0)
        for r in range(num_gpus):
            peers = [p for p in range(num_gpus) if p != r]
            for p in peers:
                channels[(r, p)].signal(tb=0, relaxed=True, data_sync=SyncType.before)
            for p in peers:
                channels[(r, p)].wait(tb=0, relaxed=True)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
