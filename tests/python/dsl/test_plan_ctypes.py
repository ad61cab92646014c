"""mscclpp.plan through ctypes, against a fake registry compiled from fake_plan_registry.c with the
same C API (runtime/include/mscclpp/plan_api.h), so argument marshalling really crosses into C."""
import os
import shutil
import subprocess

import pytest
from dsl_test_support import HERE, REPO

from mscclpp import _runtime_lib as rt
from mscclpp import plan as mplan
from mscclpp.dsl import presets

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to build the fake registry")


@pytest.fixture(scope="module")
def fake_library(tmp_path_factory):
    out = tmp_path_factory.mktemp("fake") / "libfake_plan_registry.so"
    subprocess.run(
        [CC, "-shared", "-fPIC", "-O1", "-I", os.path.join(REPO, "runtime", "include"),
         os.path.join(HERE, "fake_plan_registry.c"), "-o", str(out)],
        check=True,
    )
    return str(out)


@pytest.fixture
def registry(fake_library, monkeypatch, tmp_path):
    # A fresh copy per test: dlopen of the same path would return the same (stateful) library.
    copy = tmp_path / "libregistry.so"
    shutil.copy(fake_library, copy)
    monkeypatch.setenv("MSCCLPP_LIBRARY", str(copy))
    monkeypatch.setattr(rt, "_process_library", lambda: None)
    rt.reset()
    yield
    try:
        mplan.set_selector(None)
    finally:
        rt.reset()


def preset_file(tmp_path, name):
    preset = next(p for p in presets.catalog() if p.name == name)
    path = tmp_path / f"{name}.json"
    path.write_text(presets.build(preset))
    return str(path)


def request(size, collective="allreduce", ranks=4, tags=frozenset()):
    return mplan.Request(collective, ranks, ranks, size, True, 7, 0, -1, 0x1000, 0x1000, tags)


def test_register_and_list(registry, tmp_path):
    mplan.register(preset_file(tmp_path, "allreduce_ll_n4_ip"))
    mplan.register(preset_file(tmp_path, "allreduce_nvls_n4_ip"), tags={"extra"})
    handles = mplan.plans()
    assert [h.name for h in handles] == ["allreduce_ll_n4_ip", "allreduce_nvls_n4_ip"]
    assert handles[1].tags == frozenset({"nvls", "extra"})
    assert (handles[0].collective, handles[0].protocol, handles[0].world_size) == ("allreduce", "LL", 4)
    assert (handles[0].min_message_size, handles[0].max_message_size) == (0, (1 << 20) - 1)
    assert handles[0].in_place and handles[0].source.endswith("allreduce_ll_n4_ip.json")


def test_register_errors_carry_the_registrys_message(registry, tmp_path):
    path = preset_file(tmp_path, "allreduce_ll_n4_ip")
    mplan.register(path)
    with pytest.raises(mplan.PlanError, match=r"failed \(-12\): duplicate plan name") as error:
        mplan.register(path)
    assert error.value.status == -12  # mscclppAlreadyExists
    with pytest.raises(mplan.PlanError, match="cannot open the plan file"):
        mplan.register(str(tmp_path / "missing.json"))
    mplan.register_json('{"name":"inline","collective":"allreduce","protocol":"Simple","gpus":[]}', tags=["t"])
    assert mplan.plans()[-1].name == "inline" and mplan.plans()[-1].source == "<memory>"
    mplan.unregister("inline")
    with pytest.raises(mplan.PlanError, match="no such plan"):
        mplan.unregister("inline")


def test_a_selector_gets_the_plans_and_the_request(registry, tmp_path):
    mplan.register(preset_file(tmp_path, "allreduce_ll_n4_ip"))
    mplan.register(preset_file(tmp_path, "allreduce_nvls_n4_ip"))
    seen = []

    def selector(plans, req):
        seen.append((plans, req))
        collective_plans = plans.get(req.collective)
        nvls = [p for p in collective_plans if "nvls" in p.tags]
        return nvls[0] if nvls else collective_plans[0]

    mplan.set_selector(selector)
    assert mplan.select(request(12 << 20, tags=frozenset({"fast"}))) == ("allreduce_nvls_n4_ip", "chosen by the selector")
    plans, req = seen[0]
    assert list(plans) == ["allreduce"] and [p.name for p in plans["allreduce"]] == ["allreduce_ll_n4_ip", "allreduce_nvls_n4_ip"]
    assert (req.collective, req.world_size, req.nranks_per_node, req.message_size, req.in_place) == ("allreduce", 4, 4, 12 << 20, True)
    assert (req.dtype, req.red_op, req.root, req.send_buffer, req.recv_buffer) == (7, 0, -1, 0x1000, 0x1000)
    assert req.tags == frozenset({"fast"})


def test_selector_may_decline_and_failures_fall_back_to_nccl(registry, tmp_path, capsys):
    mplan.register(preset_file(tmp_path, "allreduce_ll_n4_ip"))
    mplan.set_selector(lambda plans, req: None)
    assert mplan.select(request(1024))[0] is None

    def broken(plans, req):
        raise KeyError("boom")

    mplan.set_selector(broken)
    assert mplan.select(request(1024))[0] is None
    assert "the plan selector raised" in capsys.readouterr().err
    mplan.set_selector(lambda plans, req: "not a plan")
    assert mplan.select(request(1024))[0] is None
    mplan.set_selector(None)
    assert mplan.select(request(1024)) == ("allreduce_ll_n4_ip", "default choice")


def test_jit_plans_register(registry, tmp_path, monkeypatch):
    from mscclpp.dsl import jit
    import allreduce_nvls

    monkeypatch.setenv("MSCCLPP_CACHE_DIR", str(tmp_path / "cache"))
    compiled = jit.compile(algo=allreduce_nvls.build, name="allreduce_nvls", collective="allreduce",
                           nranks_per_node=4, world_size=4, instances=2, tags={"nvls"})
    mplan.register(compiled)
    assert mplan.plans()[0].name == "allreduce_nvls" and mplan.plans()[0].tags == frozenset({"nvls"})


def test_clear_error_when_the_runtime_is_not_loaded(monkeypatch):
    from mscclpp import _paths

    monkeypatch.delenv("MSCCLPP_LIBRARY", raising=False)
    monkeypatch.delenv("MSCCLPP_BUILD_DIR", raising=False)
    monkeypatch.setattr(rt, "_process_library", lambda: None)
    monkeypatch.setattr(_paths, "installed", lambda: None)  # as in a source checkout
    rt.reset()
    try:
        with pytest.raises(rt.RuntimeNotLoaded) as error:
            mplan.plans()
        message = str(error.value)
        assert "mscclppPlanRegisterFile" in message and "MSCCLPP_LIBRARY is not set" in message
        monkeypatch.setenv("MSCCLPP_LIBRARY", "/nonexistent/libmscclpp.so")
        rt.reset()
        with pytest.raises(rt.RuntimeNotLoaded,
                           match=r"MSCCLPP_LIBRARY \(/nonexistent/libmscclpp.so\) cannot be loaded"):
            mplan.register("x.json")
    finally:
        rt.reset()
