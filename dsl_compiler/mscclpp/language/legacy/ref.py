"""MSCCLPPLang chunk references: ``chunk(rank, buffer, index, size)`` and its operations.

A Ref names ``size`` chunks of one rank's input, output or scratch buffer. Its operations name the
peer rank and the peer's (buffer, index) instead of a channel, and the threadblock as ``sendtb``
(the op runs on the sender) or ``recvtb`` (on the receiver). Each call is checked here, so a
mistake is reported at the user's line, then recorded for lower.py. The semantics are MSCCL++
0.5-0.6's (docs/dsl-compiler.md, "MSCCLPPLang").
"""
from ..errors import DSLError, user_location, user_site
from ..types import BufferType, ChannelType, DataFormat
from .lower import LegacyOp

__all__ = ["Ref", "RankRef", "DataFormat"]

_SCRATCH = BufferType.scratch


def _fail(message):
    raise DSLError(message, user_location())


def _channel_type(value, what, allowed):
    try:
        kind = ChannelType.parse(value)
    except ValueError as error:
        _fail(f"{what}: {error}")
    if kind not in allowed:
        names = " or ".join(f"ChannelType.{k.name}" for k in allowed)
        _fail(f"{what} works over {names}, not ChannelType.{kind.name}")
    return kind


def _tb(value, what, role):
    if type(value) is not int or value < 0:
        if value == -1:
            _fail(f"{what} needs {role}= (a threadblock id): this compiler, like MSCCLPPLang's, assigns none itself")
        _fail(f"{what}: {role} must be a non-negative integer threadblock id, got {value!r}")
    return value


_PEER_CHANNELS = (ChannelType.memory, ChannelType.port)


def _buffer_argument(what, buffer, chunk):
    """The destination buffer, given as ``buffer=`` (MSCCL++) or ``chunk=`` (MSCCLPPLang's API listing)."""
    if chunk is not None:
        if buffer is not None:
            _fail(f"{what}: give the buffer once, as buffer= or as chunk=")
        return chunk
    return buffer


