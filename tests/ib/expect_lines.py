#!/usr/bin/env python3
"""Runs a command and checks its output: it must exit 0, and each --expect
PATTERN=COUNT must match exactly COUNT lines (a regular expression searched in
each line of stdout and stderr together). Prints the output when a check fails.

  expect_lines.py [--expect 'over IB0=4']... -- command [args...]
"""
import re
import subprocess
import sys


def main(argv):
    expects = []
    while argv and argv[0] != "--":
        if argv[0] == "--expect" and len(argv) > 1:
            pattern, _, count = argv[1].rpartition("=")
            if not pattern or not count.isdigit():
                sys.exit(f"expect_lines.py: --expect takes PATTERN=COUNT, not {argv[1]!r}")
            expects.append((re.compile(pattern), int(count), pattern))
            argv = argv[2:]
        else:
            sys.exit(f"expect_lines.py: unknown argument {argv[0]!r} (usage: {__doc__.splitlines()[-1].strip()})")
    if len(argv) < 2:
        sys.exit("expect_lines.py: no command after --")
    proc = subprocess.run(argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = proc.stdout.splitlines()
    problems = [] if proc.returncode == 0 else [f"the command exited {proc.returncode}"]
    for regex, count, pattern in expects:
        found = sum(1 for line in lines if regex.search(line))
        if found != count:
            problems.append(f"{found} lines match {pattern!r}, expected {count}")
    if problems:
        print(proc.stdout)
        print("expect_lines.py: " + "; ".join(problems))
        return 1
    print("\n".join(line for line in lines if "runtime_netns_run.sh" in line or "OK" in line or "correct" in line))
    print(f"expect_lines.py: exit 0, {len(expects)} expectation(s) met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
