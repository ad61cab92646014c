"""A program exposing functions; compile one with --function."""
from mscclpp.language import AllReduce, CollectiveProgram, MemoryChannel, Rank, TestCollective


def allreduce_two(name="function_style", chunks=1, inplace=True):
    with CollectiveProgram(name, AllReduce(2, chunks, inplace), 2) as program:
        for r in range(2):
            rank = Rank(r)
            MemoryChannel(1 - r, r).reduce(rank.get_input_buffer()[0:1], [Rank(1 - r).get_input_buffer()[0:1]], tb=0)
    return program


def broken():
    with CollectiveProgram("broken", TestCollective(2, 1, 1), 2) as program:
        MemoryChannel(1, 0).signal(tb=0)
    return program


if __name__ == "__main__":
    raise SystemExit("not run when imported by --function")
