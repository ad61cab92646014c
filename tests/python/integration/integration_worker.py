"""One rank (or one lone process) of an integration test: runs a named scenario against the real
runtime and prints ``RESULT <json>`` for the test to assert on.

    python3 integration_worker.py SCENARIO --rank R --size N [--meet uid|address ADDRESS] [--args JSON]

Ranks meet through a unique id (rank 0 creates it and prints ``UID <hex>``; the others read it from
stdin: the test relays it, so no port is guessed) or a fixed address. A fresh process per test keeps
the process-wide plan registry of one test away from the others. Scenarios catch the errors they
expect and report them (type and message); anything unexpected is a traceback and exit status 1.
"""
import argparse
import json
import os
import sys
import time
import traceback

import numpy as np

import mscclpp
from mscclpp import comm as mscclpp_comm
from mscclpp.errors import MscclppError

# ---------------------------------------------------------------- data and references

NP_DTYPES = {
    "int8": np.int8, "uint8": np.uint8, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
    "uint64": np.uint64, "float16": np.float16, "float32": np.float32, "float64": np.float64,
}


def values(rank, count, dtype):
    """Rank r's data: small integers (sums of up to 8 ranks are exact in every dtype, float16 included)."""
    v = (np.arange(count, dtype=np.int64) * 7 + rank * 13) % 11
    if not np.issubdtype(dtype, np.unsignedinteger):
        v = v - 5
    return v.astype(dtype)


def reduce_all(arrays, op):
    reducer = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}[op]
    out = arrays[0].copy()
    for a in arrays[1:]:
        out = reducer(out, a).astype(out.dtype)
    return out


def buffers_and_reference(case, rank, n):
    """(send, recv, expected recv, message size, in place) for one collective case on one rank."""
    collective, dtype, count = case["collective"], NP_DTYPES[case["dtype"]], case["count"]
    op = case.get("op", "sum")
    in_place = case.get("in_place", False)
    if collective == "allreduce":
        send = values(rank, count, dtype)
        expected = reduce_all([values(r, count, dtype) for r in range(n)], op)
        recv = send if in_place else np.zeros_like(send)
        return send, recv, expected, send.nbytes, in_place
    if collective == "allgather":  # count per rank
        expected = np.concatenate([values(r, count, dtype) for r in range(n)])
        recv = np.zeros_like(expected)
        if in_place:
            recv[rank * count:(rank + 1) * count] = values(rank, count, dtype)
            send = recv[rank * count:(rank + 1) * count]
        else:
            send = values(rank, count, dtype)
        return send, recv, expected, recv.nbytes, in_place
    if collective == "reducescatter":  # count per rank of the output
        send = values(rank, n * count, dtype)
        full = reduce_all([values(r, n * count, dtype) for r in range(n)], op)
        expected = full[rank * count:(rank + 1) * count]
        return send, np.zeros_like(expected), expected, send.nbytes, False
    if collective == "alltoall":  # count per peer
        send = values(rank, n * count, dtype)
        expected = np.concatenate([values(r, n * count, dtype)[rank * count:(rank + 1) * count] for r in range(n)])
        recv = send if in_place else np.zeros_like(send)
        return send, recv, expected, send.nbytes, in_place
    raise ValueError(f"unknown collective {collective}")


def error_report(error):
    return {"type": type(error).__name__, "message": str(error),
            "status": getattr(error, "status", None)}


# ---------------------------------------------------------------- scenarios with a communicator

def scenario_info(group, args):
    """The group's view of itself, a barrier, and one small allreduce to show the communicator works."""
    group.barrier()
    executor = mscclpp.Executor(group.communicator)
    case = {"collective": "allreduce", "dtype": "float32", "count": 1024, "in_place": True}
    result = run_case(group, executor, mscclpp.ExecutionPlanRegistry(), case)
    return {"my_rank": group.my_rank, "nranks": group.nranks, "nranks_per_node": group.nranks_per_node,
            "local_rank": group.local_rank, "comm_rank": group.communicator.rank,
            "comm_size": group.communicator.size, "backend": executor.backend, "allreduce": result}


