"""The compiler's operations: one class per op family, each knowing three things.

- ``accesses()``: the local ranges it reads and writes, for automatic intra-threadblock sync;
- ``fuse(next_op)``: the op replacing this one and the next, or None (it may drop a redundant sync);
- ``emit(out, shift)``: its JSON text, with indexes moved for one replicated instance.

References are tuples, not objects, because programs create hundreds of thousands: local
``(buffer, index, size)``, buffer "i", "o" or "s"; remote ``(buffer_id, index, size, peer_rank,
buffer)``, buffer_id threadblock-local. Sync bits: 1 = a barrier before the op, 2 = after it.
The runs at the end (SyncRun, PutRun, ReduceRun) stand for ops the DSL's fast paths do not make."""

READ = 1
WRITE = 2
BEFORE = 1
AFTER = 2

_LOCAL = '{"type":"%s","index":%d,"size":%d}'
_REMOTE = '{"buffer_id":%d,"index":%d,"size":%d}'
_CHUNK = '{"rank":%d,"type":"%s","index":%d,"size":%d}'
_SWITCH = '{"switch_channel_id":%d,"index":%d,"size":%d}'


class _Texts(dict):
    """value -> ``fmt % value``, made on first use: the JSON of a reference is put together from a
    few cached pieces instead of formatted each time. Equal values format equally with %d and %s,
    so the cache cannot change the text. emit.plan_json clears the caches after each plan."""

    __slots__ = ("fmt",)

    def __init__(self, fmt):
        super().__init__()
        self.fmt = fmt

    def __missing__(self, key):
        text = self[key] = self.fmt % key
        return text


_local_text = _Texts(_LOCAL)  # (buffer, index, size) -> whole reference (local ones repeat a lot)
_buffer_text = _Texts('{"type":"%s","index":')
_buffer_id_text = _Texts('{"buffer_id":%d,"index":')
_index_text = _Texts("%d")
_size_text = _Texts(',"size":%d}')


class _IdsTexts(dict):
    """tuple of ids -> their JSON list items: threadblocks of a rank often signal and wait on the
    same local channel indexes, so the text of one such list serves them all."""

    __slots__ = ()

    def __missing__(self, key):
        text = self[key] = ",".join(map(str, key))
        return text


_ids_text = _IdsTexts()
TEXT_CACHES = (_local_text, _buffer_text, _buffer_id_text, _index_text, _size_text, _ids_text)


def local_refs_json(refs, shift):
    if shift is None:
        return ",".join([_local_text[ref] for ref in refs])
    buffer, index, size = _buffer_text, _index_text, _size_text
    if shift.interleaved:  # Shift._local_interleaved, inlined
        n, k = shift.n, shift.k
        return ",".join([f"{buffer[b]}{index[i * n + k * s]}{size[s]}" for b, i, s in refs])
    move = shift.local
    return ",".join([f"{buffer[b]}{index[move(b, i, s)]}{size[s]}" for b, i, s in refs])


def remote_refs_json(refs, shift):
    buffer_id, index, size = _buffer_id_text, _index_text, _size_text
    if shift is None:
        return ",".join([f"{buffer_id[bid]}{index[i]}{size[s]}" for bid, i, s, _, _ in refs])
    if shift.interleaved:  # Shift._remote_interleaved, inlined
        n, k = shift.n, shift.k
        return ",".join([f"{buffer_id[bid]}{index[i * n + k * s]}{size[s]}" for bid, i, s, _, _ in refs])
    move = shift.remote
    return ",".join([f"{buffer_id[bid]}{index[move(peer, b, i, s)]}{size[s]}" for bid, i, s, peer, b in refs])


def ids_json(ids):
    return ",".join(map(str, ids))


def tbg_json(tbg):
    return ',"tbg_info":{"tb_id":%d,"tbg_size":%d}' % tbg if tbg else ""


class Op:
    """Base: an op with no local data access that fuses with nothing."""

    __slots__ = ("name",)
    is_sync_op = False  # carries a data_sync (signal, wait, flush, semaphores)

    def accesses(self):
        return ()

    def fuse(self, nxt):
        return None


