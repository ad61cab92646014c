"""ExecutionPlanRegistry.select against the runtime's process-wide registry: the default plans of
plans/, a plan registered at run time through mscclpp.plan.register, and selectors installed through
mscclpp.plan.set_selector (the registry the NCCL shim uses too). Each test runs in a fresh process."""
import glob
import os

import allreduce_allpairs
import pytest
from integration_support import PLANS, requires_runtime, run_lone


@pytest.fixture(scope="module")
def registry_results(tmp_path_factory):
    extra = tmp_path_factory.mktemp("plans") / "it_allreduce_n4.json"
    program = allreduce_allpairs.build(name="it_allreduce_n4", num_gpus=4, num_tb=2, max_message_size=1 << 20)
    extra.write_text(program.to_json())
    return run_lone("registry", {"extra_plan": str(extra)})


@requires_runtime
@pytest.mark.parametrize("case, name, tags", [
    ("allreduce_4k", "allreduce_ll_n4_ip", ["default", "ll"]),
    ("allreduce_2m", "allreduce_allpairs_n4_ip", ["allpairs", "default"]),
    ("allreduce_32m_oop", "allreduce_rsag_n8_oop", ["default", "rsag"]),
    ("allgather_4m", "allgather_put_n2_oop", ["default"]),
    ("alltoall", "alltoall_put_n4_oop", ["default"]),
    ("broadcast_root1", "broadcast_put_n4_oop_root1", ["default"]),
    ("nvls_tag", "allreduce_nvls_n4_ip", ["nvls"]),
])
def test_default_plans_are_selected(registry_results, case, name, tags):
    chosen = registry_results["defaults"][case]
    assert chosen["name"] == name
    assert chosen["tags"] == tags
    assert chosen["plan_type"] == "ExecutionPlan"
    assert chosen["reason"].startswith(f"plan '{name}' (")


@requires_runtime
def test_no_plan_gives_none_and_a_reason(registry_results):
    assert registry_results["defaults"]["no_plan_3_ranks"] is None
    assert registry_results["no_plan_reason"].startswith(
        "no plan for allreduce on 3 ranks (3 per node), 4 KiB, in-place, float32, sum: none is registered")


@requires_runtime
def test_listing_and_lookup(registry_results):
    assert registry_results["default_plan_count"] == len(glob.glob(os.path.join(PLANS, "*.json")))
    assert registry_results["get_known"] == (1 << 20) - 1
    assert registry_results["get_unknown"] is None


@requires_runtime
def test_run_time_registration_is_seen(registry_results):
    assert registry_results["registered"]["name"] == "it_allreduce_n4"
    assert registry_results["registered"]["tags"] == ["mine"]
    assert registry_results["registered_listed"] == ["it_allreduce_n4"]


@requires_runtime
def test_selector_through_mscclpp_plan(registry_results):
    # customized_comm.py's selector prefers the nvls-tagged candidate
    assert registry_results["selector_choice"]["name"] == "allreduce_nvls_n4_ip"
    assert ": chosen by the user selector; chunk " in registry_results["selector_choice"]["reason"]
    assert registry_results["selector_saw"] == [["allreduce", 4, 2 << 20, 7]]
    assert registry_results["selector_declines"] is None
    # Without a selector the default rule runs: the plan registered at run
    # time wins over the installed defaults for every call it can serve.
    assert registry_results["selector_removed"]["name"] == "it_allreduce_n4"
    assert "because it is the user's plan (registered)" in registry_results["selector_removed"]["reason"]


@requires_runtime
@pytest.mark.parametrize("case, error, message", [
    ("unknown_collective", "InvalidArgumentError",
     "collective 'allsum' is not one of allreduce, allgather, reducescatter, alltoall"),
    ("ranks_per_node_too_big", "InvalidArgumentError",
     "plan selection: 8 ranks per node is not in 1..4 (the world size)"),
    ("negative_size", "ValueError", "select: message_size=-1 must be a non-negative integer"),
    ("bad_pointer", "TypeError", "select: send_buffer must be an address"),
    ("bad_dtype", "ValueError", "'complex64' has no MSCCL++ datatype"),
])
def test_bad_requests(registry_results, case, error, message):
    report = registry_results[case]
    assert report["type"] == error
    assert message in report["message"]
