#!/usr/bin/env python3
"""The native algorithm beside the DSL plan for the same calls: mscclpp-perf run twice, once with the
native step off (MSCCLPP_NATIVE_ENABLE=0: the plan runs) and once with the plan step off
(MSCCLPP_PLANS_ENABLE=0: the native algorithm runs), printed side by side per collective and size.

    python3 tools/bench/bench_native.py build/tools/mscclpp-perf \\
        all_reduce -b 8 -e 256M -f 4 -g 4 -n 20 -w 5

A size neither step serves fails its run (no NCCL behind the CPU backend) and is left out.
Exit status: the worse of the two runs'.
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


def main(argv):
    if len(argv) < 2 or not os.access(argv[1], os.X_OK):
        sys.exit(__doc__)
    tool, args = argv[1], argv[2:]
    tables, status = [], 0
    for label, extra in RUNS:
        done = subprocess.run([tool, *args], capture_output=True, text=True, env={**os.environ, **extra})
        if done.returncode != 0:
            print(f"# the {label} run failed (exit {done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}",
                  file=sys.stderr)
        status = max(status, done.returncode)
        tables.append(_table(done.stdout))
    plans, natives = tables
    print(f"# mscclpp-perf {' '.join(args)}; time: median us; plan/native: the plan's time over the native "
          "algorithm's (above 1: native is faster)")
    print(f"#{'collective':>14} {'size':>11} {'type':>7} | {'plan us':>9} {'native us':>9} {'ratio':>6} | "
          f"{'plan us':>9} {'native us':>9} {'ratio':>6}")
    print(f"#{'':>14} {'':>11} {'':>7} | {'out-of-place':^26} | {'in-place':^26}")
    for key, row in plans.items():
        other = natives.get(key)
        if other is None:
            continue
        print(f" {key[0]:>14} {key[1]:>11} {row[1]:>7} | {row[4][0]:>9} {other[4][0]:>9} "
              f"{_ratio(other[4][0], row[4][0]):>6} | {row[5][0]:>9} {other[5][0]:>9} {_ratio(other[5][0], row[5][0]):>6}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