def run_case(group, executor, registry, case):
    rank, n = group.my_rank, group.nranks
    send, recv, expected, message, in_place = buffers_and_reference(case, rank, n)
    handle = registry.select(case["collective"], n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                             message, dtype=send.dtype, in_place=in_place)
    if handle is None:
        return {"ok": False, "why": registry.last_reason}
    op = mscclpp.ReduceOp[case.get("op", "sum")]
    executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, handle.plan,
                     0, op=op)
    wrong = np.flatnonzero(recv != expected)
    if wrong.size:
        i = int(wrong[0])
        return {"ok": False, "plan": handle.name,
                "why": f"{wrong.size} wrong element(s); element {i} is {recv[i]}, expected {expected[i]}"}
    return {"ok": True, "plan": handle.name}


def scenario_collectives(group, args):
    """Every case of args["cases"] (with its id), executed on the CPU backend and checked with numpy."""
    executor = mscclpp.Executor(group.communicator)
    registry = mscclpp.ExecutionPlanRegistry()
    results = {}
    for case in args["cases"]:
        try:
            results[case["id"]] = run_case(group, executor, registry, case)
        except MscclppError as error:  # reported per case; the ranks stay in step (errors precede exchanges)
            results[case["id"]] = {"ok": False, "why": f"{type(error).__name__}: {error}"}
    return {"backend": executor.backend, "results": results}


