"""The all-pairs AllReduce at N ranks (8 threadblocks, one chunk per threadblock and rank), printed
as indented plan JSON: what MSCCL++'s example scripts do, written against the module layout both
MSCCL++'s DSL and ours provide, so bench_compiler.py can time either compiler on it.

    python3 tools/bench/allpairs_json_program.py N    # the plan on standard output
"""
import os
import sys

if __name__ == "__main__":  # --help and --version work without either DSL installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))
    import script_options

    script_options.handle(sys.argv, __doc__)

from mscclpp.language.channel import *  # noqa: E402,F401,F403 - the module layout MSCCL++ scripts import
from mscclpp.language.collectives import *  # noqa: E402,F401,F403
from mscclpp.language.general import *  # noqa: E402,F401,F403
from mscclpp.language.program import *  # noqa: E402,F401,F403
from mscclpp.language.rank import *  # noqa: E402,F401,F403


def main(n, blocks=8):
    with CollectiveProgram("allpairs", AllReduce(n, blocks, True), n, protocol="Simple",  # noqa: F405
                           num_threads_per_block=1024, min_message_size=0, max_message_size=2**64 - 1):
        pairs = [(r, p, b) for r in range(n) for b in range(blocks) for p in range(n) if p != r]
        link = {key: MemoryChannel(key[1], key[0]) for key in pairs}  # noqa: F405
        for key in pairs:
            link[key].signal(key[2], relaxed=True)
        for key in pairs:
            link[key].wait(key[2], data_sync=SyncType.after, relaxed=True)  # noqa: F405
        for r in range(n):
            for b in range(blocks):
                at = r * blocks + b
                own = Rank(r).get_input_buffer()[at : at + 1]  # noqa: F405
                peers = [p for p in range(n) if p != r]
                for p in peers:
                    link[(r, p, b)].reduce(own, [Rank(p).get_input_buffer()[at : at + 1]], b)  # noqa: F405
                for p in peers:
                    link[(r, p, b)].put(Rank(p).get_input_buffer()[at : at + 1], own, b)  # noqa: F405
        for key in pairs:
            link[key].signal(key[2], data_sync=SyncType.before)  # noqa: F405
        for key in pairs:
            link[key].wait(key[2])
        print(JSON())  # noqa: F405


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 2:
        print(f"usage: {sys.argv[0]} N (ranks, at least 2)", file=sys.stderr)
        sys.exit(2)
    main(int(sys.argv[1]))
