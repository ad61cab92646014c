"""PyTorch through the shim, under torchrun with LD_PRELOAD of the shim.

Runs torch.distributed's all_reduce, broadcast, all_gather,
reduce_scatter, a barrier and, on several ranks, all_to_all with
backend="nccl". Checks every result exactly and prints one line:
"TORCH_CHECK rank=R world=W ok=1 seconds=T", ok=0 on a mismatch.
Ranks share GPUs round-robin. Only plans serve ranks on one GPU,
since the real NCCL refuses that.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on

script_options.handle(sys.argv, __doc__)  # before torch: --help works where torch is not installed
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def check(name, got, want):
    if not torch.equal(got, want):
        diff = (got.float() - want.float()).abs().max().item()
        raise AssertionError(f"{name}: max difference {diff}")


def main():
    dist.init_process_group(backend="nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(device)
    n = int(os.environ.get("MSCCLPP_TORCH_CHECK_ELEMENTS", str(1 << 20)))
    start = time.time()
    try:
        x = torch.full((n,), float(rank + 1), device=device)
        dist.all_reduce(x)
        check("all_reduce sum", x, torch.full_like(x, world * (world + 1) / 2))

        y = torch.full((n,), float(2 * rank), device=device)
        dist.all_reduce(y, op=dist.ReduceOp.AVG)
        check("all_reduce avg", y, torch.full_like(y, float(world - 1)))

        b = torch.full((n,), float(rank), device=device)
        dist.broadcast(b, src=world - 1)
        check("broadcast", b, torch.full_like(b, float(world - 1)))

        parts = [torch.empty(n // world, device=device) for _ in range(world)]
        dist.all_gather(parts, torch.full((n // world,), float(rank), device=device))
        for r, p in enumerate(parts):
            check(f"all_gather part {r}", p, torch.full_like(p, float(r)))

        out = torch.empty(n // world, device=device)
        dist.reduce_scatter(out, [torch.full((n // world,), float(rank + r), device=device) for r in range(world)])
        check("reduce_scatter", out, torch.full_like(out, float(sum(q + rank for q in range(world)))))

        if world > 1:
            src = torch.arange(world, device=device, dtype=torch.float32) + 100 * rank
            dst = torch.empty_like(src)
            dist.all_to_all_single(dst, src)
            check("all_to_all", dst, torch.arange(world, device=device, dtype=torch.float32) * 100 + rank)

        dist.barrier()
        torch.cuda.synchronize()
        print(f"TORCH_CHECK rank={rank} world={world} ok=1 seconds={time.time() - start:.3f}", flush=True)
        code = 0
    except Exception as e:  # report, do not hang the other ranks on an exception path
        print(f"TORCH_CHECK rank={rank} world={world} ok=0 error={e}", flush=True)
        code = 1
    dist.destroy_process_group()
    sys.exit(code)


if __name__ == "__main__":
    main()
