"""Errors of Executor.execute: wrong sizes, dtypes, ranks, plans, each made identically on every rank
(so every rank fails before exchanging anything), then a correct call on the same executor."""
import allreduce_allpairs
import pytest
from integration_support import requires_runtime, run_ranks


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    extra = tmp_path_factory.mktemp("plans") / "it_extra_n2.json"
    extra.write_text(allreduce_allpairs.build(name="it_extra_n2", num_gpus=2, num_tb=2).to_json())
    results = run_ranks("execute_errors", 2, {"extra_plan": str(extra)})
    assert [r["selected"] for r in results] == ["allreduce_ll_n2_ip"] * 2
    return results


@requires_runtime
@pytest.mark.parametrize("case, error, status, message", [
    ("receive_size_mismatch", "NotSupportedError", -9,
     "plan allreduce_ll_n2_ip ({plans}/allreduce_ll_n2_ip.json) cannot serve rank {rank} with 4096 input and 2048 "
     "output bytes"),
    ("beyond_size_range", "NotSupportedError", -9,
     "plan 'allreduce_ll_n2_ip' ({plans}/allreduce_ll_n2_ip.json) serves messages of 0 to 1048575 bytes; rank {rank}'s "
     "call has a send size of 2097152 bytes (sendBytes=2097152, recvBytes=2097152)"),
    ("not_divisible", "NotSupportedError", -9, "1002 B input is not divisible into 2 chunks"),
    ("other_rank", "InvalidArgumentError", -2,
     "mscclppExecute: rank {other} was given, but this executor's communicator is rank {rank} of 2"),
    ("unregistered_plan", "InvalidUsageError", -1,
     "rank {rank}: plan 'it_extra_n2' was selected for this call, but the registry now chooses no plan"),
])
def test_runtime_errors(reports, case, error, status, message):
    from integration_support import PLANS

    for rank, report in enumerate(reports):
        got = report[case]
        assert (got["type"], got["status"]) == (error, status), got
        assert message.format(rank=rank, other=1 - rank, plans=PLANS) in got["message"]
        assert got["message"].startswith(f"mscclpp.Executor.execute(plan '")


@requires_runtime
@pytest.mark.parametrize("case, error, message", [
    ("python_dtype_number", "ValueError", "dtype number 42 is not a datatype (NCCL numbering 0..11)"),
    ("python_dtype_complex", "ValueError", "has no MSCCL++ datatype; supported: int8, uint8"),
    ("plan_by_name", "TypeError", "plan must be the .plan of what ExecutionPlanRegistry.select returned"),
    ("null_send", "InvalidArgumentError", "Executor::execute: a null send buffer of 4096 bytes"),
    ("closed_plan", "ValueError", "execution plan 'allreduce_ll_n2_ip' is closed"),
])
def test_python_side_errors(reports, case, error, message):
    for report in reports:
        assert report[case]["type"] == error
        assert message in report[case]["message"]


@requires_runtime
def test_c_entry_point_checks_dtype_and_op(reports):
    for rank, report in enumerate(reports):
        assert report["c_dtype_number"]["status"] == -2
        assert report["c_dtype_number"]["message"].startswith(
            f"mscclppExecute: rank {rank}: dtype 42 is not a datatype (NCCL numbering: 0 int8")
        assert report["c_premulsum"]["status"] == -2
        assert "redOp 5 (premulsum) needs a scalar, which this API does not take" in report["c_premulsum"]["message"]


@requires_runtime
def test_executor_still_works_after_the_errors(reports):
    assert [r["after_errors_correct"] for r in reports] == [True, True]
