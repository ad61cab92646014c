"""What a collective must leave in the output buffers, and the comparison with a symbolic run.

``check_plan(plan)`` runs the plan symbolically (symbolic.py) and compares every rank's output
with the collective's definition, in the plan's own chunks after replication. The definitions
(``_expected``) are the ones the C++ emulator's reference check uses.
"""
from .symbolic import Machine, SimulationError

CHECKED = ("allreduce", "reduce", "reducescatter", "allgather", "gather", "alltoall", "broadcast", "scatter", "sendrecv")


class CheckReport:
    """``ok``; ``problems``: one line per wrong output chunk (at most ``limit`` kept, ``count`` all)."""

    def __init__(self, collective, num_ranks):
        self.collective = collective
        self.num_ranks = num_ranks
        self.problems = []
        self.count = 0
        self.limit = 20

    @property
    def ok(self):
        return self.count == 0

    def add(self, text):
        self.count += 1
        if len(self.problems) < self.limit:
            self.problems.append(text)

    def summary(self):
        if self.ok:
            return f"{self.collective} result correct on all {self.num_ranks} rank(s)"
        more = f"\n  ... and {self.count - len(self.problems)} more" if self.count > len(self.problems) else ""
        return (
            f"{self.collective} result wrong ({self.count} problem(s)):\n  " + "\n  ".join(self.problems) + more
        )


def _all_ranks(n, unit):
    return tuple((s, unit) for s in range(n))


def _expected(collective, n, rank, ins, outs, root):
    """Expected value per output unit (None: not defined by the collective).

    - allreduce: output u = sum over ranks of input u; reduce: the same, on the root only;
    - reducescatter: output u of rank r = sum over ranks of input r*out + u;
    - allgather: output u = input u % in of rank u // in; gather: the same, on the root only;
    - alltoall: output u of rank r = input r*b + u % b of rank u // b, b = out / ranks;
    - broadcast: output u = the root's input u; scatter: output u of rank r = the root's input r*out + u.
    sendrecv is checked elsewhere: its output is all of one other rank's input.
    """
    if collective == "allreduce" or (collective == "reduce" and rank == root):
        return [_all_ranks(n, u) for u in range(min(ins, outs))]
    if collective == "reducescatter":
        return [_all_ranks(n, rank * outs + u) for u in range(outs)]
    if collective == "allgather" or (collective == "gather" and rank == root):
        return [((u // ins, u % ins),) if ins else None for u in range(outs)]
    if collective == "alltoall":
        block = outs // n
        return [((u // block, rank * block + u % block),) for u in range(outs)]
    if collective == "broadcast":
        return [((root, u),) for u in range(outs)]
    if collective == "scatter":
        return [((root, rank * outs + u),) for u in range(outs)]
    return [None] * outs


def describe(value, units):
    """Words for a symbolic value (units per chunk: parts are named when a chunk is split)."""
    if value is None:
        return "nothing defined (never written, or computed from unwritten data)"

    def where(unit):
        chunk, part = divmod(unit, units)
        return f"input chunk {chunk}" + (f" (part {part + 1}/{units})" if units > 1 else "")

    if len(value) == 1:
        rank, unit = value[0]
        return f"rank {rank}'s {where(unit)}"
    positions = {unit for _, unit in value}
    ranks = [rank for rank, _ in value]
    if len(positions) == 1 and len(set(ranks)) == len(ranks):
        return f"the sum of {where(positions.pop())} of ranks {_rank_list(ranks)}"
    return "the sum of " + ", ".join(f"rank {r}'s {where(u)}" for r, u in value)


def _rank_list(ranks):
    ranks = sorted(ranks)
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def check_plan(plan):
    """A CheckReport for the plan dict; SimulationError when it cannot run (e.g. it deadlocks)."""
    collective = plan.get("collective")
    n = len(plan["gpus"])
    report = CheckReport(collective, n)
    machine = Machine(plan)
    ranks = machine.run()
    units = machine.units
    root = plan.get("root", 0)
    for state in ranks:
        outs = state.output_units
        actual = state.read("o", 0, outs)
        if collective == "sendrecv":
            _check_sendrecv(report, state.rank, actual, state.input_units, units)
            continue
        expected = _expected(collective, n, state.rank, state.input_units, outs, root)
        reported = set()
        for u, want in enumerate(expected):
            chunk = u // units
            if want is None or actual[u] == want or chunk in reported:
                continue
            reported.add(chunk)
            report.add(
                f"rank {state.rank} output chunk {chunk}: expected {describe(want, units)}, "
                f"got {describe(actual[u], units)}"
            )
    return report


def _check_sendrecv(report, rank, actual, ins, units):
    first = actual[0] if actual else None
    source = first[0][0] if first and len(first) == 1 else None
    if source is None or source == rank:
        report.add(f"rank {rank} output: expected another rank's input, got {describe(first, units)} at chunk 0")
        return
    for u, value in enumerate(actual):
        if value != ((source, u),):
            report.add(
                f"rank {rank} output chunk {u // units}: expected {describe(((source, u),), units)} (all of one "
                f"rank's input), got {describe(value, units)}"
            )
            return


__all__ = ["CheckReport", "check_plan", "describe", "SimulationError", "CHECKED"]
