"""Channels: MemoryChannel and PortChannel connect a rank to a peer; SwitchChannel binds one buffer
of a group of ranks for NVLS multicast. Each constructor call creates a new channel.

A channel object belongs to its ``src_rank``: every op on it runs there, and its chunks must be on
src_rank (local side) and dst_rank (remote side).
"""
from sys import _getframe

from .errors import _LANGUAGE_DIR, DSLError, user_location
from .internal import state as _state
from .internal.ops import GroupLoadReduce, GroupStore, Put, Get, Reduce, SyncOp
from .internal.state import get_program
from .loop import check_iter_context
from .rank import reduce_op_value, require_packets, require_scratch, sync_bits
from .thread_block_group import ThreadBlockGroup, threadblocks
from .types import BufferType, ChannelType, Chunk, ReduceOperationType, SyncType

__all__ = [
    "MemoryChannel",
    "PortChannel",
    "SwitchChannel",
    "Channel",
    "ChannelType",
    "SyncType",
    "BufferType",
    "ReduceOperationType",
    "ThreadBlockGroup",
]

_SCRATCH = BufferType.scratch
_BOTH = SyncType.both
_BITS = {t._value_: t.bits for t in SyncType}  # keyed by value: Enum.__hash__ is slow Python code
_SUM = ReduceOperationType.sum


def _check_rank(program, rank, role):
    if type(rank) is not int or not 0 <= rank < program.num_ranks:
        raise DSLError(f"{role} rank {rank!r} is out of range: the program has {program.num_ranks} rank(s)", user_location())


