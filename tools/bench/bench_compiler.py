#!/usr/bin/env python3
"""Compile-time benchmark of the DSL compiler: prints tables (docs/dsl-compiler.md, "Compile speed").

Rows: the all-pairs AllReduce (examples/dsl) at 8 to 64 ranks and 1 to 16 instances, and the LL
all-pairs at 64 ranks: best and median wall-clock and best CPU seconds of --repeat runs. Then the
JSON() path of MSCCL++'s examples at --json-ranks (json.dumps against our writer, medians of
--json-repeat), and with --mscclpp-python that path as a process under MSCCL++'s compiler and ours.

    python3 tools/bench/bench_compiler.py [--repeat 3] [--quick] [--json-ranks 64,128] [--json-repeat 5]
                                          [--mscclpp-python PYTHON]
"""
import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "dsl_compiler"))
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


def json_path(n, repeat):
    """Medians of repeat runs of the MSCCL++ example path at n ranks, wall-clock and CPU seconds of:
    build + compact text, indent by json.dumps, indent by ours. Checks both indented texts are equal."""
    samples = []
    for _ in range(repeat):
        gc.collect()
        marks = [(time.perf_counter(), time.process_time())]
        program = allreduce_allpairs.build(num_gpus=n)
        compact = program.to_json(indent=None)
        marks.append((time.perf_counter(), time.process_time()))
        slow = json.dumps(json.loads(compact), indent=2)
        marks.append((time.perf_counter(), time.process_time()))
        fast = program.to_json(indent=2)  # what JSON() prints
        marks.append((time.perf_counter(), time.process_time()))
        if fast != slow:
            raise SystemExit(f"the indented texts differ at {n} ranks")
        samples.append([(b[0] - a[0], b[1] - a[1]) for a, b in zip(marks, marks[1:])])
    # [phase] -> (median wall, median cpu)
    return [tuple(statistics.median(s[phase][k] for s in samples) for k in (0, 1)) for phase in range(3)]


def whole_process(python, n, repeat, env):
    """Median wall-clock seconds of repeat runs of allpairs_json_program.py under python."""
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "allpairs_json_program.py")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([python, program, str(n)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env)
        if done.returncode != 0:
            raise SystemExit(f"{python} {program} {n} failed (is the DSL installed for it?):\n{done.stderr[-2000:]}")
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def count_ops(text):
    # Every op object starts with {"name": and so does nothing else but the plan's own name.
    return text.count('{"name":') - 1


def main():
    script_options.handle(sys.argv, __doc__)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer rows (8 and 64 ranks, 1 and 16 instances)")
    parser.add_argument("--json-ranks", default="64,128", help="rank counts of the JSON() table ('' skips it)")
    parser.add_argument("--json-repeat", type=int, default=5)
    parser.add_argument("--mscclpp-python", help="an interpreter with MSCCL++'s DSL installed")
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
    json_ranks = [int(n) for n in args.json_ranks.split(",") if n]
    if json_ranks:
        print()
        print(f"JSON() of the all-pairs AllReduce, medians of {args.json_repeat}, seconds wall-clock (CPU): "
              f"build, then the indented text")
        print(f"{'ranks':>5} {'build':>15} {'json.dumps':>15} {'ours':>15} {'json.dumps total':>16} {'ours total':>15} "
              f"{'speedup':>7}")
        for n in json_ranks:
            build, dumps, ours = json_path(n, args.json_repeat)

            def pair(wall, cpu):
                return f"{wall:.3f} ({cpu:.3f})"

            with_dumps = (build[0] + dumps[0], build[1] + dumps[1])
            with_ours = (build[0] + ours[0], build[1] + ours[1])
            print(f"{n:>5} {pair(*build):>15} {pair(*dumps):>15} {pair(*ours):>15} {pair(*with_dumps):>16} "
                  f"{pair(*with_ours):>15} {with_dumps[1] / with_ours[1]:>6.2f}x")
    if args.mscclpp_python and json_ranks:
        ours_env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "dsl_compiler"))
        theirs_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        print()
        print(f"allpairs_json_program.py as a process, medians of {args.json_repeat} (seconds, wall clock)")
        print(f"{'ranks':>5} {'MSCCL++':>8} {'ours':>8} {'ratio':>7}")
        for n in json_ranks:
            theirs = whole_process(args.mscclpp_python, n, args.json_repeat, theirs_env)
            ours = whole_process(sys.executable, n, args.json_repeat, ours_env)
            print(f"{n:>5} {theirs:>8.3f} {ours:>8.3f} {theirs / ours:>6.2f}x")


if __name__ == "__main__":
    main()


