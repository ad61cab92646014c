"""python3 -m mscclpp perf --versus LIBNCCL ...: mscclpp-perf run twice, through our libnccl.so.2 and
with another NCCL preloaded in its place, and the two tables printed side by side."""
import re
import subprocess
import sys

_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)((?:\s+\S+){10})$")
_COLLECTIVE = re.compile(r"^# (\w+): ")


def _table(stdout):
    """{(collective, size): (count, type, redop, root, out-of-place cells, in-place cells)}, in order."""
    rows, collective = {}, None
    for line in stdout.splitlines():
        found = _COLLECTIVE.match(line)
        if found and not line.startswith("# time"):
            collective = found.group(1)
        row = _ROW.match(line)
        if row and collective:
            cells = row.group(6).split()
            rows[(collective, int(row.group(1)))] = (row.group(2), row.group(3), row.group(4), row.group(5),
                                                     cells[:5], cells[5:])
    return rows


def _ratio(ours, theirs):
    try:
        return f"{float(theirs) / float(ours):.2f}" if float(ours) > 0 else "N/A"
    except ValueError:
        return "N/A"


def compare(tool, versus, args, out=sys.stdout, err=sys.stderr):
    """Runs tool args as is and with LD_PRELOAD=versus; prints both; returns the worse exit status."""
    import os

    runs = []
    for preload in (None, versus):
        env = dict(os.environ)
        if preload:
            env["LD_PRELOAD"] = preload
        done = subprocess.run([tool, *args], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            label = f"with LD_PRELOAD={preload}" if preload else "through our libnccl.so.2"
            print(f"mscclpp-perf {label} failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}",
                  file=err)
        runs.append(done)
    ours, theirs = (_table(r.stdout) for r in runs)
    print(f"# mscclpp-perf {' '.join(args)}: ours (our libnccl.so.2) against {versus}; time: median us, "
          f"nccl/ours: their time over ours (above 1: ours is faster)", file=out)
    print(f"#{'collective':>14} {'size':>11} {'type':>7} {'redop':>5} | {'ours us':>9} {'nccl us':>9} {'ours bw':>7} "
          f"{'nccl bw':>7} {'ratio':>6} | {'ours us':>9} {'nccl us':>9} {'ratio':>6}", file=out)
    print(f"#{'':>14} {'':>11} {'':>7} {'':>5} | {'out-of-place':^42} | {'in-place':^26}", file=out)
    for key, row in ours.items():
        other = theirs.get(key)
        if other is None:
            continue
        print(f" {key[0]:>14} {key[1]:>11} {row[1]:>7} {row[2]:>5} | {row[4][0]:>9} {other[4][0]:>9} {row[4][3]:>7} "
              f"{other[4][3]:>7} {_ratio(row[4][0], other[4][0]):>6} | {row[5][0]:>9} {other[5][0]:>9} "
              f"{_ratio(row[5][0], other[5][0]):>6}", file=out)
    return max(r.returncode for r in runs)