class Nop(Op):
    """Threadblock-wide barrier (__syncthreads)."""

    __slots__ = ()

    def __init__(self):
        self.name = "nop"

    def fuse(self, nxt):
        if isinstance(nxt, Nop):
            return Nop()
        if isinstance(nxt, Barrier):
            return nxt
        if isinstance(nxt, Pipeline) and nxt.data_sync() & BEFORE:
            return nxt
        if nxt.is_sync_op:
            nxt.sync &= ~BEFORE  # this nop already is the barrier nxt asked for
        return None

    def emit(self, out, shift):
        out.append('{"name":"nop"}')


class Barrier(Op):
    """Barrier among ``num_threadblocks`` threadblocks of one rank."""

    __slots__ = ("barrier_id", "num_threadblocks")

    def __init__(self, barrier_id, num_threadblocks):
        self.name = "barrier"
        self.barrier_id = barrier_id
        self.num_threadblocks = num_threadblocks

    def fuse(self, nxt):
        if nxt.is_sync_op:
            nxt.sync &= ~BEFORE
            return None
        if isinstance(nxt, Nop):
            return self
        return None

    def emit(self, out, shift):
        bid = self.barrier_id if shift is None else shift.resource(self.barrier_id)
        out.append('{"name":"barrier","barrier_id":%d,"num_threadblocks":%d}' % (bid, self.num_threadblocks))


def _following_sync(nxt):
    """True when nxt starts with a block-wide barrier, so a sync after the previous op is redundant."""
    return (
        (nxt.is_sync_op and nxt.sync & BEFORE)
        or (isinstance(nxt, Pipeline) and nxt.data_sync() & BEFORE)
        or isinstance(nxt, (Nop, Barrier))
    )


class SyncOp(Op):
    """signal, wait (and their relaxed forms) and flush: ids are threadblock-local channel indexes."""

    __slots__ = ("ids", "channel_type", "sync", "idset", "text")
    is_sync_op = True

    def __init__(self, name, ids, channel_type, sync):
        self.name = name
        self.ids = ids
        self.channel_type = channel_type
        self.sync = sync
        self.idset = None  # set(ids), built when the op starts absorbing others
        self.text = None  # its JSON, once emitted

    def fuse(self, nxt):
        # Fusion may extend self in place: each op object lives in one
        # op list only, and the fused op replaces both operands there.
        if type(nxt) is SyncOp and nxt.name == self.name and nxt.channel_type == self.channel_type:
            seen = self.idset
            if seen is None:
                seen = self.idset = set(self.ids)
            ids = nxt.ids
            if len(ids) == 1:  # the usual case, without the general code's temporary lists
                i = ids[0]
                if i not in seen:
                    self.ids.append(i)
                    seen.add(i)
                    self.sync |= nxt.sync
                    return self
                if self.name == "flush":
                    self.sync |= nxt.sync
                    return self
                if nxt.sync & BEFORE:  # _following_sync(nxt), nxt being a SyncOp
                    self.sync &= ~AFTER
                return None
            new = [i for i in ids if i not in seen]
            # A second signal on one channel is a second increment: keep it.
            if len(new) == len(nxt.ids) or self.name == "flush":
                self.ids += new
                seen.update(new)
                self.sync |= nxt.sync
                return self
        if _following_sync(nxt):
            self.sync &= ~AFTER
        return None

    def emit(self, out, shift):
        # Ids are threadblock-local: one text serves every instance.
        text = self.text
        if text is None:
            text = self.text = '{"name":"%s","channel_ids":[%s],"channel_type":"%s"}' % (
                self.name,
                _ids_text[tuple(self.ids)],
                self.channel_type,
            )
        out.append(text)