class Ref:
    """``size`` chunks at ``index`` of rank ``rank``'s ``buffer`` (in place, already moved to the
    buffer it aliases: see layout.py)."""

    __slots__ = ("rank", "buffer", "index", "size", "prog")

    def __init__(self, rank, buffer, index, size, prog):
        self.rank = rank
        self.buffer = buffer
        self.index = index
        self.size = size
        self.prog = prog

    def __repr__(self):
        return f"Ref(Buffer:{self.buffer}, Index:{self.index}, Size:{self.size}, Rank:{self.rank})"

    def __eq__(self, other):
        return (
            isinstance(other, Ref)
            and (self.rank, self.buffer, self.index, self.size) == (other.rank, other.buffer, other.index, other.size)
            and self.prog is other.prog
        )

    def __hash__(self):
        return hash((self.rank, self.buffer, self.index, self.size))

    # ---- references ----

    def _end(self):
        return self.index + self.size

    def split(self, num):
        """``num`` equal consecutive references covering this one."""
        if type(num) is not int or num <= 0 or self.size % num:
            _fail(f"split: cannot split a reference of {self.size} chunk(s) into {num!r} equal parts")
        size = self.size // num
        return [Ref(self.rank, self.buffer, self.index + i * size, size, self.prog) for i in range(num)]

    def group(self, other):
        """The smallest reference covering this one and ``other`` (same rank and buffer)."""
        if not isinstance(other, Ref) or other.rank != self.rank or other.buffer is not self.buffer:
            _fail(f"group: {other!r} is not on rank {self.rank}'s {self.buffer.name} buffer like {self!r}")
        start = min(self.index, other.index)
        return Ref(self.rank, self.buffer, start, max(self._end(), other._end()) - start, self.prog)

    def _program(self):
        return self.prog.legacy_front_end()

    def _target(self, what, rank, buffer, index, moves_data=True):
        """The peer reference named by (rank, buffer, index), MSCCLPPLang's defaults applied."""
        front = self._program()
        front.check_rank(rank, what)
        if buffer is None:
            if index != -1:
                _fail(f"{what}: index={index} needs buffer= as well")
            buffer, index = self.buffer, self.index
        else:
            buffer = front.buffer_type(buffer, what)
            if index == -1:
                if buffer is not _SCRATCH:
                    _fail(f"{what}: index=-1 (append) exists only for the scratch buffer; give index= for {buffer.name}")
                index = front.scratch_top[rank]
        return front.ref(rank, buffer, index, self.size, what, moves_data)

    def _record(self, kind, tb, local=None, remote=None, key=None, extra=None):
        op = LegacyOp(kind, self.rank, tb, user_site(2), local, remote, key, extra)
        self._program().ops.append(op)
        return op

    @staticmethod
    def _where(ref):
        return (ref.rank, ref.buffer.value, ref.index, ref.size)

    # ---- peer operations ----

    def put(self, dst, buffer=None, index=-1, sendtb=-1, chan_type=ChannelType.memory, *, chunk=None):
        """Copies this chunk into rank ``dst``'s (buffer, index); returns the destination reference.
        (``chunk=`` is MSCCLPPLang's listed name for ``buffer``, here and in get and put_packet.)"""
        buffer = _buffer_argument("put", buffer, chunk)
        ctype = _channel_type(chan_type, "put", _PEER_CHANNELS)
        target = self._peer_target("put", dst, buffer, index)
        tb = _tb(sendtb, "put", "sendtb")
        self._record("put", tb, self._where(self), self._where(target), self._key(target, ctype))
        self._program().wrote(target)
        return target

    def put_packet(
        self,
        dst,
        buffer=None,
        index=-1,
        sendtb=-1,
        src_format=DataFormat.raw,
        chan_type=ChannelType.memory,
        temp_buffer=None,
        temp_buffer_index=-1,
        *,
        chunk=None,
    ):
        """Sends this chunk as LL packets into rank ``dst``'s scratch; returns the destination reference.

        ``src_format=DataFormat.packet``: this chunk already holds packets (in scratch) and they are
        forwarded. Over a port channel a plain source is first packed into this rank's
        ``temp_buffer`` at ``temp_buffer_index`` (the proxy copies bytes; it cannot pack)."""
        what = "put_packet"
        buffer = _buffer_argument(what, buffer, chunk)
        front = self._program()
        front.require_packets(what)
        ctype = _channel_type(chan_type, what, _PEER_CHANNELS)
        target = self._peer_target(what, dst, buffer, index)
        if target.buffer is not _SCRATCH:
            _fail(f"{what}: the destination must be rank {target.rank}'s scratch buffer (packets live only in scratch)")
        tb = _tb(sendtb, what, "sendtb")
        try:
            src_format = DataFormat(getattr(src_format, "value", src_format))
        except ValueError:
            _fail(f"{what}: src_format must be DataFormat.raw or DataFormat.packet, got {src_format!r}")
        source = self
        kind = "ppkt"
        if src_format is DataFormat.packet:
            if self.buffer is not _SCRATCH:
                _fail(f"{what}(src_format=DataFormat.packet): the source must be in scratch, where packets live")
            kind = "rppkt"
        elif ctype is ChannelType.port:
            if temp_buffer is None:
                _fail(f"{what} over a port channel packs the data first: give temp_buffer= (and temp_buffer_index=)")
            temp = front.buffer_type(temp_buffer, what)
            if temp is not _SCRATCH:
                _fail(f"{what}: temp_buffer must be the scratch buffer (packets live only in scratch)")
            at = front.scratch_top[self.rank] if temp_buffer_index == -1 else temp_buffer_index
            source = front.ref(self.rank, temp, at, self.size, what)
            self._record("cpkt", tb, extra=((self.buffer.value, self.index, self.size), (temp.value, source.index, self.size)))
            front.wrote(source)
        self._record(kind, tb, self._where(source), self._where(target), source._key(target, ctype))
        front.wrote(target)
        return target

    packet_put = put_packet  # the name MSCCLPPLang's API listing uses

    def get(self, src, buffer=None, index=-1, recvtb=-1, chan_type=ChannelType.memory, *, chunk=None):
        """Copies rank ``src``'s (buffer, index) into this chunk (reads the peer's memory)."""
        buffer = _buffer_argument("get", buffer, chunk)
        _channel_type(chan_type, "get", (ChannelType.memory,))
        source = self._peer_target("get", src, buffer, index)
        tb = _tb(recvtb, "get", "recvtb")
        self._record("get", tb, self._where(self), self._where(source), self._key(source, ChannelType.memory))
        self._program().wrote(self)

    def signal(self, dst, buffer=None, index=-1, sendtb=-1, chan_type=ChannelType.memory):
        """Tells rank ``dst`` that this chunk is ready (pairs with its ``wait`` on this rank)."""
        ctype = _channel_type(chan_type, "signal", _PEER_CHANNELS)
        target = self._peer_target("signal", dst, buffer, index)
        tb = _tb(sendtb, "signal", "sendtb")
        self._record("signal", tb, key=self._key(target, ctype))

    def wait(self, src, buffer=None, index=-1, recvtb=-1, chan_type=ChannelType.memory):
        """Waits for rank ``src``'s signal about (buffer, index) (its ``signal`` toward this chunk)."""
        ctype = _channel_type(chan_type, "wait", _PEER_CHANNELS)
        source = self._peer_target("wait", src, buffer, index, moves_data=False)
        tb = _tb(recvtb, "wait", "recvtb")
        # A wait's legacy channel is keyed (signaller's buffer, waiter's buffer),
        # the same key as the signal on the other side.
        self._record("wait", tb, key=(source.buffer.value, self.buffer.value, ctype.value, source.rank))

    def flush(self, dst, buffer=None, index=-1, sendtb=-1, chan_type=ChannelType.port):
        """Waits until the proxy completed this threadblock's earlier requests to rank ``dst``."""
        ctype = _channel_type(chan_type, "flush", (ChannelType.port,))
        target = self._peer_target("flush", dst, buffer, index)
        tb = _tb(sendtb, "flush", "sendtb")
        self._record("flush", tb, key=self._key(target, ctype))

    def _peer_target(self, what, rank, buffer, index, moves_data=True):
        target = self._target(what, rank, buffer, index, moves_data)
        if target.rank == self.rank:
            _fail(f"{what}: rank {rank} is this chunk's own rank; {what} goes to another rank (use copy locally)")
        return target

    def _key(self, remote, ctype):
        return (self.buffer.value, remote.buffer.value, ctype.value, remote.rank)

    # ---- local operations ----

    def copy(self, dst, buffer=None, index=-1, sendtb=-1):
        """Copies this chunk to (buffer, index) of the same rank; returns the destination reference."""
        return self._copy("copy", "copy", dst, buffer, index, sendtb)

    def copy_packet(self, dst, buffer=None, index=-1, sendtb=-1):
        """Unpacks the LL packets of this chunk (in scratch) into (buffer, index) of the same rank."""
        self._program().require_packets("copy_packet")
        if self.buffer is not _SCRATCH:
            _fail("copy_packet unpacks LL packets, which live only in scratch: this chunk is in "
                  f"rank {self.rank}'s {self.buffer.name} buffer")
        return self._copy("upkt", "copy_packet", dst, buffer, index, sendtb)

    def _copy(self, kind, what, dst, buffer, index, sendtb):
        target = self._target(what, dst, buffer, index)
        if target.rank != self.rank:
            _fail(f"{what} stays on one rank: this chunk is on rank {self.rank}, the destination on rank {target.rank}")
        tb = _tb(sendtb, what, "sendtb")
        if target == self and kind == "copy":
            return target  # MSCCLPPLang skips a copy onto itself (easy to write in place)
        self._record(kind, tb, extra=((self.buffer.value, self.index, self.size), (target.buffer.value, target.index, target.size)))
        self._program().wrote(target)
        return target

    def reduce(self, other_chunkref, recvtb=-1, channel_type=ChannelType.memory):
        """This chunk += ``other_chunkref`` (another rank's chunk is read through a memory channel)."""
        other = self._operand("reduce", other_chunkref)
        tb = _tb(recvtb, "reduce", "recvtb")
        if other.rank == self.rank:
            self._record("re", tb, self._where(self), extra=(other.buffer.value, other.index, other.size))
        else:
            ctype = _channel_type(channel_type, "reduce of another rank's chunk", (ChannelType.memory,))
            self._record("rre", tb, self._where(self), self._where(other), self._key(other, ctype))
        return self

    def reduce_packet(self, other_chunkref, recvtb=-1):
        """This chunk += the LL packets of ``other_chunkref`` (in this rank's scratch)."""
        self._program().require_packets("reduce_packet")
        other = self._operand("reduce_packet", other_chunkref)
        if other.rank != self.rank:
            _fail(f"reduce_packet reduces this rank's packets: the other chunk is on rank {other.rank}, not {self.rank}")
        if other.buffer is not _SCRATCH:
            _fail("reduce_packet: the other chunk must be in scratch (packets live only in scratch)")
        tb = _tb(recvtb, "reduce_packet", "recvtb")
        self._record("repkt", tb, self._where(self), extra=(other.buffer.value, other.index, other.size))
        return self

    def _operand(self, what, other):
        if not isinstance(other, Ref) or other.prog is not self.prog:
            _fail(f"{what}: the other chunk must be a chunk(...) reference of this program, got {other!r}")
        if other.size != self.size:
            _fail(f"{what}: chunk sizes differ ({other.size} vs {self.size})")
        return other

    # ---- NVLS group operations ----

    def group_load_reduce(self, other_chunkrefs, recvtb=-1, chan_type=ChannelType.nvls):
        """This chunk = the sum of this (buffer, index) over this rank and the other chunks' ranks."""
        what = "group_load_reduce"
        _channel_type(chan_type, what, (ChannelType.switch,))
        others = list(other_chunkrefs) if isinstance(other_chunkrefs, (list, tuple)) else None
        if not others:
            _fail(f"{what} needs a non-empty list of the other ranks' chunks")
        for other in others:
            self._operand(what, other)
            if other.buffer is not self.buffer or other.index != self.index:
                _fail(f"{what}: every chunk has this chunk's buffer and index ({self.buffer.name} {self.index}), "
                      f"got {other.buffer.name} {other.index} on rank {other.rank}")
        ranks = self._group(what, [other.rank for other in others])
        tb = _tb(recvtb, what, "recvtb")
        self._record("glre", tb, self._where(self), extra=(self.buffer.value, ranks))
        return self

    def group_store(self, dsts, index=-1, buffer=None, sendtb=-1, chan_type=ChannelType.nvls):
        """Stores this chunk to its (buffer, index) on every rank of ``dsts`` (and this one)."""
        what = "group_store"
        _channel_type(chan_type, what, (ChannelType.switch,))
        if index != -1 and index != self.index:
            _fail(f"{what}: index must be this chunk's ({self.index}), got {index}")
        if buffer is not None and self._program().buffer_type(buffer, what) is not self.buffer:
            _fail(f"{what}: buffer must be this chunk's ({self.buffer.name})")
        if not isinstance(dsts, (list, tuple)) or not dsts:
            _fail(f"{what} needs a non-empty list of destination ranks")
        front = self._program()
        for rank in dsts:
            front.check_rank(rank, what)
        ranks = self._group(what, list(dsts))
        tb = _tb(sendtb, what, "sendtb")
        self._record("gstore", tb, self._where(self), extra=(self.buffer.value, ranks))
        for rank in ranks:
            front.wrote(Ref(rank, self.buffer, self.index, self.size, self.prog))

    def _group(self, what, ranks):
        if self.rank in ranks or len(set(ranks)) != len(ranks):
            _fail(f"{what}: the other ranks {ranks} must be distinct and exclude this chunk's rank {self.rank}")
        per_node = self._program().ranks_per_node
        for rank in ranks:
            if rank // per_node != self.rank // per_node:
                _fail(f"{what}: rank {rank} is on another node than rank {self.rank} ({per_node} ranks per node); "
                      "NVLS groups stay within a node")
        return tuple(sorted(ranks + [self.rank]))

    # ---- symbolic inspection (MSCCLPPLang tracked chunks while the program was written) ----

    def _unsupported(self, name):
        _fail(f"{name}: this compiler tracks chunks when it checks the compiled plan (Check()), not while the "
              "program is written; use Check() to verify where the data ends")

    def get_origin_index(self, index=0):
        self._unsupported("get_origin_index")

    def get_origin_rank(self, index=0):
        self._unsupported("get_origin_rank")

    def get_dst_index(self, index=0):
        self._unsupported("get_dst_index")

    def get_dst_rank(self, index=0):
        self._unsupported("get_dst_rank")

    def print_chunk_info(self, index=0):
        self._unsupported("print_chunk_info")


class RankRef:
    """``rank(r)``: operations of a whole rank (MSCCLPPLang has one: barrier)."""

    __slots__ = ("rank", "prog")

    def __init__(self, rank, prog):
        self.rank = rank
        self.prog = prog

    def __repr__(self):
        return f"RankRef(rank={self.rank})"

    def barrier(self, tb_list):
        """Synchronises threadblocks ``tb_list`` of this rank (one threadblock: a block-wide nop)."""
        tbs = list(tb_list) if isinstance(tb_list, (list, tuple)) else None
        if not tbs:
            _fail(f"barrier needs a non-empty list of threadblocks, got {tb_list!r}")
        for tb in tbs:
            _tb(tb, "barrier", "tb_list")
        if len(set(tbs)) != len(tbs):
            _fail(f"barrier: threadblock list {tbs} names a threadblock twice")
        front = self.prog.legacy_front_end()
        front.ops.append(LegacyOp("barrier", self.rank, tbs[0], user_site(2), extra=tbs))
