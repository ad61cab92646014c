"""mscclpp.dsl.jit.compile: calling conventions, overrides, the content-hash cache."""
import inspect
import json
import os

import allreduce_nvls
import integration_guide_allreduce
import pytest

from mscclpp.dsl import jit
from mscclpp.language import AllReduce, CollectiveProgram, DSLError, Rank


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MSCCLPP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def compile_seed(**overrides):
    args = dict(
        algo=integration_guide_allreduce.allreduce_example,
        name="allreduce_nvls",
        collective="allreduce",
        nranks_per_node=8,
        world_size=8,
        instances=2,
        protocol="Simple",
        num_threads_per_block=1024,
        min_msg_size=1 << 20,
        max_msg_size=48 << 30,
        tags={"nvls"},
    )
    args.update(overrides)
    return jit.compile(**args)


def test_guide_allreduce_compiles_with_arguments_applied(cache):
    plan = compile_seed()
    assert (plan.name, plan.collective, plan.tags) == ("allreduce_nvls", "allreduce", frozenset({"nvls"}))
    assert plan.path.startswith(str(cache / "jit"))
    data = json.loads(plan.json)
    assert data["name"] == "allreduce_nvls" and data["tags"] == ["nvls"]
    assert (data["min_message_size"], data["max_message_size"]) == (1 << 20, 48 << 30)
    assert len(data["gpus"][0]["threadblocks"]) == 2  # instances=2 overrides the program's 8


def test_cache_hit_does_not_rerun_and_keys_on_arguments(monkeypatch):
    calls = []
    original = integration_guide_allreduce.allreduce_example

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    counting.__wrapped__ = original  # inspect.getsource follows it: same source, same key
    first = compile_seed(algo=counting)
    again = compile_seed(algo=counting)
    assert again.path == first.path and len(calls) == 1
    other = compile_seed(algo=counting, instances=4)
    assert other.path != first.path and len(calls) == 2


def test_spec_style_functions_get_an_algospec():
    seen = {}

    def algo(spec):
        seen["spec"] = spec
        with CollectiveProgram.from_spec(spec) as program:
            pass
        return program

    # An empty program (it moves no data): not a correct allreduce, so verify=False.
    plan = jit.compile(algo, "spec_style", "allreduce", nranks_per_node=2, world_size=2, protocol="LL", tags=["a"],
                       verify=False)
    assert seen["spec"].world_size == 2 and seen["spec"].protocol == "LL"
    assert isinstance(seen["spec"].collective, AllReduce)
    assert json.loads(plan.json)["protocol"] == "LL"


def test_extra_keywords_forwarded_unknown_ones_reported():
    plan = jit.compile(allreduce_nvls.build, "x", "allreduce", 4, 4, num_threads_per_block=512, max_message_size=5)
    assert json.loads(plan.json)["num_threads_per_block"] == 512
    with pytest.raises(DSLError, match=r"takes no parameter\(s\) \['bogus'\]"):
        jit.compile(allreduce_nvls.build, "x", "allreduce", 4, 4, bogus=1)

    def needs_more(name, gpu_size, secret):
        raise AssertionError("not called")

    with pytest.raises(DSLError, match="cannot supply parameter 'secret'"):
        jit.compile(needs_more, "x", "allreduce", 2, 2)


def test_mismatches_are_errors():
    with pytest.raises(DSLError, match="implements 'allreduce', not 'allgather'") as error:
        line = inspect.currentframe().f_lineno + 1
        jit.compile(allreduce_nvls.build, "x", "allgather", 4, 4)
    assert str(error.value).startswith(f"{__file__}:{line}: jit.compile: the program implements")
    with pytest.raises(DSLError, match="uses protocol 'Simple', not 'LL'"):
        jit.compile(allreduce_nvls.build, "x", "allreduce", 4, 4, protocol="LL")

    def returns_nothing(name, gpu_size):
        with CollectiveProgram(name, AllReduce(gpu_size, 1, True), gpu_size):
            Rank(0)

    with pytest.raises(DSLError, match="returned NoneType, not the CollectiveProgram it built"):
        jit.compile(returns_nothing, "x", "allreduce", 2, 2)
    with pytest.raises(DSLError, match="unknown collective 'allsum'"):
        jit.compile(returns_nothing, "x", "allsum", 2, 2)


def test_cache_file_is_written_atomically(cache):
    plan = compile_seed()
    leftovers = [name for name in os.listdir(cache / "jit") if ".tmp." in name]
    assert os.path.exists(plan.path) and not leftovers