class SemaphoreOp(Op):
    """sem_acquire / sem_release; ids are rank-level semaphore ids."""

    __slots__ = ("ids", "sync")
    is_sync_op = True

    def __init__(self, name, ids, sync):
        self.name = name
        self.ids = ids
        self.sync = sync

    def fuse(self, nxt):
        if type(nxt) is SemaphoreOp and nxt.name == self.name:
            self.ids += nxt.ids
            self.sync |= nxt.sync
            return self
        if _following_sync(nxt):
            self.sync &= ~AFTER
        return None

    def emit(self, out, shift):
        ids = self.ids if shift is None else [shift.resource(i) for i in self.ids]
        out.append('{"name":"%s","semaphore_ids":[%s]}' % (self.name, ids_json(ids)))


class Copy(Op):
    """copy (plain), cpkt (plain -> packets in scratch), upkt (packets in scratch -> plain)."""

    __slots__ = ("src", "dst", "tbg")

    def __init__(self, name, src, dst, tbg):
        self.name = name
        self.src = src
        self.dst = dst
        self.tbg = tbg

    def accesses(self):
        # Packets carry flags: a conversion's packet side needs no barrier.
        result = []
        if self.name != "upkt":
            result += [(b, i, i + s - 1, READ) for b, i, s in self.src]
        if self.name != "cpkt":
            result += [(b, i, i + s - 1, WRITE) for b, i, s in self.dst]
        return result

    def emit(self, out, shift):
        out.append(
            '{"name":"%s","src_buff":[%s],"dst_buff":[%s]%s}'
            % (self.name, local_refs_json(self.src, shift), local_refs_json(self.dst, shift), tbg_json(self.tbg))
        )


class Get(Op):
    """get: remote src -> local dst through memory channels."""

    __slots__ = ("src", "dst", "ids", "channel_type", "tbg")

    def __init__(self, src, dst, ids, channel_type, tbg):
        self.name = "get"
        self.src = src
        self.dst = dst
        self.ids = ids
        self.channel_type = channel_type
        self.tbg = tbg

    def accesses(self):
        return [(b, i, i + s - 1, WRITE) for b, i, s in self.dst]

    def fuse(self, nxt):
        if (
            type(nxt) is Get
            and nxt.src[0][2] == self.src[0][2]
            and nxt.channel_type == self.channel_type
            and nxt.tbg == self.tbg
        ):
            self.src += nxt.src
            self.dst += nxt.dst
            self.ids += nxt.ids
            return self
        return None

    def emit(self, out, shift):
        out.append(
            '{"name":"get","src_buff":[%s],"dst_buff":[%s],"channel_ids":[%s],"channel_type":"%s"%s}'
            % (
                remote_refs_json(self.src, shift),
                local_refs_json(self.dst, shift),
                ids_json(self.ids),
                self.channel_type,
                tbg_json(self.tbg),
            )
        )


_PUT_FUSABLE = frozenset(("put", "ppkt", "pws", "pwsf"))


class Put(Op):
    """put, ppkt (plain -> remote packets), rppkt (local packets -> remote packets), pws, pwsf."""

    __slots__ = ("src", "dst", "ids", "channel_type", "tbg")

    def __init__(self, name, src, dst, ids, channel_type, tbg):
        self.name = name
        self.src = src
        self.dst = dst
        self.ids = ids
        self.channel_type = channel_type
        self.tbg = tbg

    def accesses(self):
        if self.name == "rppkt":
            return ()
        return [(b, i, i + s - 1, READ) for b, i, s in self.src]

    def fuse(self, nxt):
        if type(nxt) is not Put or nxt.name != self.name or nxt.channel_type != self.channel_type:
            return None
        if nxt.tbg != self.tbg:
            return None
        if self.name in _PUT_FUSABLE and nxt.src[0][2] == self.src[0][2]:
            self.src += nxt.src
        elif not (self.name == "rppkt" and nxt.src[0] == self.src[0]):
            return None
        # rppkt: one read of the local packets, sent to every destination.
        self.dst += nxt.dst
        self.ids += nxt.ids
        return self

    def emit(self, out, shift):
        ids = ',"channel_ids":[%s]' % ids_json(self.ids) if self.channel_type == "port" else ""
        out.append(
            '{"name":"%s","src_buff":[%s],"dst_buff":[%s]%s,"channel_type":"%s"%s}'
            % (
                self.name,
                local_refs_json(self.src, shift),
                remote_refs_json(self.dst, shift),
                ids,
                self.channel_type,
                tbg_json(self.tbg),
            )
        )