class _PeerChannel:
    """What memory and port channels share: identity, pairing records, signal/wait/put.

    Programs call these methods hundreds of thousands of times, so each channel caches what it
    resolved once: its rank's state and, per threadblock, the threadblock's local channel index and
    remote-buffer indexes (``_slots``).
    """

    channel_type = None  # "memory" or "port"

    def __init__(self, dst_rank, src_rank):
        program = get_program()
        program.check_writable()
        dst_rank = getattr(dst_rank, "rank", dst_rank)
        src_rank = getattr(src_rank, "rank", src_rank)
        _check_rank(program, src_rank, "source")
        _check_rank(program, dst_rank, "destination")
        if dst_rank == src_rank:
            raise DSLError(f"a channel connects two different ranks, got {src_rank} -> {dst_rank}", user_location())
        self.src_rank = src_rank
        self.dst_rank = dst_rank
        self._program = program
        self._state = program.rank_state(src_rank)
        self.channel_id = self._state.add_channel(self.channel_type, dst_rank)
        self._slots = {}  # tb -> [ThreadBlock, local channel index, {buffer char: local remote-buffer index}]
        self._remote_ids = {}  # buffer char -> rank-level remote buffer id
        self._records = None  # (signal locations, wait locations) outside loops

    def __repr__(self):
        return f"{type(self).__name__}(dst_rank={self.dst_rank}, src_rank={self.src_rank}) #{self.channel_id}"

    def _current(self):
        program = _state._active
        if program is not self._program:
            if program is None:
                get_program()  # raises the "no active program" error
            raise DSLError(f"{self!r} belongs to another CollectiveProgram", user_location())
        return program

    def _slot(self, tb):
        if type(tb) is not int or tb < 0:
            raise DSLError(f"tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        block = self._state.tb(tb)
        slot = self._slots[tb] = [block, block.channel(self.channel_type, self.channel_id), {}]
        return slot

    def _remote(self, slot, buffer):
        """The threadblock-local id of the peer's buffer, registering it on first use."""
        local = slot[2].get(buffer)
        if local is None:
            rid = self._remote_ids.get(buffer)
            if rid is None:
                rid = self._remote_ids[buffer] = self._state.remote_buffer(self.dst_rank, buffer, self.channel_type)
            local = slot[2][buffer] = slot[0].remote_buffer(self.channel_type, rid)
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
        frame = _getframe(2)
        while frame.f_code.co_filename.startswith(_LANGUAGE_DIR):
            frame = frame.f_back
        location = (frame.f_code, frame.f_lasti)
        if program.loop_context is None:
            records = self._records
            if records is None:
                records = self._records = program.sync_entry(self.src_rank, self.channel_type, self.channel_id, None)
            records[0 if is_signal else 1].append(location)
        else:
            program.record_sync(self.src_rank, self.channel_type, self.channel_id, is_signal, location)

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
        if program.loop_context is None and program._json is None:
            slot[0].ops.append(op)
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
            local_rb = slot[2].get(dst_buffer)
            if local_rb is None:
                local_rb = self._remote(slot, dst_buffer)
            op = Put(op_name, [src], [(local_rb, dst_chunk.index, size, self.dst_rank, dst_buffer)], [slot[1]], ctype, None)
            if program.loop_context is None and program._json is None:
                slot[0].ops.append(op)
            else:
                program.add_op(self.src_rank, tb, op)
        else:
            for tb_id, tbg in threadblocks(tb, tb_group):
                slot = self._slots.get(tb_id) or self._slot(tb_id)
                remote = (self._remote(slot, dst_buffer), dst_chunk.index, size, self.dst_rank, dst_buffer)
                program.add_op(self.src_rank, tb_id, Put(op_name, [src], [remote], [slot[1]], ctype, tbg))
        if op_name == "pws" or op_name == "pwsf":
            self._record(program, True)

    def put(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Copies src_chunk (on src_rank) to dst_chunk (on dst_rank)."""
        self._put("put", dst_chunk, src_chunk, tb, tb_group, iter_context)

    def put_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Sends src_chunk as LL packets into dst_chunk (the peer's scratch)."""
        self._put("put_packets", dst_chunk, src_chunk, tb, tb_group, iter_context)

    def read_put_packets(self, dst_chunk, src_chunk, tb=None, tb_group=None, iter_context=None):
        """Forwards LL packets from src_chunk (local scratch) to dst_chunk (the peer's scratch)."""
        self._put("read_put_packets", dst_chunk, src_chunk, tb, tb_group, iter_context)

    # Names of earlier MSCCL++ releases.
    put_packet = put_packets
    read_put_packet = read_put_packets


_PUT_OP_NAMES = {
    "put": "put",
    "put_packets": "ppkt",
    "read_put_packets": "rppkt",
    "put_with_signal": "pws",
    "put_with_signal_and_flush": "pwsf",
}


class MemoryChannel(_PeerChannel):
    """Peer-to-peer through mapped memory (NVLink, PCIe): put, get, reduce, signal/wait, packets."""

    channel_type = "memory"

    def signal(self, tb, data_sync=SyncType.both, relaxed=False, sync=None, iter_context=None):
        """Increments the peer's counter for this channel (relaxed: no memory ordering)."""
        self._sync_op("rlxsignal" if relaxed else "signal", tb, data_sync, sync, iter_context, True)

    def wait(self, tb, data_sync=SyncType.both, relaxed=False, sync=None, iter_context=None):
        """Waits for the peer's signal on this channel (relaxed: no memory ordering)."""
        self._sync_op("rlxwait" if relaxed else "wait", tb, data_sync, sync, iter_context, False)

    def relaxedSignal(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):  # noqa: N802 (seed 001)
        self.signal(tb, data_sync, True, sync, iter_context)

    def relaxedWait(self, tb, data_sync=SyncType.both, sync=None, iter_context=None):  # noqa: N802 (seed 001)
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

    def signal(self, tb, data_sync=SyncType.both, sync=None, iter_context=None, relaxed=False):
        if relaxed:
            raise DSLError("relaxed signal exists only on memory channels", user_location())
        self._sync_op("signal", tb, data_sync, sync, iter_context, True)

    def wait(self, tb, data_sync=SyncType.both, sync=None, iter_context=None, relaxed=False):
        if relaxed:
            raise DSLError("relaxed wait exists only on memory channels", user_location())
        self._sync_op("wait", tb, data_sync, sync, iter_context, False)

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
    """Seed spelling: ``Channel(dst_rank, src_rank, channel_type=Channel.memory, tag=None)`` creates a
    MemoryChannel or PortChannel. ``tag`` is a label only."""

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
    Seed spellings: ``buffer=`` for buffer_type, ``rank_list=[]`` for all ranks, ``tag=`` (label),
    and the group_* methods (see docs/dsl-compiler.md).
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

    # Seed spellings without a rank: they run on the rank of the latest Rank(...) created in the
    # program when it is in the group, else on the group's only rank.
    def _current_view(self):
        program = get_program()
        rank = program.last_rank
        if rank not in self.channel_ids:
            if len(self.rank_list) != 1:
                raise DSLError(
                    "this switch-channel call names no rank: use at_rank(r), or create Rank(r) first "
                    "(the call runs on the rank of the latest Rank(...))",
                    user_location(),
                )
            rank = self.rank_list[0]
        return SwitchChannelRankView(self, rank)

    def group_load_reduce(
        self, buffer_offset, size=1, dst_chunk=None, tb=0, reduce_op=ReduceOperationType.sum, op=None, iter_context=None
    ):
        self._current_view().group_load_reduce(buffer_offset, size, dst_chunk, tb, reduce_op, op, iter_context)

    def group_store(self, *args, **kwargs):
        view = self._current_view()
        if args and isinstance(args[0], Chunk):  # the at_rank form: (src_chunk, buffer_offset, size, tb)
            view.group_store(*args, **kwargs)
        else:
            _group_store_by_offset(view, *args, **kwargs)

    def group_reduce(self, buffer_offset, size=1, dst_chunk=None, tb=0, reduce_op=ReduceOperationType.sum, op=None, iter_context=None):
        self.group_load_reduce(buffer_offset, size, dst_chunk, tb, reduce_op, op, iter_context)

    group_broadcast = group_store


def _group_store_by_offset(view, buffer_offset, size=1, tb=0, src_chunk=None, iter_context=None):
    """Seed 001: ``chan.group_store(offset, size=1, tb=1)`` stores the rank's own chunk at offset."""
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
        """This rank's chunk of the channel's buffer at offset: the seed forms' implied operand."""
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

    # Seed 001 spellings.
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