def scenario_execute_errors(group, args):
    """Wrong calls, each made identically on every rank (so they fail before any exchange), then a good
    call proving the communicator and executor still work."""
    rank, n = group.my_rank, group.nranks
    executor = mscclpp.Executor(group.communicator)
    registry = mscclpp.ExecutionPlanRegistry()
    x = values(rank, 1024, np.float32)
    ptr, size = x.ctypes.data, x.nbytes
    small = registry.select("allreduce", n, group.nranks_per_node, ptr, ptr, size, dtype=np.float32)
    out = {"selected": small.name}

    def attempt(name, call):
        try:
            call()
            out[name] = {"type": None}
        except Exception as error:  # noqa: BLE001 - the report is the point
            out[name] = error_report(error)

    big = np.zeros(1 << 19, dtype=np.float32)  # 2 MiB: beyond the LL plan's range
    attempt("receive_size_mismatch", lambda: executor.execute(rank, ptr, ptr, size, size // 2, np.float32, small.plan))
    attempt("beyond_size_range", lambda: executor.execute(rank, big.ctypes.data, big.ctypes.data, big.nbytes,
                                                          big.nbytes, np.float32, small.plan))
    attempt("not_divisible", lambda: executor.execute(rank, ptr, ptr, 1002, 1002, np.float32, small.plan))
    attempt("other_rank", lambda: executor.execute((rank + 1) % n, ptr, ptr, size, size, np.float32, small.plan))
    attempt("python_dtype_number", lambda: executor.execute(rank, ptr, ptr, size, size, 42, small.plan))
    attempt("python_dtype_complex", lambda: executor.execute(rank, ptr, ptr, size, size, np.complex64, small.plan))
    error = mscclpp._capi.error_buffer()
    status = mscclpp._capi.load().mscclppExecute(executor.handle, rank, ptr, ptr, size, size, 42, small.plan.handle,
                                                None, 0, error, len(error))
    out["c_dtype_number"] = {"status": status, "message": mscclpp._capi.text(error)}
    status = mscclpp._capi.load().mscclppExecute(executor.handle, rank, ptr, ptr, size, size, 7, small.plan.handle,
                                                None, 5, error, len(error))
    out["c_premulsum"] = {"status": status, "message": mscclpp._capi.text(error)}
    attempt("plan_by_name", lambda: executor.execute(rank, ptr, ptr, size, size, np.float32, small.name))
    attempt("null_send", lambda: executor.execute(rank, 0, ptr, size, size, np.float32, small.plan))

    # A plan registered, selected, then unregistered: the handle no longer matches the registry's choice.
    with open(args["extra_plan"], encoding="utf-8") as f:
        text = f.read()
    mscclpp.plan.register_json(text, source_name="extra.json", tags=["extra"])
    extra = registry.select("allreduce", n, group.nranks_per_node, ptr, ptr, size, dtype=np.float32, tags=["extra"])
    mscclpp.plan.unregister(extra.name)
    attempt("unregistered_plan", lambda: executor.execute(rank, ptr, ptr, size, size, np.float32, extra.plan))
    closed = registry.select("allreduce", n, group.nranks_per_node, ptr, ptr, size, dtype=np.float32)
    closed.plan.close()
    attempt("closed_plan", lambda: executor.execute(rank, ptr, ptr, size, size, np.float32, closed.plan))

    # Still usable: the right call works after all the wrong ones.
    expected = reduce_all([values(r, 1024, np.float32) for r in range(n)], "sum")
    executor.execute(rank, ptr, ptr, size, size, np.float32, small.plan)
    out["after_errors_correct"] = bool(np.array_equal(x, expected))
    return out


# ---------------------------------------------------------------- scenarios in one lone process

def scenario_registry(args):
    """Selection through ExecutionPlanRegistry: default plans, run-time registrations, selectors."""
    registry = mscclpp.ExecutionPlanRegistry()
    out = {}

    def pick(*call, **keywords):
        handle = registry.select(*call, **keywords)
        return None if handle is None else {"name": handle.name, "tags": sorted(handle.tags),
                                            "collective": handle.collective, "reason": handle.reason,
                                            "plan_type": type(handle.plan).__name__}

    out["defaults"] = {
        "allreduce_4k": pick("allreduce", 4, 4, 0x1000, 0x1000, 4096, dtype="float32"),
        "allreduce_2m": pick("allreduce", 4, 4, 0x1000, 0x1000, 2 << 20, dtype="float32"),
        "allreduce_32m_oop": pick("allreduce", 8, 8, 0x1000, 0x9000000, 32 << 20, dtype="float16"),
        "allgather_4m": pick("allgather", 2, 2, 0x1000, 0x2000, 4 << 20),
        "alltoall": pick("alltoall", 4, 4, 0x1000, 0x2000, 64 << 10),
        "broadcast_root1": pick("broadcast", 4, 4, 0x1000, 0x2000, 8192, root=1),
        "nvls_tag": pick("allreduce", 4, 4, 0x1000, 0x1000, 2 << 20, dtype="float32", tags=["nvls"]),
        "no_plan_3_ranks": pick("allreduce", 3, 3, 0x1000, 0x1000, 4096, dtype="float32"),
    }
    out["no_plan_reason"] = registry.last_reason
    out["default_plan_count"] = len(registry.plans())
    known = registry.get("allreduce_ll_n4_ip")
    out["get_known"] = known.max_message_size if known else None
    out["get_unknown"] = registry.get("no_such_plan")

    # A plan registered at run time (mscclpp.plan.register) is a candidate for ExecutionPlanRegistry too.
    mscclpp.plan.register(args["extra_plan"], tags=["mine"])
    out["registered"] = pick("allreduce", 4, 4, 0x1000, 0x1000, 4096, dtype="float32", tags=["mine"])
    out["registered_listed"] = [p.name for p in registry.plans("allreduce") if "mine" in p.tags]

    # The selector of examples/python/customized_comm.py, through
    # mscclpp.plan.set_selector.
    seen = []

    def prefer_nvls(plans, req):
        seen.append((req.collective, req.world_size, req.message_size, req.dtype))
        candidates = plans.get(req.collective)
        nvls = [p for p in candidates if "nvls" in p.tags]
        return nvls[0] if nvls else candidates[0]

    registry.set_selector(prefer_nvls)
    out["selector_choice"] = pick("allreduce", 4, 4, 0x1000, 0x1000, 2 << 20, dtype="float32")
    out["selector_saw"] = seen[:1]
    registry.set_selector(lambda plans, req: None)
    out["selector_declines"] = pick("allreduce", 4, 4, 0x1000, 0x1000, 4096, dtype="float32")
    registry.set_selector(None)
    out["selector_removed"] = pick("allreduce", 4, 4, 0x1000, 0x1000, 4096, dtype="float32")

    def bad(name, call):
        try:
            call()
            out[name] = {"type": None}
        except Exception as error:  # noqa: BLE001 - the report is the point
            out[name] = error_report(error)

    bad("unknown_collective", lambda: registry.select("allsum", 4, 4, 0, 0, 4096))
    bad("ranks_per_node_too_big", lambda: registry.select("allreduce", 4, 8, 0, 0, 4096))
    bad("negative_size", lambda: registry.select("allreduce", 4, 4, 0, 0, -1))
    bad("bad_pointer", lambda: registry.select("allreduce", 4, 4, "0x10", 0, 4096))
    bad("bad_dtype", lambda: registry.select("allreduce", 4, 4, 0, 0, 4096, dtype="complex64"))
    return out


def scenario_plan_dirs(args):
    """The plan directories as the package computes them, and the plans the runtime registered."""
    from mscclpp import _paths

    plans = mscclpp.plan.plans()  # makes the runtime scan its directories
    return {"python": _paths.plan_directories(), "install_dir": _paths.default_install_dir(),
            "sources": sorted({os.path.dirname(p.source) for p in plans}), "count": len(plans)}


def scenario_nvls_selector(args):
    """customized_comm.py's usage: jit-compile and register an nvls-tagged plan, install its selector,
    select. The user's plan must be chosen over the installed nvls defaults."""
    from mscclpp.dsl import jit
    import allreduce_nvls

    plan = jit.compile(algo=allreduce_nvls.build, name="allreduce_nvls", collective="allreduce", nranks_per_node=4,
                       world_size=4, instances=2, protocol="Simple", num_threads_per_block=1024,
                       min_msg_size=1 << 20, max_msg_size=48 << 30, tags={"nvls"})
    mscclpp.plan.register(plan)

    def selector(plans, req):
        collective_plans = plans.get(req.collective)
        nvls = [p for p in collective_plans if "nvls" in p.tags]
        return nvls[0] if nvls else collective_plans[0]

    mscclpp.plan.set_selector(selector)
    registry = mscclpp.ExecutionPlanRegistry()
    handle = registry.select("allreduce", 4, 4, 0x1000, 0x1000, 24 << 20, dtype="float16")
    return {"chosen": handle.name if handle else None, "reason": registry.last_reason,
            "listed_first": [p.name for p in mscclpp.plan.plans()][:1],
            "defaults_with_nvls": sorted(p.name for p in registry.plans("allreduce")
                                         if "nvls" in p.tags and p.name != "allreduce_nvls")}


def scenario_users_plan(args):
    """The user's 4-rank all-pairs allreduce for every size, compiled with jit and registered (and saved
    with args["save"]) unless args["compile"] is false; then the plans chosen for the calls where the
    installed defaults would win by the rules after the first: a narrower range (4 KiB, 1 MiB), no copy
    (32 MiB out-of-place)."""
    if args.get("compile", True):
        from mscclpp.dsl import jit
        import allreduce_allpairs

        plan = jit.compile(algo=allreduce_allpairs.build, name="mine", collective="allreduce", nranks_per_node=4,
                           world_size=4, instances=1, protocol="Simple", num_threads_per_block=1024, min_msg_size=0,
                           max_msg_size=2**64 - 1)
        mscclpp.plan.register(plan, save=args.get("save", False))
    registry = mscclpp.ExecutionPlanRegistry()
    out = {}
    for label, size, send, recv in (("4K", 4 << 10, 0x1000, 0x1000), ("1M", 1 << 20, 0x1000, 0x1000),
                                    ("32M_oop", 32 << 20, 0x1000, 0x9000000)):
        handle = registry.select("allreduce", 4, 4, send, recv, size, dtype="float32")
        out[label] = {"name": handle.name if handle else None, "reason": registry.last_reason}
    out["sources"] = sorted({p.source for p in mscclpp.plan.plans() if p.name == "mine"})
    return out


def scenario_lone_group(args):
    """CommGroup of size 1 (no peers needed) from a fixed address: the address forms and their errors."""
    out = {}
    for name, address in args["addresses"].items():
        try:
            with mscclpp_comm.CommGroup(interfaceIpPortTrio=address, rank=0, size=1, timeout=10) as group:
                out[name] = {"type": None, "nranks": group.nranks, "my_rank": group.my_rank}
        except Exception as error:  # noqa: BLE001 - the report is the point
            out[name] = error_report(error)
    return out


def scenario_missing_rank(args):
    """Rank 0 of 2 from a fixed address, with rank 1 never started: must fail within the timeout."""
    try:
        mscclpp_comm.CommGroup(interfaceIpPortTrio=args["address"], rank=0, size=2, timeout=args["timeout"])
    except Exception as error:  # noqa: BLE001 - the report is the point
        return error_report(error)
    return {"type": None}


def scenario_alltoallv(group, args):
    """All-to-all-v calls with random uneven counts (zeros, empty rows, full segments), the same matrix on
    every rank, through Executor.execute(..., splits=...): numpy matrices, nested lists, in place; each
    checked with numpy. Then small calls back to back with many empty pairs, and counts too large for
    the buffers, the same on every rank."""
    rank, n = group.my_rank, group.nranks
    executor = mscclpp.Executor(group.communicator)
    registry = mscclpp.ExecutionPlanRegistry()
    results = []
    for call, dtype in enumerate(args["dtypes"]):
        random = np.random.RandomState(1000 + call)
        largest = args["largest"][call % len(args["largest"])]
        counts = random.randint(0, largest + 1, size=(n, n)).astype(np.uint64)
        counts[random.rand(n, n) < 0.3] = 0
        counts[random.randint(n), 0] = largest
        if n > 2:
            counts[(call + 1) % n, :] = 0  # a rank that sends nothing
        send_counts, recv_counts = counts[rank, :], counts[:, rank]
        dt = np.dtype(dtype)
        send = np.concatenate([np.arange(int(c), dtype=np.int64) * 7 + 1000 * rank + p
                               for p, c in enumerate(send_counts)]).astype(dt)
        in_place = call % 3 == 2
        recv = send if in_place else np.full(int(recv_counts.sum()) + 3, 77, dtype=dt)
        if in_place and recv.size < int(recv_counts.sum()):
            recv = np.resize(send, int(recv_counts.sum()))
            send = recv
        message = int(counts.max()) * dt.itemsize
        handle = registry.select("alltoallv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                                 message, dtype=dt)
        if handle is None:
            results.append({"ok": False, "why": registry.last_reason})
            continue
        splits = counts if call % 2 == 0 else counts.tolist()
        expected = np.concatenate([np.arange(int(c), dtype=np.int64) * 7 + 1000 * s + rank
                                   for s, c in enumerate(recv_counts)]).astype(dt)
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, dt, handle.plan,
                         splits=splits)
        got = recv[: expected.size]
        ok = bool(np.array_equal(got, expected)) and (in_place or bool((recv[expected.size:] == 77).all()))
        results.append({"ok": ok, "plan": handle.name, "in_place": in_place, "largest": largest})
    # Back to back small calls, many pairs empty: a rank that sends a peer nothing must still not run
    # calls ahead of it and overwrite a scratch slot the peer has not read.
    random = np.random.RandomState(77)
    back_to_back = {"calls": 0, "wrong": 0}
    send = np.zeros(64 * n, dtype=np.int32)
    recv = np.zeros(64 * n, dtype=np.int32)
    for call in range(args.get("back_to_back", 0)):
        counts = random.randint(1, 65, size=(n, n)).astype(np.uint64)
        counts[random.rand(n, n) < 0.4] = 0
        mine = counts[rank, :]
        send[: int(mine.sum())] = np.concatenate([call * 100000 + rank * 1000 + p * 64 + np.arange(int(c))
                                                   for p, c in enumerate(mine)])
        handle = registry.select("alltoallv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                                 int(counts.max()) * 4, dtype=send.dtype)
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, handle.plan,
                         splits=counts)
        expected = np.concatenate([call * 100000 + s * 1000 + rank * 64 + np.arange(int(c))
                                   for s, c in enumerate(counts[:, rank])])
        back_to_back["calls"] += 1
        back_to_back["wrong"] += int(not np.array_equal(recv[: expected.size], expected))
    premulsum = _premulsum_calls(group, executor, registry)
    reducescatterv = _reducescatterv_calls(group, executor, registry)
    count_rule = _count_rule_calls(group, executor, registry)
    # Last: counts no rank's buffers hold fail the call on every rank, and the communicator with it.
    small = np.zeros(4, dtype=np.float32)
    counts = np.full((n, n), 100, dtype=np.uint64)
    handle = registry.select("alltoallv", n, group.nranks_per_node, small.ctypes.data, small.ctypes.data, 400,
                             dtype=small.dtype)
    try:
        executor.execute(rank, small.ctypes.data, small.ctypes.data, small.nbytes, small.nbytes, small.dtype,
                         handle.plan, splits=counts)
        too_large = {"type": None}
    except MscclppError as error:
        too_large = error_report(error)
    return {"results": results, "back_to_back": back_to_back, "too_large": too_large, "premulsum": premulsum,
            "reducescatterv": reducescatterv, "count_rule": count_rule}


def scenario_overrun(group, args):
    """All-to-all-v with 100 elements per pair, the last rank's send buffer 16 bytes: every rank's call
    must fail at once naming that rank and its counts, not at the peers' deadline."""
    rank, n = group.my_rank, group.nranks
    executor = mscclpp.Executor(group.communicator)
    registry = mscclpp.ExecutionPlanRegistry()
    counts = np.full((n, n), 100, dtype=np.uint64)
    send = np.arange(100 * n, dtype=np.float32)
    recv = np.zeros(100 * n, dtype=np.float32)
    handle = registry.select("alltoallv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data, 400,
                             dtype=send.dtype)
    send_size = 16 if rank == n - 1 else send.nbytes
    group.barrier()
    start = time.monotonic()
    try:
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, send_size, recv.nbytes, send.dtype, handle.plan,
                         splits=counts)
        out = {"type": None}
    except MscclppError as error:
        out = error_report(error)
    out["seconds"] = time.monotonic() - start
    if rank == n - 1:
        time.sleep(1.2)  # alive past the peers' bound: leaving would fail them as a departure
    return out


def _reducescatterv_calls(group, executor, registry):
    """Reduce-scatter-v on the presets: rank d receives the sum of every rank's segment for d, its count
    the same from every sender (zeros too); small segments (staged) and large ones (read), checked with
    numpy. Returns the plans that ran and whether each output was right."""
    rank, n = group.my_rank, group.nranks
    out = []
    for call, (largest, dtype) in enumerate(((300, "float32"), (40000, "int32"), (9000, "float64"))):
        random = np.random.RandomState(500 + call)
        column = random.randint(0, largest + 1, size=n)
        column[random.rand(n) < 0.3] = 0
        column[call % n] = largest
        counts = np.tile(column.astype(np.uint64), (n, 1))
        dt = np.dtype(dtype)
        parts = [(np.arange(int(c)) % 97 + 10 * rank + d).astype(dt) for d, c in enumerate(column)]
        send = np.concatenate(parts)
        recv = np.full(int(column[rank]) + 3, -1, dtype=dt)
        handle = registry.select("reducescatterv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                                 int(column.max()) * dt.itemsize, dtype=dt)
        if handle is None:
            out.append({"ok": False, "why": registry.last_reason})
            continue
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, dt, handle.plan,
                         splits=counts)
        expected = sum((np.arange(int(column[rank])) % 97 + 10 * s + rank).astype(dt) for s in range(n))
        ok = bool(np.array_equal(recv[: expected.size], expected)) and bool((recv[expected.size:] == -1).all())
        out.append({"ok": ok, "plan": handle.name})
    return out


def _count_rule_calls(group, executor, registry):
    """A reduce-scatter-v whose matrix breaks its rule (rank 0 receives 4 elements from rank 0, 5 from
    rank 1) on every rank: an argument error of the call, alike everywhere, after which the communicator
    still serves the same call with a valid matrix."""
    rank, n = group.my_rank, group.nranks
    counts = np.full((n, n), 4, dtype=np.uint64)
    counts[1, 0] = 5
    send = np.ones(5 * n, dtype=np.float32)
    recv = np.zeros(8, dtype=np.float32)
    handle = registry.select("reducescatterv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data, 20,
                             dtype=send.dtype)
    try:
        executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, handle.plan,
                         splits=counts)
        broken = {"type": None}
    except MscclppError as error:
        broken = error_report(error)
    counts[1, 0] = 4
    executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, handle.plan,
                     splits=counts)
    return {"broken": broken, "after_ok": bool((recv[:4] == n).all())}