class Reduce(Op):
    """The reduce family. Its name follows from what it has:

    re (local only), res (+ remote dsts), rre (+ remote srcs), rres (both), and with packets repkt,
    respkt (+ remote packet dsts), recpkt (+ a local packet copy), recspkt (both).
    """

    __slots__ = ("src", "dst", "pkt_dst", "rsrc", "rdst", "ids", "put_ids", "channel_type", "op", "tbg", "packet")

    def __init__(self, src, dst, pkt_dst, rsrc, rdst, ids, put_ids, channel_type, op, tbg, packet):
        self.src = src
        self.dst = dst
        self.pkt_dst = pkt_dst
        self.rsrc = rsrc
        self.rdst = rdst
        self.ids = ids
        self.put_ids = put_ids
        self.channel_type = channel_type
        self.op = op
        self.tbg = tbg
        self.packet = packet
        self._rename()

    def accesses(self):
        # With packets, src[0] is the plain local operand; the others carry flags.
        # So only src[0] is ordered against earlier writes.
        # MSCCL++'s compiler skips src[0] instead (docs/dsl-compiler.md, "Differences").
        srcs = self.src[:1] if self.packet else self.src
        result = [(b, i, i + s - 1, READ) for b, i, s in srcs]
        result += [(b, i, i + s - 1, WRITE) for b, i, s in self.dst]
        return result

    def _rename(self):
        """The op name after fusion added remote destinations or a packet copy."""
        if self.packet:
            if self.pkt_dst:
                self.name = "recspkt" if self.rdst else "recpkt"
            else:
                self.name = "respkt" if self.rdst else "repkt"
        else:
            self.name = ("rres" if self.rdst else "rre") if self.rsrc else ("res" if self.rdst else "re")

    def takes_put(self, put_name, put_src):
        """Whether a memory-channel put (put_name, local source put_src) of the same tbg sends this
        reduce's result (or its packet copy), so that it fuses into this op."""
        name = self.name
        if name in ("re", "res", "rre", "rres"):
            return put_name == "put" and put_src == self.dst[0]
        if name in ("repkt", "respkt"):
            return put_name == "ppkt" and put_src == self.dst[0]
        if name in ("recpkt", "recspkt"):
            return (put_name == "ppkt" and put_src == self.dst[0]) or (
                put_name == "rppkt" and put_src == self.pkt_dst[0]
            )
        return False

    def fuse(self, nxt):
        name = self.name
        kind = type(nxt)
        # Only Put, Reduce and Copy fuse into a reduce, with the same tbg.
        if (kind is not Put and kind is not Reduce and kind is not Copy) or nxt.tbg != self.tbg:
            return None
        if kind is Put:
            if nxt.channel_type != "memory" or not self.takes_put(nxt.name, nxt.src[0]):
                return None
            self.rdst += nxt.dst
            self.put_ids += nxt.ids
            self.channel_type = "memory"
        elif kind is Reduce:
            if not (
                name in ("re", "repkt", "rre")
                and nxt.name == name
                and nxt.src[0] == self.src[0]
                and nxt.dst == self.dst
                and nxt.channel_type == self.channel_type
                and nxt.op == self.op
            ):
                return None
            if len(nxt.src) > 1:
                self.src += nxt.src[1:]
            self.rsrc += nxt.rsrc
            self.ids += nxt.ids
            return self  # same name: both have the same name, packet flag, pkt_dst and rdst kinds
        elif kind is Copy and name == "repkt" and nxt.name == "cpkt" and nxt.src[0] == self.dst[0]:
            self.pkt_dst = list(nxt.dst)
        else:
            return None
        self._rename()
        return self

    def emit(self, out, shift):
        src = local_refs_json(self.src, shift)
        if self.rsrc:
            src += "," + remote_refs_json(self.rsrc, shift)
        dst = local_refs_json(self.dst + self.pkt_dst, shift)
        if self.rdst:
            dst += "," + remote_refs_json(self.rdst, shift)
        ctype = ',"channel_type":"%s"' % self.channel_type if self.channel_type != "none" else ""
        out.append(
            '{"name":"%s","src_buff":[%s],"dst_buff":[%s]%s,"reduce_op":"%s"%s}'
            % (self.name, src, dst, ctype, self.op, tbg_json(self.tbg))
        )


