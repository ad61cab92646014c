#!/usr/bin/env python3
"""Time per call of MoE-like all-to-all-v on the alltoallv plans, through Executor.execute with splits.

Every rank routes `tokens` tokens of `token_bytes` bytes to the ranks unevenly (a Zipf-like share per
expert rank, shuffled per rank, some pairs zero), as mixture-of-experts dispatch does; each call draws
new splits. Ranks are processes on this host (the CPU backend; host buffers). Prints the median and
quartiles of the time per call for each plan the registry picks, and the bytes each rank sends.

    MSCCLPP_LIBRARY=build/libmscclpp.so MSCCLPP_PLAN_DIR=plans MSCCLPP_BACKEND=cpu \\
        python3 tools/bench/bench_alltoallv.py --ranks 8 --tokens 4096 --token-bytes 7168
"""
import argparse
import multiprocessing
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "support"))
import script_options  # noqa: E402 - after the path it lives on

script_options.handle(sys.argv, __doc__)
sys.path.insert(0, os.path.join(REPO, "dsl_compiler"))
import numpy as np  # noqa: E402

import mscclpp  # noqa: E402
import mscclpp.comm as mscclpp_comm  # noqa: E402


def splits(random, n, tokens, token_bytes, zero_share):
    """The count matrix in bytes (int8 elements): row s is how rank s's tokens spread over the ranks."""
    shares = 1.0 / np.arange(1, n + 1) ** 1.2
    counts = np.zeros((n, n), dtype=np.uint64)
    for s in range(n):
        weights = random.permutation(shares) * (random.rand(n) >= zero_share)
        weights = weights if weights.sum() > 0 else shares
        per_rank = np.floor(tokens * weights / weights.sum()).astype(np.int64)
        per_rank[np.argmax(weights)] += tokens - per_rank.sum()
        counts[s] = per_rank * token_bytes
    return counts


def rank_main(rank, args, queue):
    n = args.ranks
    group = mscclpp_comm.CommGroup(interfaceIpPortTrio=f"127.0.0.1:{args.port}", rank=rank, size=n)
    registry = mscclpp.ExecutionPlanRegistry()
    executor = mscclpp.Executor(group.communicator)
    random = np.random.RandomState(args.seed)  # the same draws on every rank: one matrix per call
    matrices = [splits(random, n, args.tokens, args.token_bytes, args.zero_share)
                for _ in range(args.warmup + args.iters)]
    # Every rank's buffers hold what any call sends or receives (an expert rank may receive many tokens).
    capacity = int(max(max(m.sum(axis=1).max(), m.sum(axis=0).max()) for m in matrices))
    send = np.arange(capacity, dtype=np.uint8)
    recv = np.zeros(capacity, dtype=np.uint8)
    times = {}
    for call, counts in enumerate(matrices):
        handle = registry.select("alltoallv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                                 int(counts.max()), dtype=np.int8)
        if handle is None:
            raise SystemExit(f"rank {rank}: no alltoallv plan: {registry.last_reason}")
        start = time.perf_counter()
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, capacity, capacity, np.int8, handle.plan,
                         splits=counts)
        if call >= args.warmup:
            times.setdefault(handle.name, []).append(time.perf_counter() - start)
    queue.put((rank, times))
    executor.close()
    group.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=4096, help="tokens each rank sends")
    parser.add_argument("--token-bytes", type=int, default=7168)
    parser.add_argument("--zero-share", type=float, default=0.2, help="share of pairs with no tokens")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=50177)
    args = parser.parse_args()
    queue = multiprocessing.Queue()
    ranks = [multiprocessing.Process(target=rank_main, args=(r, args, queue)) for r in range(args.ranks)]
    for p in ranks:
        p.start()
    reports = [queue.get(timeout=600) for _ in ranks]
    for p in ranks:
        p.join()
    per_plan = {}
    for _, times in reports:
        for name, values in times.items():
            per_plan.setdefault(name, []).extend(values)
    print(f"{args.ranks} ranks, {args.tokens} tokens x {args.token_bytes} bytes per rank "
          f"({args.tokens * args.token_bytes / 2**20:.1f} MiB), zero share {args.zero_share}")
    for name, values in sorted(per_plan.items()):
        q = statistics.quantiles(values, n=4)
        print(f"{name:32s} calls {len(values) // args.ranks:4d}  time per call: median {1e3 * q[1]:9.3f} ms  "
              f"(quartiles {1e3 * q[0]:.3f} .. {1e3 * q[2]:.3f} ms)")
    raise SystemExit(max(p.exitcode for p in ranks))


if __name__ == "__main__":
    main()
