#!/usr/bin/env python3
"""NCCL interposition, from MSCCL++'s DSL integration guide: plain PyTorch with backend="nccl".

GPU ONLY: it needs torch with CUDA, one GPU per rank and the NCCL shim preloaded. The shim runs
an ncclAllReduce on the MSCCL++ executor when a registered plan fits, else on the real NCCL. It
sees the plan registered here because both use the process's one registry.
    LD_PRELOAD=$BUILD/nccl_shim/libmscclpp_nccl.so PYTHONPATH=$REPO/dsl_compiler \\
        torchrun --nnodes=1 --nproc_per_node=8 examples/python/dsl_with_nccl_api.py
MSCCLPP_DEBUG=INFO MSCCLPP_DEBUG_SUBSYS=SHIM shows which plan ran per call, or why NCCL did.
Every rank checks the result (small integers: exact in float16). Exit status: 0 when every
element matches, 1 otherwise, 2 without the shim or without GPUs.
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.distributed as dist

import mscclpp
from mscclpp.dsl import jit
from mscclpp.language import (AllReduce, BufferType, CollectiveProgram, MemoryChannel, Rank, SwitchChannel,
                              SyncType)

EXIT_WRONG, EXIT_SETUP = 1, 2


def allreduce_nvls(name, gpu_size, num_threads_per_block, min_message_size, max_message_size):
    """The integration guide's NVLS AllReduce; customized_comm.py has the commented version."""
    with CollectiveProgram(name, AllReduce(gpu_size, 1, True), gpu_size, instances=8, protocol="Simple",
                           num_threads_per_block=num_threads_per_block, min_message_size=min_message_size,
                           max_message_size=max_message_size) as program:
        nvls_chan = SwitchChannel(rank_list=list(range(gpu_size)), buffer_type=BufferType.input)
        channels = {(peer, gpu): MemoryChannel(peer, gpu) for gpu in range(gpu_size) for peer in range(gpu_size)
                    if peer != gpu}
        peers = {gpu: [p for p in range(gpu_size) if p != gpu] for gpu in range(gpu_size)}
        for gpu in range(gpu_size):
            for peer in peers[gpu]:
                channels[(peer, gpu)].signal(tb=0, relaxed=True)
            for peer in peers[gpu]:
                channels[(peer, gpu)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        for gpu in range(gpu_size):
            input_buffer = Rank(gpu).get_input_buffer()
            nvls_chan.at_rank(gpu).reduce(buffer_offset=gpu, size=1, dst_chunk=input_buffer[gpu : gpu + 1], tb=0)
            nvls_chan.at_rank(gpu).broadcast(src_chunk=input_buffer[gpu : gpu + 1], buffer_offset=gpu, size=1, tb=0)
        for gpu in range(gpu_size):
            for peer in peers[gpu]:
                channels[(peer, gpu)].signal(tb=0, relaxed=True, data_sync=SyncType.before)
            for peer in peers[gpu]:
                channels[(peer, gpu)].wait(tb=0, relaxed=True)
    return program


def shim_is_loaded() -> bool:
    """The shim brings libmscclpp.so (the plan registry) into the process; plain NCCL does not."""
    return hasattr(ctypes.CDLL(None), "mscclppPlanApiVersion")


def main() -> int:
    parser = argparse.ArgumentParser(description="DSL plans under PyTorch's nccl backend (GPU only)")
    parser.add_argument("--elements", type=int, default=12 << 20, help="float16 elements (default 12M, as in the guide)")
    parser.add_argument("--allow-plain-nccl", action="store_true", help="run even when the shim is not preloaded")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("dsl_with_nccl_api.py needs GPUs (PyTorch's nccl backend); see customized_comm.py for the CPU",
              file=sys.stderr)
        return EXIT_SETUP
    if not shim_is_loaded() and not args.allow_plain_nccl:
        print("the MSCCL++ NCCL shim is not loaded: run with LD_PRELOAD=.../libmscclpp_nccl.so", file=sys.stderr)
        return EXIT_SETUP
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)

    # Step 1. Initialize the PyTorch distributed process group using the NCCL backend
    dist.init_process_group(backend="nccl")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    nranks_per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))

    # Step 2. Compile and register an MSCCL++ DSL plan
    if shim_is_loaded():
        plan = jit.compile(algo=allreduce_nvls, name="allreduce_nvls", collective="allreduce",
                           nranks_per_node=nranks_per_node, world_size=world_size, instances=2, protocol="Simple",
                           num_threads_per_block=1024, min_msg_size=1 << 20, max_msg_size=48 << 30, tags={"nvls"})
        mscclpp.plan.register(plan)

        # Step 3. Define and set a selector to choose the appropriate plan at runtime
        def selector(plans, req):
            collective_plans = plans.get(req.collective)
            nvls = [p for p in collective_plans if "nvls" in p.tags]
            return nvls[0] if nvls else collective_plans[0]

        mscclpp.plan.set_selector(selector)

    # Step 4. Perform the AllReduce as usual, and check it
    index = torch.arange(args.elements, device="cuda")
    x = ((index * 7 + rank * 3) % 9 - 4).to(torch.float16)
    expected = sum(((index * 7 + r * 3) % 9 - 4) for r in range(world_size)).to(torch.float16)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    torch.cuda.synchronize()
    wrong = (x != expected).nonzero().flatten()
    status = 0
    if len(wrong) > 0:
        i = int(wrong[0])
        print(f"rank {rank}: {len(wrong)} wrong element(s); element {i} is {float(x[i])}, "
              f"expected {float(expected[i])}", file=sys.stderr)
        status = EXIT_WRONG
    else:
        print(f"rank {rank}/{world_size}: allreduce of {args.elements} float16 elements correct "
              f"({'through the MSCCL++ shim' if shim_is_loaded() else 'plain NCCL'})")
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
