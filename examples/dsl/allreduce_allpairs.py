"""All-pairs AllReduce (Simple): rank r owns chunks [r*T, (r+1)*T) (T threadblocks); threadblock t
reads chunk r*T+t from every peer, reduces it locally and writes the result back to every peer
(fused into one rres). Relaxed handshake before, signal/wait after."""
from mscclpp.language import AllReduce, CollectiveProgram, MemoryChannel, Rank, SyncType


def build(
    name="allreduce",
    num_gpus=8,
    num_threads_per_block=1024,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=1,
    num_tb=8,
    inplace=True,
):
    with CollectiveProgram(
        name,
        AllReduce(num_gpus, num_tb, inplace),
        num_gpus,
        instances=instances,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        ranks = range(num_gpus)
        channels = {
            (r, p, tb): MemoryChannel(p, r) for r in ranks for tb in range(num_tb) for p in ranks if p != r
        }
        for r in ranks:
            for tb in range(num_tb):
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].signal(tb, relaxed=True)
        for r in ranks:
            for tb in range(num_tb):
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].wait(tb, data_sync=SyncType.after, relaxed=True)
        inputs = [Rank(r).get_input_buffer() for r in ranks]
        for r in ranks:
            for tb in range(num_tb):
                index = r * num_tb + tb
                mine = inputs[r][index : index + 1]
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].reduce(mine, [inputs[p][index : index + 1]], tb)
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].put(inputs[p][index : index + 1], mine, tb)
        for r in ranks:
            for tb in range(num_tb):
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].signal(tb, data_sync=SyncType.before)
        for r in ranks:
            for tb in range(num_tb):
                for p in ranks:
                    if p != r:
                        channels[(r, p, tb)].wait(tb)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
