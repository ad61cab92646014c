#!/usr/bin/env python3
"""Mutants that emulation passes and the verifier catches.

For each default plan given, the 2-rank ones by default, makes two
kinds of JSON mutants and runs both tools on each:
  early-op   the first data op after a wait, moved before that wait
  drop-nop   the block-wide barrier right after a data op, removed
mscclpp-plan verify must refute every one. mscclpp-emulate passes
most: one schedule on the CPU rarely hits the window a GPU could.
docs/plan-verifier.md records the table.

    python3 tools/ci/verify_vs_emulate.py [--build build] [PLAN.json...]
"""
import argparse
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "support"))
import script_options  # noqa: E402 - after the path it lives on
WAITS = ("wait", "rlxwait", "sem_acquire")


def mutants(plan):
    """(kind, description, mutated plan) for every early-op and drop-nop mutant of the plan."""
    for gpu in plan["gpus"]:
        for tb in gpu["threadblocks"]:
            ops = tb["ops"]
            for i, op in enumerate(ops):
                where = f"rank {gpu['id']} tb {tb['id']} op {i}"
                if op["name"] == "nop" and i > 0 and "dst_buff" in ops[i - 1]:
                    m = copy.deepcopy(plan)
                    del m["gpus"][gpu["id"]]["threadblocks"][tb["id"]]["ops"][i]
                    yield "drop-nop", where, m
                if op["name"] in WAITS:
                    for d in range(i + 1, len(ops)):
                        if ops[d]["name"] in WAITS + ("pipeline", "barrier"):
                            break
                        if "dst_buff" in ops[d]:
                            m = copy.deepcopy(plan)
                            body = m["gpus"][gpu["id"]]["threadblocks"][tb["id"]]["ops"]
                            body.insert(i, body.pop(d))
                            yield "early-op", f"{where}: op {d} moved before it", m
                            break


def main():
    script_options.handle(sys.argv, __doc__)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("plans", nargs="*")
    args = parser.parse_args()
    plans = args.plans or sorted(glob.glob(os.path.join(REPO, "plans", "*_n2_*.json")))
    verify = os.path.join(args.build, "tools", "mscclpp-plan")
    emulate = os.path.join(args.build, "tools", "mscclpp-emulate")
    rows = {}
    missed = []
    with tempfile.TemporaryDirectory(prefix="mscclpp-mutants-") as directory:
        path = os.path.join(directory, "mutant.json")
        for plan_file in plans:
            with open(plan_file) as f:
                plan = json.load(f)
            n = len(plan["gpus"])
            size = str(max(plan.get("min_message_size", 0), 4096 * n))
            for kind, where, mutant in mutants(plan):
                with open(path, "w") as f:
                    json.dump(mutant, f)
                row = rows.setdefault(kind, {"mutants": 0, "caught": 0, "emulation passed": 0})
                row["mutants"] += 1
                if subprocess.run([verify, "verify", path], capture_output=True).returncode == 1:
                    row["caught"] += 1
                else:
                    missed.append(f"{os.path.basename(plan_file)}: {kind} {where}")
                emulated = subprocess.run([emulate, path, "--ranks", str(n), "--size", size, "--iterations", "3",
                                           "--timeout", "10"], capture_output=True)
                row["emulation passed"] += emulated.returncode == 0
    print(f"{len(plans)} plan(s)")
    print(f"{'mutation':<10} {'mutants':>8} {'verifier caught':>16} {'emulation passed':>17}")
    for kind, row in sorted(rows.items()):
        print(f"{kind:<10} {row['mutants']:>8} {row['caught']:>16} {row['emulation passed']:>17}")
    for m in missed:
        print("  not caught by the verifier:", m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
