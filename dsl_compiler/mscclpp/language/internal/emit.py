"""Plan JSON text, written directly (not through json.dumps, which is 4-5x slower on big plans).

Instance replication happens here, while writing: instance k of n gets threadblock t*n+k, channel
and semaphore and barrier ids c*n+k, and buffer indexes moved by the replication policy. The
per-threadblock passes therefore run once, on the program as written, not once per instance.
"""
import json

from . import locations, ops

FORMAT_VERSION = 1


class Shift:
    """Index arithmetic for instance ``k`` of ``n`` on one rank.

    ``own`` and ``counts[peer]`` are the chunk counts per buffer before replication; only the
    ``none`` policy (contiguous blocks per instance) needs them.
    """

    def __init__(self, k, n, interleaved, own, counts):
        self.k = k
        self.n = n
        self.own = own
        self.counts = counts
        self.interleaved = interleaved
        if interleaved:
            self.local = self._local_interleaved
            self.remote = self._remote_interleaved
        else:
            self.local = self._local_blocked
            self.remote = self._remote_blocked

    def _local_interleaved(self, buffer, index, size):
        return index * self.n + self.k * size

    def _remote_interleaved(self, peer, buffer, index, size):
        return index * self.n + self.k * size

    def _local_blocked(self, buffer, index, size):
        return index + self.k * self.own[buffer]

    def _remote_blocked(self, peer, buffer, index, size):
        return index + self.k * self.counts[peer][buffer]

    def resource(self, rid):
        return rid * self.n + self.k


def _emit_located(op, out, shift, table):
    """op.emit, plus its "source" key (and its body's, for a pipeline) when it has a location."""
    if isinstance(op, ops.Pipeline):
        inner = []
        for body_op in op.ops:
            _emit_located(body_op, inner, shift, table)
        text = '{"name":"pipeline","iter_context":{"unit_size":%d,"num_chunks":%d},"ops":[%s]}' % (
            op.unit_size,
            op.num_chunks,
            ",".join(inner),
        )
    else:
        start = len(out)
        op.emit(out, shift)
        if len(out) != start + 1:
            return
        text = out.pop()
    where = table.of(op)
    if where is not None:
        text = text[:-1] + ',"source":%s}' % json.dumps(where)
    out.append(text)


def _tb_json(tb_id, tb, shift, n, k):
    ops = []
    table = locations.ACTIVE
    for op in tb.ops:
        if table is None:
            op.emit(ops, shift)
        else:
            _emit_located(op, ops, shift, table)
    channels = ",".join(
        '{"channel_type":"%s","channel_ids":[%s]}'
        % (ctype, ",".join([str(c * n + k) for c in ids]) if n > 1 else ",".join(map(str, ids)))
        for ctype, ids in tb.channels.items()
    )
    refs = ",".join(
        '{"access_channel_type":"%s","remote_buffer_ids":[%s]}' % (ctype, ",".join(map(str, ids)))
        for ctype, ids in tb.remote_buffers.items()
    )
    return '{"id":%d,"ops":[%s],"channels":[%s],"remote_buffer_refs":[%s]}' % (tb_id, ",".join(ops), channels, refs)


def _rank_json(state, n, interleaved, counts):
    copies = range(n)
    tbs = []
    for t, tb in enumerate(state.threadblocks):
        for k in range(n):
            shift = Shift(k, n, interleaved, counts[state.rank], counts) if n > 1 else None
            tbs.append(_tb_json(t * n + k, tb, shift, n, k))
    channels = [
        '{"channel_type":"%s","connected_to":[%s]}' % (ctype, ",".join([p for p in map(str, peers) for _ in copies]))
        for ctype, peers in state.channels.items()
    ]
    for buffer, ranks in state.switch_channels:
        text = '{"channel_type":"switch","buffer_type":"%s","rank_groups":[{"size":%d,"ranks":[%s]}]}' % (
            buffer,
            len(ranks),
            ",".join(map(str, ranks)),
        )
        channels.extend([text] * n)
    remote = ",".join(
        '{"rank":%d,"type":"%s","access_channel_types":[%s]}' % (peer, buffer, ",".join('"%s"' % a for a in access))
        for (peer, buffer), (_, access) in state.remote_buffers.items()
    )
    semaphores = ",".join('{"init_value":%d}' % v for v in state.semaphores for _ in range(n))
    return '{"id":%d,"input_chunks":%d,"output_chunks":%d,"scratch_chunks":%d,"threadblocks":[%s],"channels":[%s],"remote_buffers":[%s],"semaphores":[%s]}' % (
        state.rank,
        state.input_chunks * n,
        state.output_chunks * n,
        state.scratch_chunks * n,
        ",".join(tbs),
        ",".join(channels),
        remote,
        semaphores,
    )


def plan_json(program, ranks):
    """The whole plan as compact JSON text."""
    n = program.instances
    interleaved = program.replication_policy.value == "interleaved"
    counts = {s.rank: {"i": s.input_chunks, "o": s.output_chunks, "s": s.scratch_chunks} for s in ranks}
    try:
        gpus = ",".join([_rank_json(state, n, interleaved, counts) for state in ranks])
    finally:
        for cache in ops.TEXT_CACHES:
            cache.clear()
    tail = ',"format_version":%d' % FORMAT_VERSION
    if program.tags:
        tail += ',"tags":%s' % json.dumps(list(program.tags), separators=(",", ":"))
    root = getattr(program.collective, "root", None)
    if root is not None:
        tail += ',"root":%d' % root
    return (
        '{"name":%s,"collective":%s,"protocol":"%s","inplace":%s,"reuse_resources":%s,"gpus":[%s],'
        '"num_threads_per_block":%d,"use_double_scratch_buffer":%s,"buffer_alignment":%d,'
        '"min_message_size":%d,"max_message_size":%d%s}'
        % (
            json.dumps(program.name),
            json.dumps(program.collective.name),
            program.protocol,
            _bool(program.collective.inplace),
            _bool(program.reuse_resources),
            gpus,
            program.num_threads_per_block,
            _bool(program.use_double_scratch_buffer),
            program.buffer_alignment,
            program.min_message_size,
            program.max_message_size,
            tail,
        )
    )


def _bool(value):
    return "true" if value else "false"
