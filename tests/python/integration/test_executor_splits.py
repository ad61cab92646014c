"""Executor.execute with splits: all-to-all-v on the default plans through the customized-communicator
path, 2 and 4 ranks as processes on the CPU backend, random uneven counts in six datatypes, and 100
small calls back to back with many empty pairs; premulsum's scalar with and without splits; reduce-scatter-v on its presets."""
import pytest
from integration_support import requires_runtime, run_ranks

DTYPES = ["int8", "float16", "int32", "float32", "float64", "uint64"]


@requires_runtime
@pytest.mark.parametrize("nranks", [2, 4])
def test_alltoallv_with_splits(nranks):
    results = run_ranks("alltoallv", nranks, {"dtypes": DTYPES, "largest": [40, 9000], "back_to_back": 100})
    for rank, report in enumerate(results):
        calls = report["results"]
        assert len(calls) == len(DTYPES)
        assert all(c["ok"] for c in calls), (rank, calls)
        # Segments up to 64 KiB run staged through scratch; 9000 x 8 bytes runs direct.
        assert {c["plan"] for c in calls} == {f"alltoallv_ll_n{nranks}_oop", f"alltoallv_direct_n{nranks}_oop"}
        assert any(c["in_place"] for c in calls)
        assert report["back_to_back"] == {"calls": 100, "wrong": 0}
        too_large = report["too_large"]
        assert too_large["type"] == "InvalidArgumentError", too_large
        assert "the counts need" in too_large["message"]  # its own or the first rank's to fail
        premulsum = report["premulsum"]
        assert premulsum["splits_ok"] and premulsum["allreduce_ok"], premulsum
        assert premulsum["no_scalar"]["type"] == "InvalidArgumentError", premulsum
        assert (f"mscclppExecuteSplitsWithScalar: rank {rank}: redOp 5 (premulsum) needs a scalar: one element of "
                "the call's dtype in host memory, got NULL") in premulsum["no_scalar"]["message"]
        assert premulsum["sum_scalar"]["type"] == "InvalidArgumentError", premulsum
        assert (f"mscclppExecuteSplitsWithScalar: rank {rank}: a scalar was given with redOp 0; only premulsum (5) "
                "takes one") in premulsum["sum_scalar"]["message"]
        reducescatterv = report["reducescatterv"]
        assert all(c["ok"] for c in reducescatterv), (rank, reducescatterv)
        # Segments up to 64 KiB run staged through scratch; 40000 x 4 and 9000 x 8 bytes are read.
        assert [c["plan"] for c in reducescatterv] == [f"reducescatterv_ll_n{nranks}_oop"] + 2 * [
            f"reducescatterv_read_n{nranks}_oop"]
        # A matrix that breaks the collective's rule is an argument error on every rank, not a failure.
        broken = report["count_rule"]["broken"]
        assert broken["type"] == "InvalidArgumentError", broken
        assert ("reducescatterv reduces one part per rank from every rank, but rank 0 receives 4 elements from rank "
                "0 and 5 from rank 1") in broken["message"], broken
        assert report["count_rule"]["after_ok"], report["count_rule"]


@requires_runtime
@pytest.mark.parametrize("nranks", [2, 4])
def test_one_ranks_overrun_fails_every_rank_at_once(nranks):
    """The last rank's send buffer cannot hold its counts: its peers, already waiting for it, fail too,
    with its error, well before the deadline (MSCCLPP_TIMEOUT_S=20)."""
    results = run_ranks("overrun", nranks, {}, MSCCLPP_TIMEOUT_S="20")
    last = nranks - 1
    for rank, report in enumerate(results):
        assert report["type"] == "InvalidArgumentError", (rank, report)
        assert f"rank {last}: the counts need {'800 B' if nranks == 2 else '1.6 KiB'} of the send buffer, which has 16 B" \
            in report["message"], report
        assert f"rank {last} sends {', '.join(['100'] * nranks)}" in report["message"], report
        assert report["seconds"] < 1.0, (rank, report)