def _premulsum_calls(group, executor, registry):
    """Premulsum's scalar through Executor.execute: an all-to-all-v with splits and an allreduce, each
    checked with numpy; then premulsum without a scalar and a scalar with sum, which must fail."""
    rank, n = group.my_rank, group.nranks
    out = {}
    counts = np.array([[(3 * s + 5 * d) % 11 for d in range(n)] for s in range(n)], dtype=np.uint64)
    send = np.concatenate([np.arange(int(c), dtype=np.float32) + 100 * rank + p
                           for p, c in enumerate(counts[rank, :])])
    recv = np.full(int(counts[:, rank].sum()) + 2, -1, dtype=np.float32)
    handle = registry.select("alltoallv", n, group.nranks_per_node, send.ctypes.data, recv.ctypes.data,
                             int(counts.max()) * 4, dtype=send.dtype)
    a2av = handle.plan
    executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, a2av,
                     op=mscclpp.ReduceOp.premulsum, splits=counts, scalar=2.5)
    expected = np.concatenate([(np.arange(int(c), dtype=np.float32) + 100 * s + rank) * 2.5
                               for s, c in enumerate(counts[:, rank])])
    out["splits_ok"] = bool(np.array_equal(recv[: expected.size], expected)) and bool((recv[expected.size:] == -1).all())
    data = np.arange(64, dtype=np.float32) + rank
    handle = registry.select("allreduce", n, group.nranks_per_node, data.ctypes.data, data.ctypes.data, data.nbytes,
                             dtype=data.dtype)
    executor.execute(rank, data.ctypes.data, data.ctypes.data, data.nbytes, data.nbytes, data.dtype, handle.plan,
                     op=mscclpp.ReduceOp.premulsum, scalar=0.5)
    out["allreduce_ok"] = bool(np.array_equal(data, (np.arange(64, dtype=np.float32) * n + n * (n - 1) / 2) * 0.5))
    for label, op, scalar in (("no_scalar", mscclpp.ReduceOp.premulsum, None),
                              ("sum_scalar", mscclpp.ReduceOp.sum, 2.0)):
        try:
            executor.execute(rank, send.ctypes.data, recv.ctypes.data, send.nbytes, recv.nbytes, send.dtype, a2av,
                             op=op, splits=counts, scalar=scalar)
            out[label] = {"type": None}
        except MscclppError as error:
            out[label] = error_report(error)
    return out


