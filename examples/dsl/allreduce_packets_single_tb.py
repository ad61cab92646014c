"""LL AllReduce on one threadblock: scatter chunk p to rank p as packets, reduce the received
packets into the own chunk and broadcast it as packets (fused into respkt), unpack the results."""
from mscclpp.language import AllReduce, Buffer, CollectiveProgram, MemoryChannel, Rank


def build(name="allreduce_naivy", num_gpus=8, num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
    with CollectiveProgram(
        name,
        AllReduce(num_gpus, 1, True),
        num_gpus,
        protocol="LL",
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        scratch = [Buffer(r, 2 * num_gpus) for r in range(num_gpus)]
        channels = {(r, p): MemoryChannel(p, r) for r in range(num_gpus) for p in range(num_gpus) if p != r}
        peers = lambda r: [p for p in range(num_gpus) if p != r]  # noqa: E731
        for r in range(num_gpus):
            inp = Rank(r).get_input_buffer()
            for p in peers(r):
                channels[(r, p)].put_packets(scratch[p][r : r + 1], inp[p : p + 1], 0)
        for r in range(num_gpus):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            rank.reduce(inp[r : r + 1], [scratch[r][p : p + 1] for p in peers(r)], 0, packet=True)
            for p in peers(r):
                channels[(r, p)].put_packets(scratch[p][num_gpus + r : num_gpus + r + 1], inp[r : r + 1], 0)
        for r in range(num_gpus):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in peers(r):
                rank.unpack_packets(inp[p : p + 1], scratch[r][num_gpus + p : num_gpus + p + 1], 0)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
