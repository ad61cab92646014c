"""The per-threadblock passes, run in this order on every threadblock of every rank:

1. ``fuse``: a left-to-right scan; each op is offered its successor, repeatedly, until it declines
   (without fusion, ``expand_runs``: the DSL's fast paths record runs of signals/waits, puts and
   channel reduces compactly, SyncRun/PutRun/ReduceRun; these two passes turn them into ops).
2. ``expand_data_sync``: the data_sync of signal/wait/flush/semaphore ops becomes explicit nops.
3. ``insert_dependency_syncs``: a nop wherever an op touches a local range an earlier op of the same
   threadblock wrote (RAW, WAW) or read (WAR) since the last barrier.
Pipelines are processed recursively: their bodies are threadblocks of their own.
"""
from bisect import bisect_left

from . import locations

from .ops import (
    _PUT_FUSABLE,
    AFTER,
    BEFORE,
    READ,
    Barrier,
    Nop,
    Pipeline,
    Put,
    PutRun,
    Reduce,
    ReduceRun,
    SyncOp,
    SyncRun,
)


def fuse(ops):
    """Each op is offered its successors until it declines; then the successor takes its place.

    A pipeline's body is fused when the pipeline takes the place of a predecessor that declined it
    (a pipeline a nop absorbs keeps its body as written). Runs (SyncRun, PutRun, ReduceRun) are
    fused as the ops they stand for, the usual cases inline, without making the ops that merge into
    their predecessor."""
    result = []
    append = result.append
    current = None
    for op in ops:
        kind = type(op)
        if kind is SyncRun:
            current = _fuse_sync_run(op, current, append)
            continue
        if kind is PutRun:
            current = _fuse_put_run(op, current, append)
            continue
        if kind is ReduceRun:
            current = _fuse_reduce_run(op, current, append)
            continue
        if current is not None:
            fused = current.fuse(op)
            if fused is not None:
                if locations.ACTIVE is not None:
                    locations.ACTIVE.inherit(fused, current)
                current = fused
                continue
            append(current)
        current = op
        if kind is Pipeline:
            op.ops = fuse(op.ops)
    if current is not None:
        append(current)
    return result


def _fuse_sync_run(run, current, append):
    name, ctype, b, ids = run.name, run.channel_type, run.bits, run.ids
    k, n = 0, len(ids)
    while k < n:
        if type(current) is SyncOp and current.name == name and current.channel_type == ctype:
            # SyncOp.fuse(SyncOp(name, [ids[k]], ctype, b)), inlined, as often as it takes.
            seen = current.idset
            if seen is None:
                seen = current.idset = set(current.ids)
            merged = current.ids
            rest = ids[k:] if k else ids
            fresh = set(rest)
            if len(fresh) == len(rest) and seen.isdisjoint(fresh):
                # The usual case, all at once: the rest of the run names channels current lacks.
                merged += rest
                seen |= fresh
                current.sync |= b
                break
            start = k
            while k < n:
                cid = ids[k]
                if cid in seen:
                    break
                merged.append(cid)
                seen.add(cid)
                k += 1
            if k > start:
                current.sync |= b
            if k == n:
                break
            k += 1  # a second signal/wait on a channel is another one (flushes merge anyway)
            if name == "flush":
                current.sync |= b
                continue
            if b & BEFORE:
                current.sync &= ~AFTER
            append(current)
            current = SyncOp(name, [cid], ctype, b)
            continue
        op = SyncOp(name, [ids[k]], ctype, b)
        k += 1
        if current is not None:
            fused = current.fuse(op)
            if fused is not None:
                current = fused
                continue
            append(current)
        current = op
    return current


def _fuse_put_run(run, current, append):
    name, ctype, puts = run.name, run.channel_type, run.puts
    fusable = name in _PUT_FUSABLE
    k, n = 0, len(puts)
    while k < n:
        src, dst, cid = puts[k]
        kind = type(current)
        if kind is Reduce and current.tbg is None and ctype == "memory" and current.takes_put(name, src):
            # Reduce.fuse(Put(name, [src], [dst], [cid], ctype, None)), inlined,
            # for this put and the next ones of the same chunk. A fused put
            # only adds remote destinations (rre -> rres), so the reduce still accepts.
            j = k + 1
            while j < n and puts[j][0] == src:
                j += 1
            batch = puts[k:j] if k or j < n else puts
            current.rdst += [put[1] for put in batch]
            current.put_ids += [put[2] for put in batch]
            k = j
            current.channel_type = "memory"
            current._rename()
            continue
        k += 1
        if kind is Put and current.name == name and current.channel_type == ctype and current.tbg is None:
            # Put.fuse(Put(name, [src], [dst], [cid], ctype, None)), inlined.
            if fusable:
                if src[2] == current.src[0][2]:
                    current.src.append(src)
                    current.dst.append(dst)
                    current.ids.append(cid)
                    continue
            elif name == "rppkt" and src == current.src[0]:
                current.dst.append(dst)
                current.ids.append(cid)
                continue
        op = Put(name, [src], [dst], [cid], ctype, None)
        if current is not None:
            fused = current.fuse(op)
            if fused is not None:
                current = fused
                continue
            append(current)
        current = op
    return current


