#!/usr/bin/env python3
"""A few DistributedDataParallel steps of a tiny model under PyTorch's nccl backend, for the shim.

GPU ONLY (torch with CUDA, one GPU per rank). DDP's broadcasts and gradient all-reduces run on
the default plans when one fits, else on the real NCCL (MSCCLPP_DEBUG=INFO logs which).
    LD_PRELOAD=$BUILD/nccl_shim/libmscclpp_nccl.so MSCCLPP_PLAN_DIR=$REPO/plans \\
        torchrun --nnodes=1 --nproc_per_node=4 examples/python/ddp_train.py --steps 5
It checks that every rank ends with bit-identical parameters, that they match a reference trained
without DDP on the global batch (within 1e-5 relative), and that the loss fell. Exit status: 0
when all hold, 1 otherwise, 2 without GPUs or the shim (--allow-plain-nccl runs on plain NCCL).
"""
import argparse
import copy
import ctypes
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

EXIT_WRONG, EXIT_SETUP = 1, 2
BATCH_PER_RANK, FEATURES, HIDDEN, CLASSES = 16, 32, 64, 4


def make_model() -> torch.nn.Module:
    torch.manual_seed(1234)  # every rank and the reference start from the same weights
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, CLASSES))


def batch(rank: int, step: int, device):
    """Rank r's batch of step s: deterministic, so any rank can rebuild every other rank's."""
    generator = torch.Generator().manual_seed(1000 * step + rank)
    inputs = torch.randn(BATCH_PER_RANK, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (BATCH_PER_RANK,), generator=generator)
    return inputs.to(device), labels.to(device)


def main() -> int:
    parser = argparse.ArgumentParser(description="a few DDP steps through the MSCCL++ NCCL shim (GPU only)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--allow-plain-nccl", action="store_true", help="run even when the shim is not preloaded")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ddp_train.py needs GPUs (PyTorch's nccl backend)", file=sys.stderr)
        return EXIT_SETUP
    if not hasattr(ctypes.CDLL(None), "mscclppPlanApiVersion") and not args.allow_plain_nccl:
        print("the MSCCL++ NCCL shim is not loaded: run with LD_PRELOAD=.../libmscclpp_nccl.so", file=sys.stderr)
        return EXIT_SETUP
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl")
    rank, world_size = dist.get_rank(), dist.get_world_size()

    model = make_model().to(device)
    reference = copy.deepcopy(model)
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    losses = []
    for step in range(args.steps):
        inputs, labels = batch(rank, step, device)
        optimizer.zero_grad()
        loss = loss_fn(ddp(inputs), labels)
        loss.backward()  # DDP all-reduces (averages) the gradients here
        optimizer.step()

        global_inputs, global_labels = zip(*(batch(r, step, device) for r in range(world_size)))
        reference_optimizer.zero_grad()
        reference_loss = loss_fn(reference(torch.cat(global_inputs)), torch.cat(global_labels))
        reference_loss.backward()
        reference_optimizer.step()
        losses.append(reference_loss.item())
    torch.cuda.synchronize()

    mine = [p.detach().cpu() for p in model.parameters()]
    everyone = [None] * world_size
    dist.all_gather_object(everyone, mine)
    problems = []
    for r, theirs in enumerate(everyone):
        if any(not torch.equal(a, b) for a, b in zip(mine, theirs)):
            problems.append(f"rank {r}'s parameters differ from rank {rank}'s")
    for i, (p, q) in enumerate(zip(model.parameters(), reference.parameters())):
        if not torch.allclose(p, q, rtol=1e-5, atol=1e-6):
            problems.append(f"parameter {i} differs from the reference by up to {float((p - q).abs().max()):.3g}")
    if not losses[-1] < losses[0]:
        problems.append(f"the loss did not decrease: {losses[0]:.4f} -> {losses[-1]:.4f}")
    dist.destroy_process_group()
    if problems:
        print(f"rank {rank}: " + "; ".join(problems), file=sys.stderr)
        return EXIT_WRONG
    print(f"rank {rank}/{world_size}: {args.steps} DDP steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
          "parameters identical on every rank and equal to the single-process reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
