"""LL all-pairs AllReduce with one threadblock per chunk.

Rank r's input is N blocks of N chunks (N ranks). Phase 1: block p goes to rank p's scratch as
packets. Phase 2: threadblock i of rank r reduces chunk i of its own block with the N-1 received
copies and sends the result as packets to every peer (one respkt). Phase 3: unpack the peers'
results. auto_sync is off: packet flags order everything.
"""
from mscclpp.language import AllReduce, Buffer, CollectiveProgram, MemoryChannel, Rank


def build(
    name="allreduce_pkt",
    num_gpus=8,
    num_threads_per_block=1024,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=1,
):
    n = num_gpus
    with CollectiveProgram(
        name,
        AllReduce(n, n, True),
        n,
        instances=instances,
        protocol="LL",
        auto_sync=False,
        num_threads_per_block=num_threads_per_block,
        use_double_scratch_buffer=True,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        scratch = [Buffer(r, 2 * (n - 1) * n) for r in range(n)]
        channels = {(r, p): MemoryChannel(p, r) for r in range(n) for p in range(n) if p != r}
        # slot[a][b]: rank a's position among rank b's peers, its block in b's scratch
        slot = [[a if a < b else a - 1 for b in range(n)] for a in range(n)]
        second = n * (n - 1)  # where the scratch half for reduced results starts
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for p in range(n):
                if p != r:
                    s = slot[r][p] * n
                    channels[(r, p)].put_packets(scratch[p][s : s + n], inp[p * n : p * n + n], slot[p][r])
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            mine = scratch[r]
            peers = [p for p in range(n) if p != r]
            for i in range(n):
                received = [mine[slot[p][r] * n + i : slot[p][r] * n + i + 1] for p in peers]
                own = inp[r * n + i : r * n + i + 1]
                rank.reduce(own, received, i, packet=True)
                for p in peers:
                    s = second + slot[r][p] * n + i
                    channels[(r, p)].put_packets(scratch[p][s : s + 1], own, i)
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in range(n):
                if p != r:
                    s = second + slot[p][r] * n
                    rank.unpack_packets(inp[p * n : p * n + n], scratch[r][s : s + n], p)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
