"""AllGather on memory channels, 2 ranks: each rank puts its chunk into the peer's output,
bracketed by a relaxed handshake before and a signal/wait after."""
from mscclpp.language import AllGather, CollectiveProgram, MemoryChannel, Rank, SyncType


def build(name="allgather", num_gpus=2, num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
    with CollectiveProgram(
        name,
        AllGather(num_gpus, 1, True),
        num_gpus,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        for src in range(num_gpus):
            mine = Rank(src).get_output_buffer()[src : src + 1]
            for dst in range(num_gpus):
                if dst == src:
                    continue
                theirs = Rank(dst).get_output_buffer()[src : src + 1]
                channel = MemoryChannel(dst, src)
                channel.signal(tb=0, relaxed=True)
                channel.wait(tb=0, data_sync=SyncType.after, relaxed=True)
                channel.put(theirs, mine, tb=0)
                channel.signal(tb=0, data_sync=SyncType.before)
                channel.wait(tb=0, data_sync=SyncType.after)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
