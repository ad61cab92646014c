#!/usr/bin/env python3
"""Compile-time benchmark of the DSL compiler: prints a table.

Programs: the all-pairs AllReduce (examples/dsl), Simple with 8
threadblocks per rank, at 8 to 64 ranks with 1 to 16 instances, and the LL all-pairs
AllReduce at 64 ranks. A row times --repeat runs of "run the program,
compile, write compact JSON": the best and median wall-clock time,
and the best CPU time, ``cpu``, which an idle machine would take.
``ops`` counts emitted ops; ``us/op`` shows the time grows linearly.

    python3 tools/bench/bench_compiler.py [--repeat 3] [--quick]
"""
import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "dsl_compiler"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "dsl"))

import allreduce_allpairs  # noqa: E402
import allreduce_packets  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on


def measure(build, repeat, **kwargs):
    """(best, median) wall-clock seconds and best CPU seconds of ``repeat`` runs, and the plan text."""
    times, cpu_times, text = [], [], None
    for _ in range(repeat):
        gc.collect()
        start, cpu_start = time.perf_counter(), time.process_time()
        text = build(**kwargs).to_json(indent=None)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    times.sort()
    return times[0], times[len(times) // 2], min(cpu_times), text


def count_ops(text):
    # Every op object starts with {"name": and so does nothing else but the plan's own name.
    return text.count('{"name":') - 1


def main():
    script_options.handle(sys.argv, __doc__)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer rows (8 and 64 ranks, 1 and 16 instances)")
    args = parser.parse_args()
    ranks = (8, 64) if args.quick else (8, 16, 32, 64)
    instances = (1, 16) if args.quick else (1, 2, 4, 8, 16)
    rows = []
    for n in ranks:
        for k in instances:
            best, median, cpu, text = measure(allreduce_allpairs.build, args.repeat, num_gpus=n, instances=k)
            rows.append(("allpairs Simple", n, k, best, median, cpu, count_ops(text), len(text)))
    best, median, cpu, text = measure(allreduce_packets.build, args.repeat, num_gpus=64)
    rows.append(("allpairs LL", 64, 1, best, median, cpu, count_ops(text), len(text)))
    print(
        f"{'program':<16} {'ranks':>5} {'inst':>4} {'seconds':>8} {'median':>8} {'cpu':>8} {'ops':>9} {'us/op':>6} "
        f"{'JSON MB':>8}"
    )
    for name, n, k, best, median, cpu, ops, size in rows:
        print(
            f"{name:<16} {n:>5} {k:>4} {best:>8.3f} {median:>8.3f} {cpu:>8.3f} {ops:>9} {best / ops * 1e6:>6.2f} "
            f"{size / 1e6:>8.2f}"
        )


if __name__ == "__main__":
    main()