def _fuse_reduce_run(run, current, append):
    reduces = run.reduces
    k, n = 0, len(reduces)
    while k < n:
        src, dst, rsrc, cid = reduces[k]
        if (
            type(current) is Reduce
            and current.name == "rre"
            and current.src[0] == src
            and len(current.dst) == 1
            and current.dst[0] == dst
            and current.channel_type == "memory"
            and current.op == "sum"
            and current.tbg is None
        ):
            # Reduce.fuse(the rre), inlined, for this reduce and the next ones of the same operands:
            # only remote sources and ids grow, so the rre still accepts them.
            j = k + 1
            while j < n and reduces[j][0] == src and reduces[j][1] == dst:
                j += 1
            if j == k + 1:
                current.rsrc += rsrc
                current.ids.append(cid)
            else:
                batch = reduces[k:j]
                current.rsrc += [ref for entry in batch for ref in entry[2]]
                current.ids += [entry[3] for entry in batch]
            k = j
            continue
        k += 1
        op = Reduce([src], [dst], [], rsrc, [], [cid], [], "memory", "sum", None, False)
        if current is not None:
            fused = current.fuse(op)
            if fused is not None:
                current = fused
                continue
            append(current)
        current = op
    return current


def expand_runs(ops):
    """The ops without fusion: each run becomes the ops it stands for."""
    result = []
    for op in ops:
        if type(op) is SyncRun or type(op) is PutRun or type(op) is ReduceRun:
            result += op.ops()
        else:
            result.append(op)
    return result


def expand_data_sync(ops):
    result = []
    append = result.append
    for op in ops:
        if type(op) is Pipeline:
            op.ops = expand_data_sync(op.ops)
        if op.is_sync_op:
            if op.sync & BEFORE:
                append(Nop())
            append(op)
            if op.sync & AFTER:
                append(Nop())
        else:
            append(op)
    return result


class _AccessMap:
    """Disjoint local ranges touched since the last barrier, per buffer, with who touched them how.

    Ranges are kept sorted by start in parallel lists (starts, entries) so lookups are a bisect.
    """

    __slots__ = ("buffers",)

    def __init__(self):
        self.buffers = {}

    def clear(self):
        self.buffers = {}

    def record(self, buffer, start, end, owner, kind):
        """Adds one access; returns True when it conflicts with an earlier op (the map is then reset)."""
        starts, entries = self.buffers.setdefault(buffer, ([], []))
        # Entries are (start, end, owner, kind); disjoint, so ends are sorted too.
        k = bisect_left(starts, start)
        if k > 0 and entries[k - 1][1] >= start:
            k -= 1
        hi = k
        while hi < len(entries) and entries[hi][0] <= end:
            _, _, other_owner, other_kind = entries[hi]
            if other_owner is not owner and (kind != READ or other_kind != READ):
                self.buffers = {buffer: ([start], [(start, end, owner, kind)])}
                return True
            hi += 1
        if hi > k:
            # Same op, or read after read: the new access replaces the overlap.
            keep = []
            first, last = entries[k], entries[hi - 1]
            if first[0] < start:
                keep.append((first[0], start - 1, first[2], first[3]))
            keep.append((start, end, owner, kind))
            if last[1] > end:
                keep.append((end + 1, last[1], last[2], last[3]))
            entries[k:hi] = keep
            starts[k:hi] = [e[0] for e in keep]
        else:
            entries.insert(k, (start, end, owner, kind))
            starts.insert(k, start)
        return False


def insert_dependency_syncs(ops):
    result = []
    touched = _AccessMap()
    for op in ops:
        kind = type(op)
        if kind is Nop or kind is Barrier:
            touched.clear()
            result.append(op)
            continue
        if kind is Pipeline:
            op.ops = insert_dependency_syncs(op.ops)
        synced = False
        for buffer, start, end, access in op.accesses():
            if touched.record(buffer, start, end, op, access) and not synced:
                result.append(Nop())
                synced = True
        result.append(op)
    return result
