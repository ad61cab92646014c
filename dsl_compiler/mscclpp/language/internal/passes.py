"""The per-threadblock passes, run in this order on every threadblock of every rank:

1. ``fuse``: a left-to-right scan; each op is offered its successor, repeatedly, until it declines.
2. ``expand_data_sync``: the data_sync of signal/wait/flush/semaphore ops becomes explicit nops.
3. ``insert_dependency_syncs``: a nop wherever an op touches a local range an earlier op of the same
   threadblock wrote (RAW, WAW) or read (WAR) since the last barrier.
Pipelines are processed recursively: their bodies are threadblocks of their own.
"""
from bisect import bisect_left

from .ops import AFTER, BEFORE, READ, Barrier, Nop, Pipeline


def fuse(ops):
    result = []
    i, n = 0, len(ops)
    while i < n:
        current = ops[i]
        if type(current) is Pipeline:
            current.ops = fuse(current.ops)
        j = i + 1
        while j < n:
            fused = current.fuse(ops[j])
            if fused is None:
                break
            current = fused
            j += 1
        result.append(current)
        i = j
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
        # entries are (start, end, owner, kind); ends are sorted too because ranges are disjoint
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
            # Same op or read-after-read: the new access replaces the overlapped part of older ones.
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
