"""CommGroup: ranks as processes meeting through a unique id or a fixed address, what they learn about
the group, and the errors of bad arguments, bad addresses and missing ranks."""
import pytest
from integration_support import free_port, requires_runtime, run_lone, run_ranks

from mscclpp import comm as mscclpp_comm


@requires_runtime
@pytest.mark.parametrize("nranks", [2, 3, 4, 8])
def test_unique_id_group_of_n_processes(nranks):
    results = run_ranks("info", nranks)
    for rank, result in enumerate(results):
        assert (result["my_rank"], result["nranks"]) == (rank, nranks)
        assert (result["comm_rank"], result["comm_size"]) == (rank, nranks)
        # every process runs on this host: one node holding all ranks, local rank = rank
        assert (result["nranks_per_node"], result["local_rank"]) == (nranks, rank)
        assert result["backend"] == "cpu"
    if nranks in (2, 4, 8):  # default plans exist for these sizes
        assert all(r["allreduce"] == {"ok": True, "plan": f"allreduce_ll_n{nranks}_ip"} for r in results)
    else:
        assert all(not r["allreduce"]["ok"] and "no plan" in r["allreduce"]["why"] for r in results)


@requires_runtime
@pytest.mark.parametrize("form", ["lo:127.0.0.1:{port}", "127.0.0.1:{port}"])
def test_fixed_address_group(form):
    address = form.format(port=free_port())
    results = run_ranks("info", 2, meet="address", address=address)
    assert [(r["my_rank"], r["nranks"]) for r in results] == [(0, 2), (1, 2)]
    assert all(r["allreduce"]["ok"] for r in results)


@requires_runtime
def test_address_forms_and_their_errors():
    port = free_port()
    results = run_lone("lone_group", {"addresses": {
        "trio": f"lo:127.0.0.1:{port}",
        "pair": f"127.0.0.1:{free_port()}",
        "v6_trio": f"lo:[::1]:{free_port()}",
        "v6_pair": f"[::1]:{free_port()}",
        "bracket_without_colon": "lo[::1]:5000",
        "unknown_interface": f"nosuchif0:127.0.0.1:{free_port()}",
        "four_parts": "a:b:c:d",
        "bad_port": "127.0.0.1:99999",
        "empty_interface": ":127.0.0.1:5000",
    }})
    assert results["trio"] == {"type": None, "nranks": 1, "my_rank": 0}
    assert results["pair"] == {"type": None, "nranks": 1, "my_rank": 0}
    for v6 in ("v6_trio", "v6_pair"):
        if results[v6]["type"] is not None:  # hosts without IPv6 loopback cannot bind [::1]
            assert "::1" in results[v6]["message"], results[v6]
    assert "bootstrap address 'lo[::1]:5000': expected interface:ip:port" in results["bracket_without_colon"]["message"]
    unknown = results["unknown_interface"]
    assert unknown["type"] == "InvalidArgumentError" and unknown["status"] == -2
    assert "names interface nosuchif0, which is not up or has no usable address (up: " in unknown["message"]
    assert "lo 127.0.0.1" in unknown["message"]
    four = results["four_parts"]
    assert four["type"] == "InvalidArgumentError"
    assert "bootstrap address 'a:b:c:d' has 3 ':'; expected interface:ip:port" in four["message"]
    assert "port '99999' is not in 1..65535" in results["bad_port"]["message"]
    assert "the interface name is empty" in results["empty_interface"]["message"]


@requires_runtime
def test_interface_that_is_not_the_bootstrap_one_is_refused():
    import socket

    others = [name for _, name in socket.if_nameindex() if name != "lo"]
    results = run_lone("lone_group", {"addresses": {name: f"{name}:127.0.0.1:{free_port()}" for name in others}})
    checked = 0
    for name, result in results.items():
        if "is not up or has no usable address" in result.get("message", ""):
            continue  # an interface without an address (e.g. ifb0) cannot be chosen at all
        # A loopback root keeps the job on loopback: the named interface cannot be honoured.
        assert result["type"] == "InvalidArgumentError", result
        assert f"names interface {name}, but this rank's bootstrap listens on 127.0.0.1:" in result["message"]
        assert f"set MSCCLPP_SOCKET_IFNAME=={name}" in result["message"]
        checked += 1
    if not checked:
        pytest.skip("this host has no up non-loopback interface with an address")


@requires_runtime
def test_missing_rank_fails_within_the_timeout_naming_it():
    result = run_lone("missing_rank", {"address": f"127.0.0.1:{free_port()}", "timeout": 1.5}, timeout=30)
    assert result["type"] == "CommTimeoutError" and result["status"] == -6
    assert "ranks 1 (1 of 2) did not arrive at the" in result["message"], result
    assert "within 1.5 s" in result["message"]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({}, ValueError, "give interfaceIpPortTrio, unique_id, mpi_comm, torch_group or torch_store"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "rank": 0}, ValueError, "rank and size are required"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "rank": 2, "size": 2}, ValueError, r"rank 2 is not in 0..1 \(size=2\)"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "rank": 0, "size": 0}, ValueError, r"rank 0 is not in 0..-1"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "rank": "0", "size": 2}, TypeError, "must be integers"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "unique_id": b"x", "rank": 0, "size": 2}, ValueError,
         "not interfaceIpPortTrio and unique_id"),
        ({"interfaceIpPortTrio": "127.0.0.1:1", "rank": 0, "size": 1, "timeout": -1}, ValueError,
         "timeout=-1 must not be negative"),
    ],
)
def test_argument_errors_before_any_runtime_call(kwargs, error, message):
    with pytest.raises(error, match=message):
        mscclpp_comm.CommGroup(**kwargs)
