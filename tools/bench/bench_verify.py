#!/usr/bin/env python3
"""Benchmark of the plan verifier: 64-rank allreduce plans on one core.

Generates with the DSL the presets' 64-rank allreduce plans and the
two 64-rank programs bench_compiler.py times, the largest 23 MB of
JSON. Then runs build/tools/bench_verify on them pinned to one CPU:
the verification time, best and median of --repeat runs, the model
size and the verdict.

    python3 tools/bench/bench_verify.py [--build build] [--repeat 3] [--keep DIR]
    python3 tools/bench/bench_verify.py --mutations      # the mutation table over plans/ instead
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "dsl_compiler"))
sys.path.insert(0, os.path.join(REPO, "examples", "dsl"))

import allreduce_allpairs  # noqa: E402
import allreduce_packets  # noqa: E402
from mscclpp.dsl.presets import algorithms  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "tools", "support"))
import script_options  # noqa: E402 - after the path it lives on

MAX = 2**64 - 1
MiB = 1 << 20


def generate(directory):
    plans = {
        "allreduce_ll_n64": lambda: algorithms.allreduce_ll("allreduce_ll_n64", 64, True, (0, MiB - 1), ["default"]),
        "allreduce_allpairs_n64": lambda: algorithms.allreduce_allpairs(
            "allreduce_allpairs_n64", 64, True, (MiB, 16 * MiB - 1), ["default"]),
        "allreduce_rsag_n64": lambda: algorithms.allreduce_rsag("allreduce_rsag_n64", 64, True, (16 * MiB, MAX), ["default"]),
        "example_allreduce_allpairs_n64": lambda: allreduce_allpairs.build(num_gpus=64),
        "example_allreduce_packets_n64": lambda: allreduce_packets.build(num_gpus=64),
    }
    paths = []
    for name, build in plans.items():
        path = os.path.join(directory, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(build().to_json())
        paths.append(path)
    return paths


def main():
    script_options.handle(sys.argv, __doc__)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", default=None, help="write the generated plans here and keep them")
    parser.add_argument("--mutations", action="store_true", help="print the mutation table over plans/")
    args = parser.parse_args()
    bench = os.path.join(args.build, "tools", "bench_verify")
    if not os.access(bench, os.X_OK):
        raise SystemExit(f"{bench} is not built (ninja -C {args.build} tools/bench_verify)")
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    if args.mutations:
        plans = sorted(os.path.join(REPO, "plans", f) for f in os.listdir(os.path.join(REPO, "plans")) if f.endswith(".json"))
        return subprocess.call(pin + [bench, "--mutations", *plans])
    directory = args.keep or tempfile.mkdtemp(prefix="mscclpp-bench-verify-")
    os.makedirs(directory, exist_ok=True)
    try:
        paths = generate(directory)
        print(f"plans in {directory}; verifier pinned to one core: {'yes' if pin else 'no (no taskset)'}")
        return subprocess.call(pin + [bench, "--repeat", str(args.repeat), *paths])
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