class GroupLoadReduce(Op):
    """glre: NVLS multimem load-reduce of [offset, offset+size) of the group's buffers into dst."""

    __slots__ = ("buffer", "offset", "size", "dst", "dst_rank", "ids", "op")

    def __init__(self, buffer, offset, size, dst, dst_rank, ids, op):
        self.name = "glre"
        self.buffer = buffer
        self.offset = offset
        self.size = size
        self.dst = dst  # local ref (b, index, size)
        self.dst_rank = dst_rank
        self.ids = ids
        self.op = op

    def accesses(self):
        b, i, s = self.dst
        return [(b, i, i + s - 1, WRITE)]

    def fuse(self, nxt):
        if (
            type(nxt) is GroupStore
            and nxt.name == "gstore"
            and nxt.buffer == self.buffer
            and nxt.size == self.size
            and nxt.src == self.dst
            and nxt.src_rank == self.dst_rank
            and nxt.ids == self.ids
        ):
            return GroupLoadReduceStore(self.buffer, self.size, [self.offset], [nxt.offset], self.ids, self.op)
        return None

    def emit(self, out, shift):
        b, i, s = self.dst
        offset = self.offset
        if shift is not None:
            i = shift.local(b, i, s)
            offset = shift.local(self.buffer, offset, self.size)
        cid = self.ids[0]
        # Uniform src_buff/dst_buff first, then the keys MSCCL++ emits for glre.
        # Readers of either form understand the op (docs/dsl-compiler.md, "Differences").
        out.append(
            '{"name":"glre","src_buff":[%s],"dst_buff":[%s],"channel_type":"switch","reduce_op":"%s",'
            '"buffer_type":"%s","buffer_offset":%d,"size":%d,"dst_chunk":%s,"channel_ids":[%s]}'
            % (
                _SWITCH % (cid, offset, self.size),
                _LOCAL % (b, i, s),
                self.op,
                self.buffer,
                offset,
                self.size,
                _CHUNK % (self.dst_rank, b, i, s),
                ids_json(self.ids),
            )
        )


class GroupStore(Op):
    """gstore / gstorepkt: NVLS multimem store of a local chunk to [offset, offset+size) of the group."""

    __slots__ = ("src", "src_rank", "buffer", "offset", "size", "ids")

    def __init__(self, name, src, src_rank, buffer, offset, size, ids):
        self.name = name
        self.src = src
        self.src_rank = src_rank
        self.buffer = buffer
        self.offset = offset
        self.size = size
        self.ids = ids

    def accesses(self):
        if self.name == "gstorepkt":
            return ()
        b, i, s = self.src
        return [(b, i, i + s - 1, READ)]

    def emit(self, out, shift):
        b, i, s = self.src
        offset = self.offset
        if shift is not None:
            i = shift.local(b, i, s)
            offset = shift.local(self.buffer, offset, self.size)
        out.append(
            '{"name":"%s","src_buff":[%s],"dst_buff":[%s],"channel_type":"switch"}'
            % (self.name, _CHUNK % (self.src_rank, b, i, s), _SWITCH % (self.ids[0], offset, self.size))
        )


