#!/usr/bin/env python3
"""Fault-injection sweep: hurt a random rank at a random point, many times,
and count what went wrong (docs/failure-handling.md, "Tests"). A victim is
killed at a random time into a random phase, or in the steady state leaves,
is paused, or has its host's link cut. Exits 0 only without hangs, wrong
results, other failures or files left in /dev/shm and /tmp.

  tools/ci/fault_sweep.py --launcher build/tests/mp/runtime_launch --worker build/tests/mp/exec_mp_worker \\
      --plan plans/allreduce_2node_n4_ip.json [--plan ...] [--ranks 4[,8]] [--runs 200] [--seed S] \\
      [--phases rendezvous,init,first,steady,destroy,leave,pause,hostcut] [--cycle] [--host-shm memfd,posix] \\
      [--hosts 2 --hosts-runner tests/mp/runtime_netns_run.sh]
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
import script_options  # noqa: E402 - after the path it lives on

KILL_PHASES = ["rendezvous", "init", "first", "steady", "destroy"]
PHASES = KILL_PHASES + ["leave", "pause", "hostcut"]
# Upper bounds of the random delay into each phase, in microseconds.
# Init takes tens of ms on one host, the rendezvous a few.
MAX_DELAY_US = {"rendezvous": 8000, "init": 20000, "first": 600, "steady": 500, "destroy": 3000, "leave": 3000,
                "pause": 3000, "hostcut": 0}
# The slowest error each fault may take, in seconds after it. A departed peer
# fails the others within a second (0.4 s measured, printed as "worst"); the
# check allows 2 s so that a loaded CI machine does not fail it. An unreachable
# host fails them within 10 s.
LIMIT_S = {"leave": 2.0, "hostcut": 10.0}
NETNS_RUN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "mp",
                         "runtime_netns_run.sh")


def leftovers(pids, tmp_before, private_tmp):
    """What a run's processes left: /dev/shm segments named after them, anything in the TMPDIR they
    were given, and new /tmp entries named after them (other processes may use /tmp meanwhile)."""
    left = []
    if os.path.isdir("/dev/shm"):
        for name in os.listdir("/dev/shm"):
            if any(f".{pid}." in name for pid in pids) and name.startswith("mscclpp"):
                left.append("/dev/shm/" + name)
    left += [os.path.join(private_tmp, name) for name in os.listdir(private_tmp)]
    for name in set(os.listdir("/tmp")) - tmp_before:
        if any(str(pid) in name for pid in pids):
            left.append("/tmp/" + name)
    return left


def plans_for(paths, ranks, phase):
    """The plans written for `ranks` ranks; for hostcut, those for two hosts of ranks/2."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            plan = json.load(f)
        if len(plan["gpus"]) == ranks and (phase != "hostcut" or plan.get("nranks_per_node") == ranks // 2):
            out.append(path)
    return out


def one_run(args, rng, index, phase, ranks):
    victim = rng.randrange(ranks)
    delay = rng.randrange(MAX_DELAY_US[phase] + 1)
    plan = rng.choice(plans_for(args.plan, ranks, phase))
    shm = rng.choice(args.host_shm)
    tmp_before = set(os.listdir("/tmp"))
    with tempfile.TemporaryDirectory(prefix="mscclpp-fault-") as tmp:
        death_file = os.path.join(tmp, "death")
        private_tmp = os.path.join(tmp, "tmp")
        os.mkdir(private_tmp)
        envs = ["TMPDIR=" + private_tmp, "MSCCLPP_FAULT_FILE=" + death_file, "MSCCLPP_BACKEND=cpu", f"MSCCLPP_INIT_TIMEOUT_S={args.init_timeout:g}",
                "MSCCLPP_HOST_SHM=" + shm]
        if phase == "pause":
            # Stopped for four heartbeat timeouts: the old rule would have failed it.
            envs += ["MSCCLPP_HEARTBEAT_INTERVAL_S=0.05", "MSCCLPP_HEARTBEAT_TIMEOUT_S=0.25",
                     f"MSCCLPP_TEST_PAUSE_S={args.pause:g}"]
        if phase == "hostcut":
            envs += ["MSCCLPP_HEARTBEAT_INTERVAL_S=0.2", "MSCCLPP_HEARTBEAT_TIMEOUT_S=1"]
            # Taking a link down waits for the kernel's network lock: 30-60 s on a
            # machine busy with other namespaces' work. Errors are timed from the cut.
            cmd = [NETNS_RUN, "--ranks-per-host", str(ranks // 2), "--timeout", str(max(args.run_timeout, 120)),
                   "--launcher", args.launcher, "--cut-link-after", "0.2"]
            for e in envs:
                cmd += ["--env", e]
            cmd += ["--", args.worker, "unreachable", plan]
        else:
            if args.hosts > 1:
                cmd = [args.hosts_runner, "--loopback", "--hosts", str(args.hosts), "--ranks-per-host",
                       str(ranks // args.hosts), "--launcher", args.launcher]
            else:
                cmd = [args.launcher, "--nranks", str(ranks)]
            cmd += ["--allow-fail", str(victim), "--timeout", str(args.run_timeout)]
            for e in envs:
                cmd += ["--env", e]
            cmd += ["--", args.worker, "fault", plan, str(victim), phase, str(delay), "--iterations",
                    str(args.iterations)]
        start = time.monotonic()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=max(args.run_timeout, 120) + 60)
        wall = time.monotonic() - start
        out = proc.stdout
        pids = [int(m.group(1)) for m in re.finditer(r"exec_mp_worker rank \d+: pid (\d+)", out)]
        left = leftovers(pids, tmp_before, private_tmp)
    if phase == "hostcut":
        if proc.returncode == 77:
            print(f"run {index:4d}: hostcut at {ranks} ranks: SKIPPED (no network namespaces here)", flush=True)
            return "skipped", None, (ranks, phase, victim, delay)
        errors = [float(m.group(1)) for m in re.finditer(r"call \d+ failed ([0-9.]+) s after the cut", out)]
        completed = 0
        expected_errors = ranks
    else:
        errors = [float(m.group(1)) for m in re.finditer(r"FAULT rank \d+: error ([0-9.]+) s after the fault", out)]
        completed = len(re.findall(r"FAULT rank \d+: completed", out))
        expected_errors = 0 if phase == "pause" else ranks - 1
    # A pause shows as the longest call of the ranks that waited for it.
    longest = max((float(m.group(1)) for m in re.finditer(r"completed \d+ collectives \(longest ([0-9.]+) s\)", out)),
                  default=0.0)
    worst = max(errors, default=None)
    if proc.returncode == 124 or " hung" in out:
        verdict = "HANG"
    elif "WRONG RESULT" in out:
        verdict = "WRONG"
    elif left:
        verdict = "LEFT"
    elif proc.returncode != 0 or "FAILED" in out:
        verdict = "FAIL"
    elif phase == "pause" and (completed != ranks or longest < args.pause / 2):
        verdict = "FAIL"
    elif phase != "pause" and len(errors) + completed != expected_errors:
        verdict = "FAIL"
    elif phase in ("leave", "hostcut") and (len(errors) != expected_errors or worst > LIMIT_S[phase]):
        verdict = "FAIL"
    else:
        verdict = "ok"
    name = os.path.basename(plan).replace(".json", "")
    print(f"run {index:4d}: {name} {ranks} ranks {shm} victim {victim} {phase:<10} +{delay:>5} us: {verdict:<5} "
          f"{len(errors)} errors, {completed} completed, slowest error {worst or 0:.3f} s"
          + (f", longest call {longest:.2f} s" if phase == "pause" else "") + f", {wall:.2f} s", flush=True)
    if verdict != "ok":
        print("\n".join("    " + line for line in out.splitlines() if "VERSION" not in line), flush=True)
        for path in left:
            print("    left behind: " + path, flush=True)
    return verdict, worst, (ranks, phase, victim, delay)


def main():
    script_options.handle(sys.argv, __doc__)
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--launcher", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--plan", action="append", required=True)
    p.add_argument("--ranks", default="4", help="comma-separated rank counts to pick from (even for hostcut)")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--iterations", type=int, default=16)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--run-timeout", type=int, default=30, help="seconds before a run's ranks count as hung")
    p.add_argument("--phases", default=",".join(KILL_PHASES), help="comma-separated phases to pick from")
    p.add_argument("--cycle", action="store_true",
                   help="go through every (phase, ranks) pair in turn instead of picking them at random")
    p.add_argument("--host-shm", default="auto", help="comma-separated MSCCLPP_HOST_SHM values to pick from")
    p.add_argument("--pause", type=float, default=1.0, help="seconds a paused victim stays stopped")
    p.add_argument("--hosts", type=int, default=1,
                   help="spread the ranks over this many loopback hosts (runtime_netns_run.sh --loopback): port "
                   "channels then cross hosts, over TCP, or InfiniBand where the environment gives ranks an HCA")
    p.add_argument("--hosts-runner", default=None, help="tests/mp/runtime_netns_run.sh, for --hosts")
    p.add_argument("--init-timeout", type=float, default=3.0,
                   help="MSCCLPP_INIT_TIMEOUT_S of the ranks: how long they wait for a victim that never arrived")
    args = p.parse_args()
    args.phases = args.phases.split(",")
    args.host_shm = args.host_shm.split(",")
    try:
        rank_counts = [int(r) for r in args.ranks.split(",")]
    except ValueError:
        p.error("--ranks: comma-separated integers")
    if any(ph not in PHASES for ph in args.phases):
        p.error(f"--phases: each must be one of {', '.join(PHASES)}")
    if any(r < 2 for r in rank_counts) or args.runs < 1:
        p.error("--ranks must be at least 2 and --runs at least 1")
    for ph in args.phases:
        for r in rank_counts:
            if not plans_for(args.plan, r, ph):
                p.error(f"no --plan for {ph} at {r} ranks" + (f" (two hosts of {r // 2})" if ph == "hostcut" else ""))
    if "hostcut" in args.phases and any(r % 2 for r in rank_counts):
        p.error("--ranks: hostcut splits the ranks over two hosts, so each count must be even")
    if any(s not in ("auto", "memfd", "posix") for s in args.host_shm):
        p.error("--host-shm: each must be auto, memfd or posix")
    if args.hosts > 1 and (any(r % args.hosts for r in rank_counts) or not args.hosts_runner):
        p.error("--hosts needs --hosts-runner and rank counts it divides")
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    where = f" on {args.hosts} hosts" if args.hosts > 1 else ""
    print(f"fault sweep: seed {seed}, {args.runs} runs of {args.ranks} ranks{where}, phases {','.join(args.phases)}",
          flush=True)
    rng = random.Random(seed)
    pairs = [(ph, r) for ph in args.phases for r in rank_counts]
    counts = {"ok": 0, "HANG": 0, "WRONG": 0, "FAIL": 0, "LEFT": 0, "skipped": 0}
    slowest = {}  # phase -> (seconds, where)
    per_phase = {ph: 0 for ph in args.phases}
    start = time.monotonic()
    for i in range(args.runs):
        phase, ranks = pairs[i % len(pairs)] if args.cycle else (rng.choice(args.phases), rng.choice(rank_counts))
        verdict, worst, where = one_run(args, rng, i, phase, ranks)
        counts[verdict] += 1
        per_phase[phase] += 1
        if worst is not None and worst > slowest.get(phase, (0, None))[0]:
            slowest[phase] = (worst, where)
    worst_text = ", ".join(f"{ph} {s:.3f} s ({w[0]} ranks, victim {w[2]})" for ph, (s, w) in slowest.items())
    print(f"fault sweep: {args.runs} runs ({', '.join(f'{k} {v}' for k, v in per_phase.items())}) in "
          f"{time.monotonic() - start:.1f} s; hangs {counts['HANG']}, wrong results {counts['WRONG']}, other failures "
          f"{counts['FAIL']}, leftovers {counts['LEFT']}, skipped {counts['skipped']}; slowest time to error: "
          f"{worst_text or 'no error'}; seed {seed}", flush=True)
    return 0 if counts["HANG"] == counts["WRONG"] == counts["FAIL"] == counts["LEFT"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
