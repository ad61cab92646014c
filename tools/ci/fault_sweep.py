#!/usr/bin/env python3
"""Fault-injection sweep: kill a random rank at a random point, many
times, and count what went wrong. In each run of N ranks on the CPU
backend, a victim kills itself at a random time into a random phase,
from the rendezvous to destroy. A failed call must then be RemoteError
naming the victim, or Timeout for a victim that never reached the
root; the next call must fail at once, and teardown must end. Exits 0
only without hangs, wrong results or other failures.

  tools/ci/fault_sweep.py --launcher build/tests/mp/runtime_launch --worker build/tests/mp/exec_mp_worker \\
      --plan plans/allreduce_2node_n4_ip.json [--plan ...] [--ranks 4] [--runs 200] [--seed S] \\
      [--hosts 2 --hosts-runner tests/mp/runtime_netns_run.sh]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on

PHASES = ["rendezvous", "init", "first", "steady", "destroy"]
# Upper bounds of the random delay into each phase, in microseconds.
# Init takes tens of ms on one host, the rendezvous a few.
MAX_DELAY_US = {"rendezvous": 8000, "init": 20000, "first": 600, "steady": 500, "destroy": 3000}


def one_run(args, rng, index):
    victim = rng.randrange(args.ranks)
    phase = rng.choice(args.phases)
    delay = rng.randrange(MAX_DELAY_US[phase] + 1)
    plan = rng.choice(args.plan)
    with tempfile.TemporaryDirectory(prefix="mscclpp-fault-") as tmp:
        death_file = os.path.join(tmp, "death")
        if args.hosts > 1:
            launch = [args.hosts_runner, "--loopback", "--hosts", str(args.hosts), "--ranks-per-host",
                      str(args.ranks // args.hosts), "--launcher", args.launcher]
        else:
            launch = [args.launcher, "--nranks", str(args.ranks)]
        cmd = launch + ["--allow-fail", str(victim), "--timeout",
                        str(args.run_timeout), "--env", "MSCCLPP_FAULT_FILE=" + death_file, "--env",
                        "MSCCLPP_BACKEND=cpu", "--env", f"MSCCLPP_INIT_TIMEOUT_S={args.init_timeout:g}",
                        "--", args.worker, "fault", plan, str(victim), phase, str(delay), "--iterations",
                        str(args.iterations)]
        start = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=args.run_timeout + 30)
        wall = time.monotonic() - start
    out = proc.stdout
    errors = [float(m.group(1)) for m in re.finditer(r"FAULT rank \d+: error ([0-9.]+) s after the death", out)]
    completed = len(re.findall(r"FAULT rank \d+: completed", out))
    if proc.returncode == 124 or " hung" in out:
        verdict = "HANG"
    elif "WRONG RESULT" in out:
        verdict = "WRONG"
    elif proc.returncode != 0 or "FAILED" in out or len(errors) + completed != args.ranks - 1:
        verdict = "FAIL"
    else:
        verdict = "ok"
    name = os.path.basename(plan).replace(".json", "")
    print(f"run {index:4d}: {name} victim {victim} {phase:<7} +{delay:>5} us: {verdict:<5} "
          f"{len(errors)} errors, {completed} completed, slowest error {max(errors, default=0):.3f} s, {wall:.2f} s",
          flush=True)
    if verdict != "ok":
        print("\n".join("    " + line for line in out.splitlines() if "VERSION" not in line), flush=True)
    return verdict, max(errors, default=None), (victim, phase, delay)


def main():
    script_options.handle(sys.argv, __doc__)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--plan", action="append", required=True)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--iterations", type=int, default=16)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--run-timeout", type=int, default=30, help="seconds before a run's ranks count as hung")
    p.add_argument("--phases", default=",".join(PHASES), help="comma-separated phases to pick from")
    p.add_argument("--hosts", type=int, default=1,
                   help="spread the ranks over this many loopback hosts (runtime_netns_run.sh --loopback): port "
                   "channels then cross hosts, over TCP, or InfiniBand where the environment gives ranks an HCA")
    p.add_argument("--hosts-runner", default=None, help="tests/mp/runtime_netns_run.sh, for --hosts")
    p.add_argument("--init-timeout", type=float, default=3.0,
                   help="MSCCLPP_INIT_TIMEOUT_S of the ranks: how long they wait for a victim that never arrived")
    args = p.parse_args()
    args.phases = args.phases.split(",")
    if any(ph not in PHASES for ph in args.phases):
        p.error(f"--phases: each must be one of {', '.join(PHASES)}")
    if args.ranks < 2 or args.runs < 1:
        p.error("--ranks must be at least 2 and --runs at least 1")
    if args.hosts > 1 and (args.ranks % args.hosts != 0 or not args.hosts_runner):
        p.error("--hosts needs --hosts-runner and a rank count it divides")
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    where = f" on {args.hosts} hosts" if args.hosts > 1 else ""
    print(f"fault sweep: seed {seed}, {args.runs} runs of {args.ranks} ranks{where}", flush=True)
    rng = random.Random(seed)
    counts = {"ok": 0, "HANG": 0, "WRONG": 0, "FAIL": 0}
    slowest, slowest_at = 0.0, None
    per_phase = {ph: 0 for ph in args.phases}
    start = time.monotonic()
    for i in range(args.runs):
        verdict, worst, where = one_run(args, rng, i)
        counts[verdict] += 1
        per_phase[where[1]] += 1
        if worst is not None and worst > slowest:
            slowest, slowest_at = worst, where
    at = f" (victim {slowest_at[0]}, {slowest_at[1]} +{slowest_at[2]} us)" if slowest_at else ""
    print(f"fault sweep: {args.runs} runs ({', '.join(f'{k} {v}' for k, v in per_phase.items())}) in "
          f"{time.monotonic() - start:.1f} s; hangs {counts['HANG']}, wrong results {counts['WRONG']}, other failures "
          f"{counts['FAIL']}; slowest time to error {slowest:.3f} s{at}; seed {seed}", flush=True)
    return 0 if counts["HANG"] == counts["WRONG"] == counts["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
