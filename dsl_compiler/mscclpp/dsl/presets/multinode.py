"""Plans for ranks on several hosts: memory channels only between ranks of one host, port channels
(proxy transfers: TCP or IB on the CPU backend, any transport on a GPU) between hosts.

The plans state ``nranks_per_node``, so the registry offers them only to calls whose communicator
has that many ranks per host, and the executor knows which channels cross hosts. They follow the
safety rules of algorithms.py.
"""
from mscclpp.language import (
    AllReduce,
    AllToAllV,
    Buffer,
    CollectiveProgram,
    MemoryChannel,
    PortChannel,
    Rank,
    SyncType,
)

MAX = 2**64 - 1


class PlanWithRanksPerNode:
    """A compiled program plus the plan's ``nranks_per_node`` key (the DSL has no option for it)."""

    def __init__(self, program, nranks_per_node):
        self.program = program
        self.nranks_per_node = nranks_per_node

    def to_json(self, indent=None):
        text = self.program.to_json(indent)
        if indent is not None:
            import json

            plan = json.loads(text)
            plan["nranks_per_node"] = self.nranks_per_node
            return json.dumps(plan, indent=indent)
        assert text.endswith("}")
        return text[:-1] + ',"nranks_per_node":%d}' % self.nranks_per_node


def allreduce_2node(name, n, inplace, size_range, tags, per_node=2):
    """Hierarchical all-reduce for 2 hosts x ``per_node`` ranks (host h = rank // per_node, local
    index l = rank % per_node). The buffer has ``per_node`` x 2 chunks; local rank l owns chunks
    2l and 2l+1.

    1. Inside the host (memory channels): every rank puts the chunks each local peer owns into that
       peer's scratch and signals; the owner reduces them with its own input into its output.
    2. Across hosts (port channels, one per rank): the owner puts its partial sums into the scratch
       of the rank with the same local index on the other host (put_with_signal), flushes before it
       overwrites the source, waits for the peer's partial sums and adds them.
    3. Inside the host again: the owner puts its final chunks into every local peer's output.
    4. A last port-channel signal/wait: the remote peer may put into our scratch again in its next
       launch only after we read it in this one (memory-channel peers are ordered by step 3's wait).
    """
    if n != 2 * per_node:
        raise ValueError(f"{name}: allreduce_2node serves 2 hosts x {per_node} ranks, not {n} ranks")
    low, high = size_range
    with CollectiveProgram(
        name, AllReduce(n, 1, inplace), n, min_message_size=low, max_message_size=high, tags=tags
    ) as program:
        own = 2  # chunks owned by one local rank (the buffer has n = 2 x per_node chunks)
        host = [r // per_node for r in range(n)]
        local = [r % per_node for r in range(n)]
        local_peers = {r: [q for q in range(n) if host[q] == host[r] and q != r] for r in range(n)}
        remote_peer = {r: (1 - host[r]) * per_node + local[r] for r in range(n)}
        mem = {(r, q): MemoryChannel(q, r) for r in range(n) for q in local_peers[r]}
        port = {r: PortChannel(remote_peer[r], r) for r in range(n)}
        # Scratch: own chunks from each local peer, then from the remote peer.
        scratch = [Buffer(r, per_node * own) for r in range(n)]

        def owned(r):
            return slice(local[r] * own, local[r] * own + own)

        def slot(of, at):  # position of local peer `of` among `at`'s local peers
            return local_peers[at].index(of)

        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for q in local_peers[r]:
                at = slot(r, q) * own
                mem[(r, q)].put(scratch[q][at : at + own], inp[owned(q)], tb=0)
                mem[(r, q)].signal(tb=0, data_sync=SyncType.before)
        for r in range(n):
            rank = Rank(r)
            inp, out = rank.get_input_buffer(), rank.get_output_buffer()
            mine = out[owned(r)]
            for q in local_peers[r]:
                mem[(r, q)].wait(tb=0, data_sync=SyncType.after)
            received = [scratch[r][slot(q, r) * own : slot(q, r) * own + own] for q in local_peers[r]]
            rank.reduce(inp[owned(r)], received, tb=0, dst_chunk=mine)
            x = remote_peer[r]
            cross = (per_node - 1) * own
            port[r].put_with_signal(scratch[x][cross : cross + own], mine, tb=0)
            port[r].flush(tb=0)
            port[r].wait(tb=0, data_sync=SyncType.after)
            rank.reduce(mine, [scratch[r][cross : cross + own]], tb=0)
            for q in local_peers[r]:
                mem[(r, q)].put(Rank(q).get_output_buffer()[owned(r)], mine, tb=0)
                mem[(r, q)].signal(tb=0, data_sync=SyncType.before)
            for q in local_peers[r]:
                mem[(r, q)].wait(tb=0, data_sync=SyncType.after)
            port[r].signal(tb=0, data_sync=SyncType.before)
            port[r].wait(tb=0, data_sync=SyncType.after)
    return PlanWithRanksPerNode(program, per_node)


def alltoallv_2node(name, n, inplace, size_range, tags, per_node=2):
    """All-to-all-v for 2 hosts x ``per_node`` ranks, every pair direct: memory channels to the
    ranks of the host, port channels to the other host's. A pair first exchanges a signal (the
    peer has entered, its output is free), then puts the segment straight into the peer's output:
    every rank places every segment from the counts alone, so a port put needs no offset from the
    peer. Port puts signal and flush (the input is the user's again when the call returns); each
    rank waits for every peer's segment. One threadblock per peer."""
    if n != 2 * per_node:
        raise ValueError(f"{name}: alltoallv_2node serves 2 hosts x {per_node} ranks, not {n} ranks")
    low, high = size_range
    with CollectiveProgram(
        name, AllToAllV(n), n, min_message_size=low, max_message_size=high, tags=tags
    ) as program:
        host = [r // per_node for r in range(n)]
        peers = {r: [p for p in range(n) if p != r] for r in range(n)}
        channel = {
            (r, p): (MemoryChannel(p, r) if host[p] == host[r] else PortChannel(p, r)) for r in range(n) for p in peers[r]
        }

        def tb(r, p):
            return peers[r].index(p)

        for r in range(n):
            for p in peers[r]:
                if host[p] == host[r]:
                    channel[(r, p)].signal(tb=tb(r, p), relaxed=True)
                else:
                    channel[(r, p)].signal(tb=tb(r, p))
            for p in peers[r]:
                if host[p] == host[r]:
                    channel[(r, p)].wait(tb=tb(r, p), relaxed=True, data_sync=SyncType.after)
                else:
                    channel[(r, p)].wait(tb=tb(r, p), data_sync=SyncType.after)
        for r in range(n):
            rank = Rank(r)
            inp = rank.get_input_buffer()
            for p in peers[r]:
                target = Rank(p).get_output_buffer()[r : r + 1]
                if host[p] == host[r]:
                    channel[(r, p)].put(target, inp[p : p + 1], tb=tb(r, p))
                    channel[(r, p)].signal(tb=tb(r, p), data_sync=SyncType.before)
                else:
                    channel[(r, p)].put_with_signal_and_flush(target, inp[p : p + 1], tb=tb(r, p))
            rank.copy(rank.get_output_buffer()[r : r + 1], inp[r : r + 1], tb=0)
        for r in range(n):
            for p in peers[r]:
                channel[(r, p)].wait(tb=tb(r, p), data_sync=SyncType.after)
    return PlanWithRanksPerNode(program, per_node)