GROUP_SCENARIOS = {"info": scenario_info, "collectives": scenario_collectives,
                   "execute_errors": scenario_execute_errors, "alltoallv": scenario_alltoallv,
                   "overrun": scenario_overrun}
LONE_SCENARIOS = {"registry": scenario_registry, "lone_group": scenario_lone_group,
                  "missing_rank": scenario_missing_rank, "plan_dirs": scenario_plan_dirs,
                  "nvls_selector": scenario_nvls_selector, "users_plan": scenario_users_plan}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(GROUP_SCENARIOS) + sorted(LONE_SCENARIOS))
    parser.add_argument("--rank", type=int, default=0)
    parser.add_argument("--size", type=int, default=1)
    parser.add_argument("--meet", choices=["uid", "address"], default="uid")
    parser.add_argument("--address", default="")
    parser.add_argument("--args", default="{}")
    options = parser.parse_args()
    args = json.loads(options.args)
    try:
        if options.scenario in LONE_SCENARIOS:
            result = LONE_SCENARIOS[options.scenario](args)
        else:
            if options.meet == "address":
                group = mscclpp_comm.CommGroup(interfaceIpPortTrio=options.address, rank=options.rank,
                                               size=options.size, timeout=30)
            else:
                if options.rank == 0:
                    uid = mscclpp_comm.create_unique_id()
                    print("UID " + uid.hex(), flush=True)
                else:
                    uid = bytes.fromhex(sys.stdin.readline().strip())
                group = mscclpp_comm.CommGroup(unique_id=uid, rank=options.rank, size=options.size, timeout=30)
            result = GROUP_SCENARIOS[options.scenario](group, args)
    except Exception:  # noqa: BLE001 - an unexpected failure: the traceback is the report
        traceback.print_exc()
        return 1
    print("RESULT " + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
