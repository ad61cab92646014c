"""Which of our programs expresses the algorithm of each plan MSCCL++'s compiler generated.

The plans are MSCCL++'s reference plans (tests/data/reference-plans), listed in its INDEX.tsv.
``CORPUS[file] = (build function, keyword arguments)``. ``WARNED`` lists the plans whose program
our compiler writes with a DSLWarning, and the warning (docs/dsl-compiler.md, "Differences").
``normalize(plan)`` removes what may legitimately differ: key order, our optional keys, the order
of set-like lists, and our extra keys on glre.
"""
import allgather_memory
import allgather_nvls
import allgather_nvls_packets
import allgather_packets
import allgather_packets_forward
import allgather_tbg
import allreduce_allpairs
import allreduce_nvls
import allreduce_packets
import allreduce_packets_single_tb
import allreduce_pipeline
import alltoall
import alltoall_ring
from unit_programs import PROGRAMS as UNIT

CORPUS = {
    "sn_allgather.json": (allgather_memory.build, {"name": "allgather"}),
    "sn_allgather_tbg.json": (allgather_tbg.build, {"name": "allgather_tbg"}),
    "sn_allgather_pkt_8.json": (allgather_packets.build, {"name": "allgather_pkt", "num_gpus": 8}),
    "sn_allgather_pkt_rppkt_8.json": (allgather_packets_forward.build, {"name": "allgather_pkt_rppkt", "num_gpus": 8}),
    "sn_allgather_nvls_zero_copy_8.json": (allgather_nvls.build, {"name": "allgather_nvls_zero_copy", "num_gpus": 8}),
    "sn_allgather_nvls_zero_copy_pkt_8.json": (
        allgather_nvls_packets.build,
        {"name": "allgather_nvls_zero_copy_pkt", "num_gpus": 8},
    ),
    "sn_allreduce_8.json": (allreduce_allpairs.build, {"name": "allreduce", "num_gpus": 8}),
    "sn_allreduce_naivy_8.json": (allreduce_packets_single_tb.build, {"name": "allreduce_naivy", "num_gpus": 8}),
    "sn_allreduce_nvls_zero_copy_8.json": (allreduce_nvls.build, {"name": "allreduce_nvls_zero_copy", "num_gpus": 8}),
    "sn_allreduce_pkt_8.json": (allreduce_packets.build, {"name": "allreduce_pkt", "num_gpus": 8}),
    "sn_allreduce_pipeline.json": (allreduce_pipeline.build, {"name": "allreduce_pipeline"}),
    "sn_alltoall_8.json": (alltoall.build, {"name": "alltoall", "num_gpus": 8}),
    "sn_alltoall_pipeline_8.json": (alltoall.build, {"name": "alltoall_pipeline", "num_gpus": 8, "pipelined": True}),
    "sn_alltoall_ring_8.json": (alltoall_ring.build, {"name": "alltoall_ring", "num_gpus": 8}),
    "sn_alltoall_ring_oop_8.json": (alltoall_ring.build, {"name": "alltoall_ring_oop", "num_gpus": 8, "inplace": False}),
    "sn_alltoall_ring_peers_8.json": (alltoall_ring.build, {"name": "alltoall_ring_peers", "num_gpus": 8, "schedule": "pairs"}),
    "ut_barrier_test.json": (UNIT["barrier_test"], {}),
    "ut_copy_packet_test.json": (UNIT["copy_packets_test"], {}),
    "ut_copy_test.json": (UNIT["copy_test"], {}),
    "ut_flush_fuse_test.json": (UNIT["flush_test"], {"channels": 2}),
    "ut_flush_test.json": (UNIT["flush_test"], {}),
    "ut_get_fuse_test.json": (UNIT["get_test"], {"fused": True}),
    "ut_get_test.json": (UNIT["get_test"], {}),
    "ut_pipeline_test.json": (UNIT["pipeline_test"], {}),
    "ut_put_fuse_test.json": (UNIT["put_test"], {"fused": True}),
    "ut_put_packet_test.json": (UNIT["put_packets_test"], {}),
    "ut_put_test.json": (UNIT["put_test"], {}),
    "ut_put_with_signal_and_flush_test.json": (UNIT["put_with_signal_and_flush_test"], {}),
    "ut_put_with_signal_test.json": (UNIT["put_with_signal_test"], {}),
    "ut_read_put_packet_test.json": (UNIT["read_put_packets_test"], {}),
    "ut_read_reduce_fuse_test.json": (UNIT["read_reduce_test"], {"remote_operands": 2}),
    "ut_read_reduce_send_test.json": (UNIT["read_reduce_test"], {"send": True}),
    "ut_read_reduce_test.json": (UNIT["read_reduce_test"], {}),
    "ut_reduce_copy_packet_test.json": (UNIT["reduce_copy_packets_test"], {}),
    "ut_reduce_copy_send_packet_test.json": (UNIT["reduce_copy_send_packets_test"], {}),
    "ut_reduce_fuse_test.json": (UNIT["reduce_test"], {"operands": 3}),
    "ut_reduce_packets_fuse_test.json": (UNIT["reduce_packets_test"], {"operands": 3}),
    "ut_reduce_packets_test.json": (UNIT["reduce_packets_test"], {}),
    "ut_reduce_send_packet_test.json": (UNIT["reduce_send_packets_test"], {}),
    "ut_reduce_send_test.json": (UNIT["reduce_send_test"], {}),
    "ut_reduce_test.json": (UNIT["reduce_test"], {}),
    "ut_relaxed_signal_wait_test.json": (UNIT["signal_wait_test"], {"relaxed": True}),
    "ut_semaphore.json": (UNIT["semaphore_test"], {}),
    "ut_signal_wait_test.json": (UNIT["signal_wait_test"], {}),
    "ut_switch_broadcast_test.json": (UNIT["switch_broadcast_test"], {}),
    "ut_switch_reduce_test.json": (UNIT["switch_reduce_test"], {}),
    "ut_tbg_copy_test.json": (UNIT["copy_test"], {"group": True}),
    "ut_tbg_reduce_fuse_test.json": (UNIT["reduce_test"], {"operands": 3, "group": True}),
    "ut_tbg_reduce_send_test.json": (UNIT["reduce_send_test"], {"group": True}),
    "ut_tbg_reduce_test.json": (UNIT["reduce_test"], {"group": True}),
    "ut_unpack_packet_test.json": (UNIT["unpack_packets_test"], {}),
}

