"""AllGather through NVLS: each rank multicasts its own output chunk to every rank's output, between
two all-to-all relaxed handshakes."""
from mscclpp.language import AllGather, BufferType, CollectiveProgram, MemoryChannel, Rank, SwitchChannel, SyncType


def build(
    name="allgather_nvls_zero_copy",
    num_gpus=8,
    num_threads_per_block=256,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=8,
):
    with CollectiveProgram(
        name,
        AllGather(num_gpus, 1, True),
        num_gpus,
        instances=instances,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        switch = SwitchChannel(rank_list=list(range(num_gpus)), buffer_type=BufferType.output)
        channels = {(r, p): MemoryChannel(p, r) for r in range(num_gpus) for p in range(num_gpus) if p != r}
        _handshake(channels, num_gpus, before=False)
        for r in range(num_gpus):
            out = Rank(r).get_output_buffer()
            switch.at_rank(r).broadcast(src_chunk=out[r : r + 1], buffer_offset=r, size=1, tb=0)
        _handshake(channels, num_gpus, before=True)
    return program


def _handshake(channels, num_gpus, before):
    for r in range(num_gpus):
        peers = [p for p in range(num_gpus) if p != r]
        for p in peers:
            channels[(r, p)].signal(tb=0, relaxed=True, data_sync=SyncType.before if before else SyncType.both)
        for p in peers:
            channels[(r, p)].wait(tb=0, relaxed=True, data_sync=SyncType.both if before else SyncType.after)


if __name__ == "__main__":
    from example_args import run

    run(build)
