"""Channels: MemoryChannel and PortChannel connect a rank to a peer; SwitchChannel binds one buffer
of a group of ranks for NVLS multicast. Each constructor call creates a new channel.

A channel object belongs to its ``src_rank``: every op on it runs there, and its chunks must be on
src_rank (local side) and dst_rank (remote side).
"""
from sys import _getframe
from typing import Any, Dict, List  # noqa: F401 (re-exported: MSCCL++'s star import gives them)

from .errors import _LANGUAGE_DIR, DSLError, user_location
from .internal import state as _state
from .internal.ops import GroupLoadReduce, GroupStore, Get, Put, PutRun, Reduce, ReduceRun, SyncOp, SyncRun
from .internal.rank_state import ThreadBlock
from .internal.state import get_program, reset_ids
from .loop import check_iter_context
from .rank import reduce_op_value, require_packets, require_scratch, sync_bits
from .thread_block_group import ThreadBlockGroup, threadblocks
from .types import BufferType, ChannelType, Chunk, RankGroup, ReduceOperationType, SyncType

# MSCCL++'s module has no __all__, so its star import gives its imports too.
# These are the DSL's names among them, plus our own.
__all__ = [
    "MemoryChannel",
    "PortChannel",
    "SwitchChannel",
    "SwitchChannelRankView",
    "Channel",
    "ChannelType",
    "SyncType",
    "BufferType",
    "ReduceOperationType",
    "Chunk",
    "RankGroup",
    "ThreadBlockGroup",
    "get_program",
    "Any",
    "Dict",
    "List",
]

_SCRATCH = BufferType.scratch
_BOTH = SyncType.both
_AFTER = SyncType.after
_BEFORE = SyncType.before
_BITS = {t._value_: t.bits for t in SyncType}  # keyed by value: Enum.__hash__ is slow Python code
_SUM = ReduceOperationType.sum
_new = object.__new__  # ops of the hot paths are built field by field: no __init__ call

# The code object of the latest user frame _user_frame found.
# A DSL call from that code needs no frame walk;
# programs call from the same few loops again and again.
_user_code = None
# That code's call sites, instruction offset -> (code, offset), the location a signal or wait records:
# one tuple per call site instead of one per call.
_user_sites = {}


def _user_frame(frame):
    """The innermost frame, from ``frame`` outwards, whose code lives outside mscclpp/language."""
    global _user_code, _user_sites
    while frame.f_code.co_filename.startswith(_LANGUAGE_DIR):
        frame = frame.f_back
    if frame.f_code is not _user_code:
        _user_code = frame.f_code
        _user_sites = {}
    return frame


def _new_site(offset):
    """The location of instruction ``offset`` of _user_code, made once."""
    site = _user_sites[offset] = (_user_code, offset)
    return site


