"""AllGather, 2 ranks, the put shared by a group of 4 threadblocks between two barriers."""
from mscclpp.language import AllGather, CollectiveProgram, MemoryChannel, Rank, SyncType, ThreadBlockGroup


def build(name="allgather_tbg", num_gpus=2, num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
    with CollectiveProgram(
        name,
        AllGather(num_gpus, 1, True),
        num_gpus,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        for src in range(num_gpus):
            rank = Rank(src)
            mine = rank.get_output_buffer()[src : src + 1]
            for dst in range(num_gpus):
                if dst == src:
                    continue
                theirs = Rank(dst).get_output_buffer()[src : src + 1]
                channel = MemoryChannel(dst, src)
                group = ThreadBlockGroup(tb_list=[0, 1, 2, 3])
                channel.signal(tb=0, relaxed=True)
                channel.wait(tb=0, data_sync=SyncType.after, relaxed=True)
                rank.barrier(tb_list=group.tb_list)
                channel.put(theirs, mine, tb_group=group)
                rank.barrier(tb_list=group.tb_list)
                channel.signal(tb=0, data_sync=SyncType.before)
                channel.wait(tb=0, data_sync=SyncType.after)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
