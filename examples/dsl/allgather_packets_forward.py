"""LL AllGather in one threadblock: pack the own chunk into local scratch once, forward those packets
to every peer (fused into one rppkt), unpack the peers' chunks."""
from mscclpp.language import AllGather, Buffer, CollectiveProgram, MemoryChannel, Rank


def build(name="allgather_pkt_rppkt", num_gpus=8, num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
    with CollectiveProgram(
        name,
        AllGather(num_gpus, 1, True),
        num_gpus,
        protocol="LL",
        num_threads_per_block=num_threads_per_block,
        use_double_scratch_buffer=True,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        scratch = [Buffer(r, 2 * num_gpus) for r in range(num_gpus)]
        staging = num_gpus  # second half of scratch: the own chunk as packets
        for r in range(num_gpus):
            rank = Rank(r)
            rank.copy_packets(scratch[r][staging + r : staging + r + 1], rank.get_input_buffer()[0:1], tb=0)
        for r in range(num_gpus):
            for step in range(1, num_gpus):
                peer = (r + step) % num_gpus
                MemoryChannel(peer, r).read_put_packets(
                    scratch[peer][r : r + 1], scratch[r][staging + r : staging + r + 1], tb=0
                )
        for r in range(num_gpus):
            rank = Rank(r)
            out = rank.get_output_buffer()
            for step in range(1, num_gpus):
                peer = (r + step) % num_gpus
                rank.unpack_packets(out[peer : peer + 1], scratch[r][peer : peer + 1], tb=0)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
