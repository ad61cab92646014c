"""Lowering MSCCLPPLang operations to the compiler's IR (internal/ops.py), once, before compiling.

ref.py records each checked call as a LegacyOp, in call order. This module turns the records into
the ranks' ops, channels and remote buffers; the compiler then runs as for any program.
Channels follow the legacy compiler's model: one per (local-side buffer, remote-side buffer,
channel type, peer) a threadblock uses, numbered per rank in key, threadblock, then peer order.
Both sides number them the same way, so the k-th channel from A to B meets the k-th from B to A
where MSCCL++'s plans paired them. NVLS groups become one switch channel per (buffer, ranks).
"""
from ..internal.ops import Barrier, Copy, Get, GroupLoadReduce, GroupStore, Nop, Put, Reduce, SyncOp

_BOTH = 3  # sync bits: a block-wide barrier before and after (the legacy compiler's dependency nops)


class LegacyOp:
    """One recorded call. ``kind`` is the IR op it becomes; ``local``/``remote`` are (rank, buffer
    char, index, size); ``key`` is the channel key (a, b, channel type, peer) when it uses one."""

    __slots__ = ("kind", "rank", "tb", "site", "local", "remote", "key", "extra")

    def __init__(self, kind, rank, tb, site, local=None, remote=None, key=None, extra=None):
        self.kind = kind
        self.rank = rank
        self.tb = tb
        self.site = site
        self.local = local
        self.remote = remote
        self.key = key
        self.extra = extra


def lower(program, ops, scratch_chunks):
    """Adds the IR of ops (LegacyOps in call order) to program (a CollectiveProgram)."""
    for state, chunks in zip(program.ranks, scratch_chunks):
        state.scratch_chunks = max(state.scratch_chunks, chunks)
    channels = _create_channels(program, ops)
    switches = _create_switch_channels(program, ops)
    for op in ops:
        _LOWER[op.kind](program, op, channels, switches)


def _create_channels(program, ops):
    """{(rank, tb, key): (rank-level channel id, k)}, created in the legacy compiler's order."""
    keys = {}
    for op in ops:
        if op.key is not None:
            keys.setdefault(op.rank, set()).add((op.key, op.tb))
    channels = {}
    for rank in sorted(keys):
        state = program.ranks[rank]
        for key, tb in sorted(keys[rank], key=lambda item: (item[0][0], item[0][1], item[0][2], item[1], item[0][3])):
            channels[(rank, tb, key)] = state.add_channel(key[2], key[3])
    return channels


def _create_switch_channels(program, ops):
    """{(buffer char, ranks tuple): {rank: switch channel id}}, in first-use order."""
    switches = {}
    for op in ops:
        if op.kind in ("glre", "gstore"):
            group = op.extra
            if group not in switches:
                buffer, ranks = group
                switches[group] = {r: program.ranks[r].add_switch_channel(buffer, list(ranks)) for r in ranks}
    return switches


def _local(op):
    _, buffer, index, size = op.local
    return (buffer, index, size)


def _channel(program, op, channels):
    """(threadblock, threadblock-local channel index, k) of the op's channel."""
    cid, k = channels[(op.rank, op.tb, op.key)]
    block = program.ranks[op.rank].tb(op.tb)
    return block, block.channel(op.key[2], cid), k


def _remote(program, block, op, ctype):
    peer, buffer, index, size = op.remote
    rid = program.ranks[op.rank].remote_buffer(peer, buffer, ctype)
    return (block.remote_buffer(ctype, rid), index, size, peer, buffer)


def _lower_put(program, op, channels, switches):
    block, local, _ = _channel(program, op, channels)
    ctype = op.key[2]
    program.add_op(op.rank, op.tb, Put(op.kind, [_local(op)], [_remote(program, block, op, ctype)], [local], ctype, None))


def _lower_get(program, op, channels, switches):
    block, local, _ = _channel(program, op, channels)
    program.add_op(op.rank, op.tb, Get([_remote(program, block, op, "memory")], [_local(op)], [local], "memory", None))


def _lower_sync(program, op, channels, switches):
    block, local, k = _channel(program, op, channels)
    ctype, peer = op.key[2], op.key[3]
    program.add_op(op.rank, op.tb, SyncOp(op.kind, [local], ctype, _BOTH))
    if op.kind != "flush":
        # Where the user signalled or waited, for the compiler's pairing check.
        entry = program.sync_entry((op.rank, peer, ctype, k), None)
        entry[0 if op.kind == "signal" else 1].append(op.site)


def _lower_copy(program, op, channels, switches):
    src, dst = op.extra
    program.add_op(op.rank, op.tb, Copy(op.kind, [src], [dst], None))
    if op.kind == "cpkt":
        # The proxy reads packets handed to a port channel: all stores must be done.
        program.add_op(op.rank, op.tb, Nop())


def _lower_reduce(program, op, channels, switches):
    dst = _local(op)
    if op.kind == "rre":
        block, local, _ = _channel(program, op, channels)
        remote = _remote(program, block, op, "memory")
        reduce = Reduce([dst], [dst], [], [remote], [], [local], [], "memory", "sum", None, False)
    else:
        other = op.extra
        reduce = Reduce([dst, other], [dst], [], [], [], [], [], "none", "sum", None, op.kind == "repkt")
    program.add_op(op.rank, op.tb, reduce)


def _lower_group(program, op, channels, switches):
    buffer, ranks = op.extra
    block = program.ranks[op.rank].tb(op.tb)
    local = block.channel("switch", switches[op.extra][op.rank])
    _, _, index, size = op.local
    if op.kind == "glre":
        ir = GroupLoadReduce(buffer, index, size, _local(op), op.rank, [local], "sum")
    else:
        ir = GroupStore("gstore", _local(op), op.rank, buffer, index, size, [local])
    program.add_op(op.rank, op.tb, ir)


def _lower_barrier(program, op, channels, switches):
    tb_list = op.extra
    if len(tb_list) == 1:
        program.add_op(op.rank, tb_list[0], Nop())
        return
    bid = program.ranks[op.rank].barrier_id(tb_list)
    for tb in tb_list:
        program.add_op(op.rank, tb, Barrier(bid, len(tb_list)))


_LOWER = {
    "put": _lower_put,
    "ppkt": _lower_put,
    "rppkt": _lower_put,
    "get": _lower_get,
    "signal": _lower_sync,
    "wait": _lower_sync,
    "flush": _lower_sync,
    "copy": _lower_copy,
    "cpkt": _lower_copy,
    "upkt": _lower_copy,
    "re": _lower_reduce,
    "rre": _lower_reduce,
    "repkt": _lower_reduce,
    "glre": _lower_group,
    "gstore": _lower_group,
    "barrier": _lower_barrier,
}