def _check_rank(program, rank, role):
    if type(rank) is not int or not 0 <= rank < program.num_ranks:
        raise DSLError(f"{role} rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())


_PUT_OP_NAMES = {
    "put": "put",
    "put_packets": "ppkt",
    "read_put_packets": "rppkt",
    "put_with_signal": "pws",
    "put_with_signal_and_flush": "pwsf",
}


def _put_method(name, doc):
    """put / put_packets / read_put_packets (see _PeerChannel): the fast path, else _put. The fast path
    takes only an int tb and no tb_group, so PortChannel's _put (its group check) is not bypassed."""
    op_name = _PUT_OP_NAMES[name]
    packets = op_name == "ppkt" or op_name == "rppkt"
    forward = op_name == "rppkt"

    def method(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        program = _state._active
        if (
            program is self._program
            and program._direct
            and type(tb) is int
            and tb_group is None
            and iter_context is None
            and type(src_chunk) is Chunk
            and type(dst_chunk) is Chunk
            and src_chunk.rank == self.src_rank
            and dst_chunk.rank == self.dst_rank
            and dst_chunk.size == src_chunk.size
            and (
                not packets
                or (
                    program.protocol == "LL"
                    and dst_chunk.buffer is _SCRATCH
                    and (not forward or src_chunk.buffer is _SCRATCH)
                )
            )
        ):
            dst_buffer = dst_chunk.buffer._value_
            slot = self._slots.get(tb)
            if slot is None:
                slot = self._slot(tb, dst_buffer)
                local_rb = slot[3]
            else:
                local_rb = slot[3] if slot[2] == dst_buffer else self._new_remote(slot, dst_buffer)
            size = src_chunk.size
            src = (src_chunk.buffer._value_, src_chunk.index, size)
            dst = (local_rb, dst_chunk.index, size, self.dst_rank, dst_buffer)
            ctype = self.channel_type
            ops = slot[0]
            if ops:
                run = ops[-1]
                if type(run) is PutRun and run.name == op_name and run.channel_type == ctype:
                    run.puts.append((src, dst, slot[1]))
                    return
            run = _new(PutRun)
            run.name = op_name
            run.channel_type = ctype
            run.puts = [(src, dst, slot[1])]
            ops.append(run)
            return
        self._put(name, dst_chunk, src_chunk, tb, tb_group, iter_context)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    return method


def _sync_kinds(name, channel_type):
    """What a SyncRun of the op ``name`` holds, by data_sync bits: (name, channel type, bits), one
    tuple per kind, so that a fast path tells whether an op extends the last run by identity."""
    return [(name, channel_type, bits) for bits in range(4)]


def _memory_sync(strict_name, relaxed_name, index, doc):
    """MemoryChannel.signal (index 0) / wait (index 1): the fast path, else _sync_op.

    The pairing check needs where each signal and wait was called: the fast path records the
    caller's (code, instruction offset), which costs a fraction of reading f_lineno; the caller is
    the user's frame unless the call came through another DSL method (relaxedSignal, ...)."""
    is_signal = index == 0
    strict_kinds = _sync_kinds(strict_name, "memory")
    relaxed_kinds = _sync_kinds(relaxed_name, "memory")

    def method(self, tb, data_sync=_BOTH, relaxed=False, sync=None, iter_context=None):
        program = _state._active
        if program is self._program and program._direct and sync is None and iter_context is None:
            if data_sync is _BOTH:
                bits = 3
            elif data_sync is _AFTER:
                bits = 2
            elif data_sync is _BEFORE:
                bits = 1
            else:
                bits = _BITS.get(getattr(data_sync, "_value_", None))
            if bits is not None:
                slot = self._slots.get(tb) or self._slot(tb)
                frame = _getframe(1)
                if frame.f_code is not _user_code:
                    frame = _user_frame(frame)
                offset = frame.f_lasti
                records = self._records or self._new_records(program)
                records[index].append(_user_sites.get(offset) or _new_site(offset))
                kind = relaxed_kinds[bits] if relaxed else strict_kinds[bits]
                ops = slot[0]
                if ops:
                    run = ops[-1]
                    if type(run) is SyncRun and run.kind is kind:
                        run.ids.append(slot[1])
                        return
                run = _new(SyncRun)
                run.kind = kind
                run.name, run.channel_type, run.bits = kind
                run.ids = [slot[1]]
                ops.append(run)
                return
        self._sync_op(relaxed_name if relaxed else strict_name, tb, data_sync, sync, iter_context, is_signal)

    method.__name__ = method.__qualname__ = strict_name
    method.__doc__ = doc
    return method


def _port_sync(name, index):
    """PortChannel.signal (index 0) / wait (index 1): the fast path, else _sync_op."""
    is_signal = index == 0
    kinds = _sync_kinds(name, "port")

    def method(self, tb, data_sync=_BOTH, sync=None, iter_context=None, relaxed=False):
        if relaxed:
            raise DSLError(f"relaxed {name} exists only on memory channels", user_location())
        program = _state._active
        if program is self._program and program._direct and sync is None and iter_context is None:
            if data_sync is _BOTH:
                bits = 3
            elif data_sync is _AFTER:
                bits = 2
            elif data_sync is _BEFORE:
                bits = 1
            else:
                bits = _BITS.get(getattr(data_sync, "_value_", None))
            if bits is not None:
                slot = self._slots.get(tb) or self._slot(tb)
                frame = _getframe(1)
                if frame.f_code is not _user_code:
                    frame = _user_frame(frame)
                offset = frame.f_lasti
                records = self._records or self._new_records(program)
                records[index].append(_user_sites.get(offset) or _new_site(offset))
                kind = kinds[bits]
                ops = slot[0]
                if ops:
                    run = ops[-1]
                    if type(run) is SyncRun and run.kind is kind:
                        run.ids.append(slot[1])
                        return
                run = _new(SyncRun)
                run.kind = kind
                run.name, run.channel_type, run.bits = kind
                run.ids = [slot[1]]
                ops.append(run)
                return
        self._sync_op(name, tb, data_sync, sync, iter_context, is_signal)

    method.__name__ = method.__qualname__ = name
    return method


class _PeerChannel:
    """What memory and port channels share: identity, pairing records, signal/wait/put.

    Programs call these methods hundreds of thousands of times, so each channel caches what it
    resolved once: its rank's state and, per threadblock, the threadblock's local channel index and
    remote-buffer indexes (``_slots``). signal, wait, put, put_packets, read_put_packets and
    MemoryChannel.reduce start with a fast path for the common call (an int tb, no group, outside
    loops, default options, nothing to report): its checks are the general path's, all passing, in
    one expression, and it appends the op to a run of like ops (SyncRun, PutRun, ReduceRun in
    internal/ops.py) instead of making an op object. Any other call, and every call that has
    something to report, takes the general path (``_sync_op``, ``_put``, ``_reduce``), which checks
    everything in the documented order, so errors and their locations do not depend on the path.
    """

    channel_type = None  # "memory" or "port"

    def __init__(self, dst_rank, src_rank):
        program = _state._active
        if (
            program is None
            or program._json is not None
            or not program._current_model
            or type(dst_rank) is not int
            or type(src_rank) is not int
            or not 0 <= src_rank < program.num_ranks
            or not 0 <= dst_rank < program.num_ranks
            or dst_rank == src_rank
        ):
            program, dst_rank, src_rank = self._check_new(dst_rank, src_rank)
        self.src_rank = src_rank
        self.dst_rank = dst_rank
        self._program = program
        self._state = state = program.ranks[src_rank]
        # RankState.add_channel, inlined: the channel is the k-th of its type to dst_rank (see _pair),
        # its pairing records outside loops at index k of _siblings, the list of those channels'.
        ctype = self.channel_type
        peers = state.channels.get(ctype)
        if peers is None:
            peers = state.channels[ctype] = []
        self.channel_id = len(peers)
        peers.append(dst_rank)
        siblings = self._siblings = state.peer_channels.get((ctype, dst_rank))
        if siblings is None:
            siblings = self._siblings = state.peer_channels[(ctype, dst_rank)] = []
        self._k = len(siblings)
        siblings.append(None)
        self._key = (ctype, self.channel_id)  # the channel's key in ThreadBlock.channel_index
        # tb -> [the threadblock's op list, local channel index, the first peer buffer used there (a
        # buffer char) and its local remote-buffer index, ThreadBlock, {other buffer: index} or None]
        self._slots = {}
        # The peer buffer last registered (a buffer char) and its (channel type, rank-level remote
        # buffer id): a channel used on many threadblocks registers the same buffer on each.
        self._remote_buffer = None
        self._remote_key = None
        self._records = None  # (signal locations, wait locations) outside loops

    @property
    def _pair(self):
        """(rank, peer, channel type, k): identifies the channel's pairing records (see pairing.py)."""
        return (self.src_rank, self.dst_rank, self.channel_type, self._k)

    def _new_records(self, program):
        """The channel's pairing records outside loops (CollectiveProgram.sync_entry, inlined)."""
        records = self._records = self._siblings[self._k] = ([], [])
        program.sync_order.append((self.src_rank, self.dst_rank, self.channel_type, self._k, None))
        return records

    def __repr__(self):
        return f"{type(self).__name__}(dst_rank={self.dst_rank}, src_rank={self.src_rank}) #{self.channel_id}"

    @classmethod
    def reset(cls):
        """MSCCL++'s counter reset: see internal/state.reset_ids."""
        reset_ids(cls.__name__)

    @staticmethod
    def _check_new(dst_rank, src_rank):
        """The constructor's checks, in order; returns (program, dst_rank, src_rank) or raises."""
        program = get_program()
        program.check_writable()
        dst_rank = getattr(dst_rank, "rank", dst_rank)
        src_rank = getattr(src_rank, "rank", src_rank)
        _check_rank(program, src_rank, "source")
        _check_rank(program, dst_rank, "destination")
        if dst_rank == src_rank:
            raise DSLError(f"a channel connects two different ranks, got {src_rank} -> {dst_rank}", user_location())
        return program, dst_rank, src_rank

    def _current(self):
        program = _state._active
        if program is not self._program:
            if program is None:
                get_program()  # raises the "no active program" error
            raise DSLError(f"{self!r} belongs to another CollectiveProgram", user_location())
        return program

    def _slot(self, tb, buffer=None):
        """Registers the channel on threadblock tb (RankState.tb + ThreadBlock.channel, inlined), and
        the peer's ``buffer`` too when given (as _remote would next)."""
        if type(tb) is not int or tb < 0:
            raise DSLError(f"tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        tbs = self._state.threadblocks
        if tb >= len(tbs):
            tbs.extend([ThreadBlock() for _ in range(tb + 1 - len(tbs))])
        block = tbs[tb]
        key = self._key
        local = block.channel_index.get(key)
        if local is None:
            ids = block.channels.get(key[0])
            if ids is None:
                ids = block.channels[key[0]] = []
            local = block.channel_index[key] = len(ids)
            ids.append(key[1])
        slot = self._slots[tb] = [block.ops, local, None, None, block, None]
        if buffer is not None:
            slot[3] = self._register_remote(block, buffer)
            slot[2] = buffer
        return slot

    def _remote(self, slot, buffer):
        """The threadblock-local id of the peer's buffer, registering it on first use."""
        return slot[3] if slot[2] == buffer else self._new_remote(slot, buffer)

    def _new_remote(self, slot, buffer):
        """_remote for a buffer other than the slot's first (the fast paths looked at that)."""
        if slot[2] is None:
            local = slot[3] = self._register_remote(slot[4], buffer)
            slot[2] = buffer
            return local
        others = slot[5]
        if others is None:
            others = slot[5] = {}
        local = others.get(buffer)
        if local is None:
            local = others[buffer] = self._register_remote(slot[4], buffer)
        return local

    def _register_remote(self, block, buffer):
        """Registers the peer's buffer on ThreadBlock block (RankState.remote_buffer and
        ThreadBlock.remote_buffer, inlined); returns its threadblock-local id."""
        ctype = self.channel_type
        if buffer == self._remote_buffer:
            key = self._remote_key
        else:
            buffers = self._state.remote_buffers
            entry = buffers.get((self.dst_rank, buffer))
            if entry is None:
                entry = buffers[(self.dst_rank, buffer)] = [len(buffers), [ctype]]
            elif ctype not in entry[1]:
                entry[1].append(ctype)
            key = self._remote_key = (ctype, entry[0])
            self._remote_buffer = buffer
        local = block.remote_index.get(key)
        if local is None:
            ids = block.remote_buffers.get(ctype)
            if ids is None:
                ids = block.remote_buffers[ctype] = []
            local = block.remote_index[key] = len(ids)
            ids.append(key[1])
        return local

    def _wrong_chunk(self, what, role, chunk, side):
        expected = self.src_rank if side == "local" else self.dst_rank
        if not isinstance(chunk, Chunk):
            return DSLError(f"{what}: {role} must be a Chunk (a buffer slice), got {chunk!r}", user_location())
        return DSLError(
            f"{what} on the channel from rank {self.src_rank} to rank {self.dst_rank}: the {role} chunk is on "
            f"rank {chunk.rank}, but it must be on rank {expected} (the {side} side)",
            user_location(),
        )

    def _record(self, program, is_signal):
        """Remembers where the user signalled or waited, for the pairing check at compile time.

        Stored as (code, instruction offset): reading a frame's f_lineno scans the code's line
        table, which costs more than the rest of the call; the line is computed only for errors."""
        frame = _user_frame(_getframe(2))
        location = (frame.f_code, frame.f_lasti)
        if program.loop_context is None:
            records = self._records or self._new_records(program)
            records[0 if is_signal else 1].append(location)
        else:
            program.record_sync(self._pair, is_signal, location)

    def _sync_op(self, name, tb, data_sync, sync, iter_context, is_signal):
        program = _state._active
        if program is not self._program:
            program = self._current()
        if iter_context is not None:
            check_iter_context(program, iter_context)
        bits = _BITS.get(getattr(data_sync, "_value_", None)) if sync is None else None
        if bits is None:
            bits = sync_bits(data_sync, sync, _BOTH)
        slot = self._slots.get(tb) or self._slot(tb)
        if is_signal is not None:
            self._record(program, is_signal)
        op = SyncOp(name, [slot[1]], self.channel_type, bits)
        if program._direct:
            slot[0].append(op)
        else:
            program.add_op(self.src_rank, tb, op)

    def _put(self, name, dst_chunk, src_chunk, tb, tb_group, iter_context):
        program = _state._active
        if program is not self._program:
            program = self._current()
        if iter_context is not None:
            check_iter_context(program, iter_context)
        if type(src_chunk) is not Chunk or src_chunk.rank != self.src_rank:
            raise self._wrong_chunk(name, "src", src_chunk, "local")
        if type(dst_chunk) is not Chunk or dst_chunk.rank != self.dst_rank:
            raise self._wrong_chunk(name, "dst", dst_chunk, "remote")
        size = src_chunk.size
        if dst_chunk.size != size:
            raise DSLError(f"{name}: dst chunk has {dst_chunk.size} chunk(s) but src chunk has {size}", user_location())
        op_name = _PUT_OP_NAMES[name]
        if op_name == "ppkt" or op_name == "rppkt":
            if program.protocol != "LL":
                require_packets(program, name)
            if dst_chunk.buffer is not _SCRATCH:
                require_scratch(dst_chunk, name, "dst")
            if op_name == "rppkt" and src_chunk.buffer is not _SCRATCH:
                require_scratch(src_chunk, name, "src")
        dst_buffer = dst_chunk.buffer._value_
        src = (src_chunk.buffer._value_, src_chunk.index, size)
        ctype = self.channel_type
        if tb_group is None and type(tb) is int:
            slot = self._slots.get(tb) or self._slot(tb)
            local_rb = self._remote(slot, dst_buffer)
            op = Put(op_name, [src], [(local_rb, dst_chunk.index, size, self.dst_rank, dst_buffer)], [slot[1]], ctype, None)
            if program._direct:
                slot[0].append(op)
            else:
                program.add_op(self.src_rank, tb, op)
        else:
            for tb_id, tbg in threadblocks(tb, tb_group):
                slot = self._slots.get(tb_id) or self._slot(tb_id)
                remote = (self._remote(slot, dst_buffer), dst_chunk.index, size, self.dst_rank, dst_buffer)
                program.add_op(self.src_rank, tb_id, Put(op_name, [src], [remote], [slot[1]], ctype, tbg))
        if op_name == "pws" or op_name == "pwsf":
            self._record(program, True)

    put = _put_method("put", "Copies src_chunk (on src_rank) to dst_chunk (on dst_rank).")
    put_packets = _put_method("put_packets", "Sends src_chunk as LL packets into dst_chunk (the peer's scratch).")
    read_put_packets = _put_method(
        "read_put_packets", "Forwards LL packets from src_chunk (local scratch) to dst_chunk (the peer's scratch)."
    )

    # Names of earlier MSCCL++ releases.
    put_packet = put_packets
    read_put_packet = read_put_packets


class MemoryChannel(_PeerChannel):
    """Peer-to-peer through mapped memory (NVLink, PCIe): put, get, reduce, signal/wait, packets."""

    channel_type = "memory"

    signal = _memory_sync(
        "signal", "rlxsignal", 0, "Increments the peer's counter for this channel (relaxed: no memory ordering)."
    )
    wait = _memory_sync("wait", "rlxwait", 1, "Waits for the peer's signal on this channel (relaxed: no memory ordering).")

    def relaxedSignal(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):  # noqa: N802 (DSL guide)
        self.signal(tb, data_sync, True, sync, iter_context)

    def relaxedWait(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):  # noqa: N802 (DSL guide)
        self.wait(tb, data_sync, True, sync, iter_context)

    relaxed_signal = relaxedSignal
    relaxed_wait = relaxedWait

    def get(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Copies src_chunk (on dst_rank, the peer) into dst_chunk (on src_rank, this rank)."""
        program = self._current()
        if iter_context is not None:
            check_iter_context(program, iter_context)
        if type(dst_chunk) is not Chunk or dst_chunk.rank != self.src_rank:
            raise self._wrong_chunk("get", "dst", dst_chunk, "local")
        if type(src_chunk) is not Chunk or src_chunk.rank != self.dst_rank:
            raise self._wrong_chunk("get", "src", src_chunk, "remote")
        if dst_chunk.size != src_chunk.size:
            raise DSLError(f"get: dst chunk has {dst_chunk.size} chunk(s) but src chunk has {src_chunk.size}", user_location())
        src_buffer = src_chunk.buffer._value_
        dst = (dst_chunk.buffer._value_, dst_chunk.index, dst_chunk.size)
        for tb_id, tbg in threadblocks(tb, tb_group):
            slot = self._slots.get(tb_id) or self._slot(tb_id)
            remote = (self._remote(slot, src_buffer), src_chunk.index, src_chunk.size, self.dst_rank, src_buffer)
            program.add_op(self.src_rank, tb_id, Get([remote], [dst], [slot[1]], "memory", tbg))

    def reduce(
        self,
        local_src_chunk,
        remote_src_chunks,
        tb=None,
        tb_group=None,
        local_dst_chunk=None,
        reduce_op=ReduceOperationType.sum,
        op=None,
        iter_context=None,
    ):
        """local_dst_chunk = local_src_chunk (+) each remote chunk (read from the peer's memory)."""
        program = _state._active
        if (
            program is self._program
            and program._direct
            and type(tb) is int
            and tb_group is None
            and iter_context is None
            and reduce_op is _SUM
            and op is None
            and type(local_src_chunk) is Chunk
            and local_src_chunk.rank == self.src_rank
        ):
            # Fast path: the checks below, all passing. Else _reduce.
            size = local_src_chunk.size
            dst_rank = self.dst_rank
            remote = remote_src_chunks
            if type(remote) is Chunk:
                remote = (remote,)
            elif type(remote) is not list and type(remote) is not tuple:
                remote = ()
            if remote and (
                local_dst_chunk is None
                or (
                    type(local_dst_chunk) is Chunk
                    and local_dst_chunk.rank == self.src_rank
                    and local_dst_chunk.size == size
                )
            ):
                for c in remote:
                    if type(c) is not Chunk or c.rank != dst_rank or c.size != size:
                        break
                else:
                    slot = self._slots.get(tb) or self._slot(tb)
                    if len(remote) == 1:  # the usual call; c is its chunk
                        buffer = c.buffer._value_
                        local_rb = slot[3] if slot[2] == buffer else self._new_remote(slot, buffer)
                        refs = [(local_rb, c.index, size, dst_rank, buffer)]
                    else:
                        refs = []
                        for c in remote:
                            buffer = c.buffer._value_
                            local_rb = slot[3] if slot[2] == buffer else self._new_remote(slot, buffer)
                            refs.append((local_rb, c.index, size, dst_rank, buffer))
                    src = (local_src_chunk.buffer._value_, local_src_chunk.index, size)
                    if local_dst_chunk is not None:
                        dst = (local_dst_chunk.buffer._value_, local_dst_chunk.index, size)
                    else:
                        dst = src
                    ops = slot[0]
                    if ops:
                        run = ops[-1]
                        if type(run) is ReduceRun:
                            run.reduces.append((src, dst, refs, slot[1]))
                            return
                    run = _new(ReduceRun)
                    run.reduces = [(src, dst, refs, slot[1])]
                    ops.append(run)
                    return
        self._reduce(local_src_chunk, remote_src_chunks, tb, tb_group, local_dst_chunk, reduce_op, op, iter_context)

    def _reduce(self, local_src_chunk, remote_src_chunks, tb, tb_group, local_dst_chunk, reduce_op, op, iter_context):
        program = self._current()
        if iter_context is not None:
            check_iter_context(program, iter_context)
        if type(remote_src_chunks) is Chunk:
            remote_src_chunks = [remote_src_chunks]
        if local_dst_chunk is None:
            local_dst_chunk = local_src_chunk
        for role, chunk in (("local src", local_src_chunk), ("local dst", local_dst_chunk)):
            if type(chunk) is not Chunk or chunk.rank != self.src_rank:
                raise self._wrong_chunk("reduce", role, chunk, "local")
        if not remote_src_chunks:
            raise DSLError("reduce needs at least one remote chunk", user_location())
        size = local_src_chunk.size
        for chunk in remote_src_chunks:
            if type(chunk) is not Chunk or chunk.rank != self.dst_rank:
                raise self._wrong_chunk("reduce", "remote src", chunk, "remote")
            if chunk.size != size:
                raise DSLError(
                    f"reduce: chunk sizes differ ({chunk.size} vs local src {size}); every operand has the same size",
                    user_location(),
                )
        if local_dst_chunk.size != size:
            raise DSLError(
                f"reduce: chunk sizes differ ({local_dst_chunk.size} vs local src {size}); every operand has the same size",
                user_location(),
            )
        value = "sum" if reduce_op is _SUM and op is None else reduce_op_value(reduce_op, op)
        src = (local_src_chunk.buffer._value_, local_src_chunk.index, size)
        dst = (local_dst_chunk.buffer._value_, local_dst_chunk.index, size)
        dst_rank = self.dst_rank
        for tb_id, tbg in threadblocks(tb, tb_group):
            slot = self._slots.get(tb_id) or self._slot(tb_id)
            remote = []
            for c in remote_src_chunks:
                buffer = c.buffer._value_
                remote.append((self._remote(slot, buffer), c.index, size, dst_rank, buffer))
            op_ = Reduce([src], [dst], [], remote, [], [slot[1]], [], "memory", value, tbg, False)
            program.add_op(self.src_rank, tb_id, op_)


class PortChannel(_PeerChannel):
    """Through a port served by the host proxy (IB, or copies): put, signal, wait, flush, packets."""

    channel_type = "port"

    signal = _port_sync("signal", 0)
    wait = _port_sync("wait", 1)

    def flush(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):
        """Waits until the proxy has completed this channel's earlier requests."""
        self._sync_op("flush", tb, data_sync, sync, iter_context, None)

    def _put(self, name, dst_chunk, src_chunk, tb, tb_group, iter_context):
        if tb_group is not None or isinstance(tb, ThreadBlockGroup):
            raise DSLError(f"{name} on a PortChannel runs on one threadblock: give tb=, not a group", user_location())
        _PeerChannel._put(self, name, dst_chunk, src_chunk, tb, None, iter_context)

    def put_with_signal(self, dst_chunk, src_chunk, tb, iter_context=None):
        """put, then signal the peer once the data has arrived."""
        self._put("put_with_signal", dst_chunk, src_chunk, tb, None, iter_context)

    def put_with_signal_and_flush(self, dst_chunk, src_chunk, tb, iter_context=None):
        """put_with_signal, then wait until the proxy has completed it."""
        self._put("put_with_signal_and_flush", dst_chunk, src_chunk, tb, None, iter_context)


class Channel:
    """MSCCL++'s DSL concepts: ``Channel(dst_rank, src_rank, channel_type=Channel.memory, tag=None)``
    creates a MemoryChannel or PortChannel. ``tag`` is a label only."""

    memory = ChannelType.memory
    port = ChannelType.port
    sm = ChannelType.memory
    proxy = ChannelType.port
    switch = ChannelType.switch

    def __new__(cls, dst_rank, src_rank, channel_type=ChannelType.memory, tag=None):
        try:
            kind = ChannelType.parse(channel_type)
        except ValueError as error:
            raise DSLError(str(error), user_location()) from None
        if kind is ChannelType.memory:
            return MemoryChannel(dst_rank, src_rank)
        if kind is ChannelType.port:
            return PortChannel(dst_rank, src_rank)
        raise DSLError("Channel(...) makes memory or port channels; use SwitchChannel(rank_list, buffer_type)", user_location())


class SwitchChannel:
    """NVLS multicast over one buffer (``buffer_type``) of every rank in ``rank_list``.

    ``at_rank(r).reduce(...)`` / ``.broadcast(...)`` / ``.broadcast_packets(...)`` run on rank r.
    Also spelled as in MSCCL++'s DSL documents: ``buffer=`` for buffer_type, ``rank_list=[]`` for all
    ranks, ``tag=`` (a label), and the group_* methods (docs/dsl-compiler.md).
    """

    def __init__(self, rank_list=None, buffer_type=None, buffer=None, tag=None):
        program = get_program()
        program.check_writable()
        if buffer_type is None:
            buffer_type = buffer if buffer is not None else BufferType.input
        try:
            self.buffer_type = BufferType.parse(buffer_type)
        except ValueError as error:
            raise DSLError(str(error), user_location()) from None
        ranks = list(rank_list) if rank_list else list(range(program.num_ranks))
        for rank in ranks:
            _check_rank(program, rank, "switch channel")
        if len(set(ranks)) != len(ranks):
            raise DSLError(f"switch channel rank list {ranks} names a rank twice", user_location())
        self.rank_list = ranks
        self.rank_group = RankGroup(len(ranks), ranks)
        self.tag = tag
        self.channel_type = ChannelType.switch
        self.channel_ids = {r: program.rank_state(r).add_switch_channel(self.buffer_type.value, ranks) for r in ranks}

    def at_rank(self, rank):
        rank = getattr(rank, "rank", rank)
        if rank not in self.channel_ids:
            raise DSLError(f"rank {rank} is not in this switch channel's group {self.rank_list}", user_location())
        return SwitchChannelRankView(self, rank)

    # MSCCL++ form: the executing rank first.
    def reduce(self, rank, buffer_offset, size, dst_chunk, tb, reduce_op=ReduceOperationType.sum):
        self.at_rank(rank).reduce(buffer_offset, size, dst_chunk, tb, reduce_op)

    def broadcast(self, rank, src_chunk, buffer_offset, size, tb):
        self.at_rank(rank).broadcast(src_chunk, buffer_offset, size, tb)

    def broadcast_packets(self, rank, src_chunk, buffer_offset, size, tb):
        self.at_rank(rank).broadcast_packets(src_chunk, buffer_offset, size, tb)

    # The DSL documents' spellings name no rank. The call runs on the latest
    # Rank(...) when it is in the group, else on the named chunk's rank.
    # Else it runs on the group rank owning the range in equal blocks:
    # rank_list[i] owns chunks [i*C/g, (i+1)*C/g) of a C-chunk buffer.
    # Each call runs once, on one rank, so the result is the same.
    # The block owner spreads an NVLS allreduce over the group, as MSCCL++'s do.
    def _current_view(self, buffer_offset, chunk=None):
        program = get_program()
        rank = program.last_rank
        if rank not in self.channel_ids:
            if chunk is not None and getattr(chunk, "rank", None) in self.channel_ids:
                rank = chunk.rank
            else:
                rank = self._owner(program, buffer_offset)
        return SwitchChannelRankView(self, rank)

    def _owner(self, program, buffer_offset):
        group = self.rank_list
        chunks = program.rank_state(group[0]).chunks(self.buffer_type.value)
        if type(buffer_offset) is not int or buffer_offset < 0 or chunks <= 0:
            return group[0]  # the range check of the call itself reports a bad offset
        return group[min(buffer_offset * len(group) // chunks, len(group) - 1)]

    def group_load_reduce(
        self, buffer_offset, size=1, dst_chunk=None, tb=0, reduce_op=ReduceOperationType.sum, op=None, iter_context=None
    ):
        view = self._current_view(buffer_offset, dst_chunk)
        view.group_load_reduce(buffer_offset, size, dst_chunk, tb, reduce_op, op, iter_context)

    def group_store(self, *args, **kwargs):
        if args and isinstance(args[0], Chunk):  # the at_rank form: (src_chunk, buffer_offset, size, tb)
            offset = args[1] if len(args) > 1 else kwargs.get("buffer_offset", 0)
            self._current_view(offset, args[0]).group_store(*args, **kwargs)
        else:
            offset = args[0] if args else kwargs.get("buffer_offset", 0)
            view = self._current_view(offset, kwargs.get("src_chunk"))
            _group_store_by_offset(view, *args, **kwargs)

    def group_reduce(self, buffer_offset, size=1, dst_chunk=None, tb=0, reduce_op=ReduceOperationType.sum, op=None, iter_context=None):
        self.group_load_reduce(buffer_offset, size, dst_chunk, tb, reduce_op, op, iter_context)

    group_broadcast = group_store

    @classmethod
    def reset(cls):
        """MSCCL++'s counter reset: see internal/state.reset_ids."""
        reset_ids(cls.__name__)


def _group_store_by_offset(view, buffer_offset, size=1, tb=0, src_chunk=None, iter_context=None):
    """DSL guide: ``chan.group_store(offset, size=1, tb=1)`` stores the rank's own chunk at offset."""
    view.group_store(src_chunk, buffer_offset, size, tb, iter_context)


class SwitchChannelRankView:
    """A switch channel as seen by one rank of its group."""

    def __init__(self, channel, rank):
        self._channel = channel
        self._rank = rank

    def _check_range(self, program, what, buffer_offset, size):
        if type(buffer_offset) is not int or type(size) is not int or buffer_offset < 0 or size <= 0:
            raise DSLError(f"{what}: buffer_offset and size must be integers >= 0 and > 0", user_location())
        buffer = self._channel.buffer_type
        ranks = self._channel.rank_list
        location = user_location()

        def check():
            for rank in ranks:
                have = program.rank_state(rank).chunks(buffer.value)
                if have < buffer_offset + size:
                    raise DSLError(
                        f"{what}: [{buffer_offset}:{buffer_offset + size}] is out of bounds for rank {rank}'s "
                        f"{buffer.name} buffer, which has {have} chunk(s)",
                        location,
                    )

        if buffer is _SCRATCH:
            program.deferred_checks.append(check)  # scratch may still grow: check when compiling
        else:
            check()

    def _local_chunk(self, what, role, chunk, size):
        if type(chunk) is not Chunk or chunk.rank != self._rank:
            got = chunk.rank if isinstance(chunk, Chunk) else repr(chunk)
            raise DSLError(f"{what} at rank {self._rank}: the {role} chunk must be on rank {self._rank}, got rank {got}", user_location())
        if chunk.size != size:
            raise DSLError(f"{what}: {role} chunk has {chunk.size} chunk(s) but size is {size}", user_location())

    def _channel_index(self, program, tb):
        if type(tb) is not int or tb < 0:
            raise DSLError(f"tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        return program.rank_state(self._rank).tb(tb).channel("switch", self._channel.channel_ids[self._rank])

    def _own_chunk(self, offset, size):
        """This rank's chunk of the channel's buffer at offset: the group_* forms' implied operand."""
        return Chunk(self._rank, self._channel.buffer_type, offset, size)

    def reduce(self, buffer_offset, size, dst_chunk, tb, reduce_op=ReduceOperationType.sum, op=None, iter_context=None):
        """dst_chunk = (+) over the group of [buffer_offset, buffer_offset+size) of the channel's buffer."""
        program = get_program()
        check_iter_context(program, iter_context)
        self._check_range(program, "switch reduce", buffer_offset, size)
        self._local_chunk("switch reduce", "dst", dst_chunk, size)
        value = reduce_op_value(reduce_op, op)
        local = self._channel_index(program, tb)
        dst = (dst_chunk.buffer.value, dst_chunk.index, dst_chunk.size)
        op_ = GroupLoadReduce(self._channel.buffer_type.value, buffer_offset, size, dst, self._rank, [local], value)
        program.add_op(self._rank, tb, op_)

    def broadcast(self, src_chunk, buffer_offset, size, tb, iter_context=None):
        """Stores src_chunk to [buffer_offset, buffer_offset+size) of the channel's buffer on every group rank."""
        self._store("gstore", "switch broadcast", src_chunk, buffer_offset, size, tb, iter_context)

    def broadcast_packets(self, src_chunk, buffer_offset, size, tb, iter_context=None):
        """broadcast of LL packets (src in scratch; the channel's buffer must be scratch)."""
        program = get_program()
        require_packets(program, "broadcast_packets")
        if isinstance(src_chunk, Chunk):
            require_scratch(src_chunk, "broadcast_packets", "src")
        if self._channel.buffer_type is not _SCRATCH:
            raise DSLError(
                "broadcast_packets: the switch channel must bind scratch buffers (packets live only in scratch), "
                f"but it binds {self._channel.buffer_type.name} buffers",
                user_location(),
            )
        self._store("gstorepkt", "broadcast_packets", src_chunk, buffer_offset, size, tb, iter_context)

    def _store(self, name, what, src_chunk, buffer_offset, size, tb, iter_context):
        program = get_program()
        check_iter_context(program, iter_context)
        self._check_range(program, what, buffer_offset, size)
        self._local_chunk(what, "src", src_chunk, size)
        local = self._channel_index(program, tb)
        src = (src_chunk.buffer.value, src_chunk.index, src_chunk.size)
        op_ = GroupStore(name, src, self._rank, self._channel.buffer_type.value, buffer_offset, size, [local])
        program.add_op(self._rank, tb, op_)

    # The spellings of MSCCL++'s DSL guide.
    def group_load_reduce(
        self, buffer_offset, size=1, dst_chunk=None, tb=0, reduce_op=ReduceOperationType.sum, op=None, iter_context=None
    ):
        if dst_chunk is None:
            dst_chunk = self._own_chunk(buffer_offset, size)
        self.reduce(buffer_offset, size, dst_chunk, tb, reduce_op, op, iter_context)

    def group_store(self, src_chunk=None, buffer_offset=0, size=1, tb=0, iter_context=None):
        if src_chunk is None:
            src_chunk = self._own_chunk(buffer_offset, size)
        self.broadcast(src_chunk, buffer_offset, size, tb, iter_context)

    group_reduce = group_load_reduce
    group_broadcast = group_store


SwitchChannel.SwitchChannelRankView = SwitchChannelRankView  # MSCCL++ nests the class