class GroupLoadReduceStore(Op):
    """glres: load-reduce from the group and store the result back to the group, in one op."""

    __slots__ = ("buffer", "size", "src_offsets", "dst_offsets", "ids", "op")

    def __init__(self, buffer, size, src_offsets, dst_offsets, ids, op):
        self.name = "glres"
        self.buffer = buffer
        self.size = size
        self.src_offsets = src_offsets
        self.dst_offsets = dst_offsets
        self.ids = ids
        self.op = op

    def emit(self, out, shift):
        size = self.size
        move = (lambda o: o) if shift is None else (lambda o: shift.local(self.buffer, o, size))
        src = ",".join(_SWITCH % (cid, move(o), size) for cid, o in zip(self.ids, self.src_offsets))
        dst = ",".join(_SWITCH % (cid, move(o), size) for cid, o in zip(self.ids, self.dst_offsets))
        out.append(
            '{"name":"glres","src_buff":[%s],"dst_buff":[%s],"channel_type":"switch","reduce_op":"%s"}'
            % (src, dst, self.op)
        )


class SyncRun:
    """Signal/wait ops of one name, channel type and data_sync, written one after the other on a
    threadblock through the DSL's fast path and kept as a list of channel indexes instead of one
    SyncOp each: ``ids[i]`` stands for ``SyncOp(name, [ids[i]], channel_type, bits)``. Runs exist
    only in threadblock op lists before the passes: passes.fuse (or passes.expand_runs without
    fusion) treats them exactly as those SyncOps, without making the ones fusion merges away."""

    __slots__ = ("name", "channel_type", "bits", "ids", "kind")  # kind: (name, channel_type, bits), shared

    def ops(self):
        name, ctype, bits = self.name, self.channel_type, self.bits
        return [SyncOp(name, [i], ctype, bits) for i in self.ids]


class PutRun:
    """Puts of one name and channel type (no tbg) written one after the other on a threadblock
    through the DSL's fast path: ``puts[i] = (src, dst, channel index)`` stands for ``Put(name,
    [src], [dst], [channel index], channel_type, None)``. Like SyncRun, expanded by the passes."""

    __slots__ = ("name", "channel_type", "puts")

    def ops(self):
        name, ctype = self.name, self.channel_type
        return [Put(name, [s], [d], [i], ctype, None) for s, d, i in self.puts]


class ReduceRun:
    """Memory-channel reduces (sum, no tbg) written one after the other on a threadblock through
    the DSL's fast path: ``reduces[i] = (src, dst, remote srcs, channel index)`` stands for the rre
    ``Reduce([src], [dst], [], remote srcs, [], [channel index], [], "memory", "sum", None, False)``.
    Like SyncRun, expanded by the passes."""

    __slots__ = ("reduces",)

    def ops(self):
        return [Reduce([s], [d], [], r, [], [i], [], "memory", "sum", None, False) for s, d, r, i in self.reduces]


class Pipeline(Op):
    """A loop over the message in units of ``unit_size`` bytes, running ``ops`` on each unit."""

    __slots__ = ("unit_size", "num_chunks", "ops")

    def __init__(self, unit_size, num_chunks):
        self.name = "pipeline"
        self.unit_size = unit_size
        self.num_chunks = num_chunks
        self.ops = []

    def data_sync(self):
        """Whether the body starts (BEFORE) or ends (AFTER) with a block-wide barrier."""
        result = 0
        if self.ops:
            first, last = self.ops[0], self.ops[-1]
            if isinstance(first, (Nop, Barrier)):
                result |= BEFORE
            elif first.is_sync_op:
                result |= first.sync & BEFORE
            if isinstance(last, (Nop, Barrier)):
                result |= AFTER
            elif last.is_sync_op:
                result |= last.sync & AFTER
        return result

    def accesses(self):
        result = []
        for op in self.ops:
            result += op.accesses()
        return result

    def fuse(self, nxt):
        if self.data_sync() & AFTER:
            if nxt.is_sync_op:
                nxt.sync &= ~BEFORE
                return None
            if isinstance(nxt, Nop):
                return self
        return None

    def emit(self, out, shift):
        inner = []
        for op in self.ops:
            op.emit(inner, shift)
        out.append(
            '{"name":"pipeline","iter_context":{"unit_size":%d,"num_chunks":%d},"ops":[%s]}'
            % (self.unit_size, self.num_chunks, ",".join(inner))
        )
