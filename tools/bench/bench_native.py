#!/usr/bin/env python3
"""The native algorithm beside the DSL plan for the same calls, and beside NCCL with --nccl: mscclpp-perf run
with the native step off (MSCCLPP_NATIVE_ENABLE=0), with the plan step off (MSCCLPP_PLANS_ENABLE=0) and, with
--nccl LIB, with LIB preloaded and both steps off; printed side by side per collective and size.

    python3 tools/bench/bench_native.py [--nccl /path/libnccl.so.2] build/tools/mscclpp-perf \
        all_reduce -b 8 -e 256M -f 4 -g 4 -n 20 -w 5

A size neither step serves fails its run (no NCCL behind the CPU backend) and is left out. NCCL runs one rank
per GPU: where it cannot run the calls, or its results were wrong, its column reads "-" (docs/algorithms.md).
Exit status: the worse of the plan and native runs'.
"""
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "support"))
import script_options  # noqa: E402 - after the path it lives on

script_options.handle(sys.argv, __doc__)
sys.path.insert(0, os.path.join(REPO, "dsl_compiler"))
from mscclpp.cli.perf_compare import _ratio, _table  # noqa: E402

RUNS = (("plan", {"MSCCLPP_NATIVE_ENABLE": "0"}), ("native", {"MSCCLPP_PLANS_ENABLE": "0"}))


def run(tool, args, label, extra):
    """(the run's table, its exit status), the failure's output on stderr."""
    done = subprocess.run([tool, *args], capture_output=True, text=True, env={**os.environ, **extra})
    if done.returncode != 0:
        print(f"# the {label} run failed (exit {done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}",
              file=sys.stderr)
    return _table(done.stdout), done.returncode


def rows(plans, natives, nccl):
    """The printed lines: per (collective, size) both steps served, each place's times and ratios."""
    lines = []
    for key, row in plans.items():
        other = natives.get(key)
        if other is None:
            continue
        theirs = nccl.get(key) if nccl is not None else None
        cells = []
        for place in (4, 5):
            plan_us, native_us = row[place][0], other[place][0]
            cell = f"{plan_us:>9} {native_us:>9} {_ratio(native_us, plan_us):>6}"
            if nccl is not None:
                # A time of wrong results (#wrong, the fifth cell, above 0) is no measurement.
                served = theirs is not None and theirs[place][4] == "0"
                nccl_us = theirs[place][0] if served else "-"
                cell += f" {nccl_us:>9} {_ratio(native_us, nccl_us) if served else '-':>6}"
            cells.append(cell)
        lines.append(f" {key[0]:>14} {key[1]:>11} {row[1]:>7} | {cells[0]} | {cells[1]}")
    return lines


def main(argv):
    nccl_lib = None
    if len(argv) > 2 and argv[1] == "--nccl":
        nccl_lib, argv = argv[2], [argv[0], *argv[3:]]
    if len(argv) < 2 or not os.access(argv[1], os.X_OK):
        sys.exit(__doc__)
    tool, args = argv[1], argv[2:]
    if nccl_lib and not os.path.isfile(nccl_lib):
        sys.exit(f"--nccl {nccl_lib}: no such file")
    (plans, plan_status), (natives, native_status) = (run(tool, args, label, extra) for label, extra in RUNS)
    # Both of our steps off: if the preload did not take, our library serves nothing and the run fails.
    nccl = None
    if nccl_lib:
        nccl = run(tool, args, "NCCL", {"LD_PRELOAD": nccl_lib, "MSCCLPP_PLANS_ENABLE": "0",
                                        "MSCCLPP_NATIVE_ENABLE": "0", "MSCCLPP_NCCL_LIB_PATH": os.devnull})[0]
    place = f"{'plan us':>9} {'native us':>9} {'ratio':>6}" + (f" {'nccl us':>9} {'ratio':>6}" if nccl_lib else "")
    print(f"# mscclpp-perf {' '.join(args)}; time: median us; ratio: the other's time over the native algorithm's "
          f"(above 1: native is faster){'; nccl: ' + nccl_lib if nccl_lib else ''}")
    print(f"#{'collective':>14} {'size':>11} {'type':>7} | {place} | {place}")
    print(f"#{'':>14} {'':>11} {'':>7} | {'out-of-place':^{len(place)}} | {'in-place':^{len(place)}}")
    for line in rows(plans, natives, nccl):
        print(line)
    return max(plan_status, native_status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