# These programs signal on channels #0,#1 and wait on #2,#3 of one peer.
# The k-th channel pairs with the peer's k-th, so the plan hangs.
# MSCCL++ checks only the totals per peer, which balance;
# we write the same plan, with a warning.
_UNMATCHED = (
    "signal without a matching wait: rank 0 signals 1 time(s) on its memory channel #0 to rank 1, "
    "but rank 1 waits 0 time(s) on its memory channel #0 from rank 0"
)
WARNED = {
    "ut_signal_wait_fuse_test.json": (UNIT["signal_wait_test"], {"channels_per_peer": 4}, _UNMATCHED),
    "ut_relaxed_signal_wait_fuse_test.json": (
        UNIT["signal_wait_test"],
        {"channels_per_peer": 4, "relaxed": True},
        _UNMATCHED,
    ),
}

_OUR_TOP_LEVEL_KEYS = ("format_version", "tags", "root")
_SET_LIKE_OPS = frozenset(("signal", "wait", "rlxsignal", "rlxwait", "flush"))
# MSCCL++ emits glre with these keys only; we add src_buff and dst_buff.
_REFERENCE_GLRE_KEYS = ("name", "buffer_type", "buffer_offset", "size", "dst_chunk", "channel_ids", "channel_type", "reduce_op")


def _normalize_op(op):
    if op.get("name") in _SET_LIKE_OPS:
        op = dict(op, channel_ids=sorted(op["channel_ids"]))
    elif op.get("name") == "glre":
        op = {k: op[k] for k in _REFERENCE_GLRE_KEYS if k in op}
    elif op.get("name") == "pipeline":
        op = dict(op, ops=[_normalize_op(o) for o in op["ops"]])
    return op


def normalize(plan):
    """A copy of a plan dict in a canonical form for comparison (compare with json sort_keys)."""
    plan = {k: v for k, v in plan.items() if k not in _OUR_TOP_LEVEL_KEYS}
    gpus = []
    for gpu in plan["gpus"]:
        gpu = dict(gpu)
        gpu["remote_buffers"] = [
            dict(rb, access_channel_types=sorted(rb["access_channel_types"])) for rb in gpu["remote_buffers"]
        ]
        gpu["threadblocks"] = [dict(tb, ops=[_normalize_op(op) for op in tb["ops"]]) for tb in gpu["threadblocks"]]
        gpus.append(gpu)
    plan["gpus"] = gpus
    return plan


def first_difference(ours, theirs, path="plan"):
    """The path of the first difference between two normalized plans, or None."""
    if type(ours) is not type(theirs):
        return f"{path}: {ours!r} != {theirs!r}"
    if isinstance(ours, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                return f"{path}.{key}: only in {'ours' if key in ours else 'reference'}"
            found = first_difference(ours[key], theirs[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(ours, list):
        if len(ours) != len(theirs):
            return f"{path}: length {len(ours)} != {len(theirs)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if ours == theirs else f"{path}: {ours!r} != {theirs!r}"
