"""A two-rank exchange (collective "sendrecv"): each rank puts its input into the peer's output.

The shim's tests use it to check that a grouped ncclSend + ncclRecv pair between the two ranks of a 2-rank
communicator runs on a plan. Regenerate the checked-in plan with (from the repository root):

    PYTHONPATH=dsl_compiler python3 -m mscclpp compile tests/data/shim/sendrecv_program.py --function build \
        -o tests/data/shim/plans/sendrecv_n2.json --indent 1
"""
from mscclpp.language import CollectiveProgram, MemoryChannel, Rank, SendRecv, SyncType


def build(name="sendrecv_n2"):
    n = 2
    with CollectiveProgram(name, SendRecv(n, 1, False), n, instances=1) as program:
        # (r, p): the channel rank r owns toward its peer p.
        ch = {(r, 1 - r): MemoryChannel(1 - r, r) for r in range(n)}
        for r in range(n):
            ch[(r, 1 - r)].signal(tb=0, relaxed=True)  # my output may be written
        for r in range(n):
            ch[(r, 1 - r)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        for r in range(n):
            p = 1 - r
            ch[(r, p)].put(Rank(p).get_output_buffer()[0:1], Rank(r).get_input_buffer()[0:1], tb=0)
            ch[(r, p)].signal(tb=0, data_sync=SyncType.before)  # the data is there
        for r in range(n):
            ch[(r, 1 - r)].wait(tb=0, data_sync=SyncType.after)
    return program
