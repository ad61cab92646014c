"""LL AllGather through NVLS: pack the own chunk into scratch, multicast the packets into every
rank's scratch, unpack each slot on its own threadblock."""
from mscclpp.language import AllGather, Buffer, BufferType, CollectiveProgram, Rank, SwitchChannel


def build(
    name="allgather_nvls_zero_copy_pkt",
    num_gpus=8,
    num_threads_per_block=256,
    min_message_size=1024,
    max_message_size=1024 * 1024,
    instances=1,
):
    with CollectiveProgram(
        name,
        AllGather(num_gpus, 1, True),
        num_gpus,
        instances=instances,
        protocol="LL",
        auto_sync=False,
        num_threads_per_block=num_threads_per_block,
        use_double_scratch_buffer=True,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        scratch = [Buffer(r, num_gpus) for r in range(num_gpus)]
        switch = SwitchChannel(rank_list=list(range(num_gpus)), buffer_type=BufferType.scratch)
        for r in range(num_gpus):
            rank = Rank(r)
            rank.copy_packets(scratch[r][r : r + 1], rank.get_output_buffer()[r : r + 1], tb=0)
            switch.at_rank(r).broadcast_packets(src_chunk=scratch[r][r : r + 1], buffer_offset=r, size=1, tb=0)
        for r in range(num_gpus):
            rank = Rank(r)
            out = rank.get_output_buffer()
            for slot in range(num_gpus):
                rank.unpack_packets(out[slot : slot + 1], scratch[r][slot : slot + 1], tb=slot)
    return program


if __name__ == "__main__":
    from example_args import run

    run(build)
