"""Executor.execute on the CPU backend, ranks as processes with host (numpy) buffers: every result is
compared with a numpy reference computed on each rank. One job per world size runs all the cases
(processes are started once); each case is its own test."""
import pytest
from integration_support import requires_runtime, run_ranks

# count: elements per rank (allreduce), per rank of the output (allgather,
# reducescatter), per peer (alltoall). plan: the default plan expected to serve
# the case ({n}: the world size).
_TABLE = [
    # (id, collective, dtype, count, in place, reduce op, plan) allreduce: LL
    # below 1 MiB, all-pairs 1-16 MiB, reduce-scatter + all-gather above
    ("allreduce_f32_4k_ip", "allreduce", "float32", 1024, True, "sum", "allreduce_ll_n{n}_ip"),
    ("allreduce_f16_128k_oop", "allreduce", "float16", 64 << 10, False, "sum", "allreduce_ll_n{n}_oop"),
    ("allreduce_i32_2m_ip", "allreduce", "int32", 512 << 10, True, "sum", "allreduce_allpairs_n{n}_ip"),
    ("allreduce_f32_16m_oop", "allreduce", "float32", 4 << 20, False, "sum", "allreduce_rsag_n{n}_oop"),
    ("allreduce_u8_4k_oop", "allreduce", "uint8", 4096, False, "sum", "allreduce_ll_n{n}_oop"),
    ("allreduce_f64_8k_ip", "allreduce", "float64", 1024, True, "sum", "allreduce_ll_n{n}_ip"),
    ("allreduce_i64_max_ip", "allreduce", "int64", 2048, True, "max", "allreduce_ll_n{n}_ip"),
    ("allreduce_f32_min_oop", "allreduce", "float32", 4096, False, "min", "allreduce_ll_n{n}_oop"),
    # allgather: LL below 1 MiB of output, puts above; in place = the input inside the output
    ("allgather_f32_4k_oop", "allgather", "float32", 1024, False, "sum", "allgather_ll_n{n}_oop"),
    ("allgather_i8_ip", "allgather", "int8", 8192, True, "sum", "allgather_ll_n{n}_ip"),
    ("allgather_f16_2m_oop", "allgather", "float16", 512 << 10, False, "sum", "allgather_put_n{n}_oop"),
    ("reducescatter_f32_small", "reducescatter", "float32", 1024, False, "sum", "reducescatter_ll_n{n}_oop"),
    ("reducescatter_i32_1m", "reducescatter", "int32", 256 << 10, False, "sum", "reducescatter_put_n{n}_oop"),
    ("alltoall_f32_small_oop", "alltoall", "float32", 256, False, "sum", "alltoall_put_n{n}_oop"),
    ("alltoall_u64_ip", "alltoall", "uint64", 4096, True, "sum", "alltoall_put_n{n}_ip"),
    ("alltoall_f16_1m_oop", "alltoall", "float16", 256 << 10, False, "sum", "alltoall_put_n{n}_oop"),
]
CASES = [dict(zip(("id", "collective", "dtype", "count", "in_place", "op", "plan"), row)) for row in _TABLE]
WORLD_SIZES = [2, 4]
_jobs = {}


def job(nranks):
    """The results of every case on nranks ranks (one job per world size, run on first use). A failed
    job is remembered too, so its cases fail at once instead of running the job again each."""
    if nranks not in _jobs:
        try:
            _jobs[nranks] = run_ranks("collectives", nranks, {"cases": CASES}, timeout=120)
        except (Exception, pytest.fail.Exception) as failure:  # noqa: BLE001 - remembered, raised below
            _jobs[nranks] = failure
    if isinstance(_jobs[nranks], BaseException):
        raise _jobs[nranks]
    return _jobs[nranks]


@requires_runtime
@pytest.mark.parametrize("nranks", WORLD_SIZES)
@pytest.mark.parametrize("case", [c["id"] for c in CASES])
def test_collective_matches_numpy_reference(nranks, case):
    results = job(nranks)
    for rank, result in enumerate(results):
        assert result["backend"] == "cpu"
        outcome = result["results"][case]
        assert outcome["ok"], f"rank {rank}/{nranks}: {outcome}"
    expected = next(c for c in CASES if c["id"] == case)["plan"].format(n=nranks)
    assert [r["results"][case]["plan"] for r in results] == [expected] * nranks
