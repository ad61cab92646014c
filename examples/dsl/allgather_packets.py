"""LL AllGather: every rank sends its chunk as packets into each peer's scratch (one threadblock per
peer), then unpacks what it received (another threadblock per peer). No signal/wait: flags sync."""
from mscclpp.language import AllGather, Buffer, CollectiveProgram, MemoryChannel, Rank


def build(name="allgather_pkt", num_gpus=8, num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
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
        scratch = [Buffer(r, num_gpus) for r in range(num_gpus)]
        for r in range(num_gpus):
            out = Rank(r).get_output_buffer()
            for step in range(1, num_gpus):
                peer = (r + step) % num_gpus
                MemoryChannel(peer, r).put_packets(scratch[peer][r : r + 1], out[r : r + 1], tb=step - 1)
        for r in range(num_gpus):
            rank = Rank(r)
            out = rank.get_output_buffer()
            for step in range(1, num_gpus):
                peer = (r + step) % num_gpus
                rank.unpack_packets(out[peer : peer + 1], scratch[r][peer : peer + 1], tb=num_gpus + step - 2)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
