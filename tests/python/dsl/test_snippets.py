"""Every snippet of the DSL concepts, the DSL guide and MSCCLPPLang, and the integration guide's allreduce,
compiles: completed minimally, every DSL call unchanged."""
import json
import subprocess

import dsl_concepts_snippets
import dsl_guide_snippets
import integration_guide_allreduce
import mscclpplang_snippets
import pytest


@pytest.mark.parametrize("snippet", dsl_concepts_snippets.SNIPPETS + dsl_guide_snippets.SNIPPETS,
                         ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_snippet_compiles(snippet):
    plan = json.loads(snippet().to_json())
    assert plan["format_version"] == 1
    assert any(tb["ops"] for gpu in plan["gpus"] for tb in gpu["threadblocks"])


@pytest.mark.parametrize("snippet", mscclpplang_snippets.SNIPPETS, ids=lambda f: f"mscclpplang_snippets.{f.__name__}")
def test_mscclpplang_snippet_leaves_the_collective_result(snippet, tmp_path):
    program = snippet()
    plan = json.loads(program.to_json())
    assert plan["format_version"] == 1 and program.model == "legacy"
    if snippet is mscclpplang_snippets.chunk_snippet:
        return  # a fragment: one copy, not a collective
    assert program.collective.check(program)
    from mscclpp.cli.tools import find_tool

    emulate, _ = find_tool("mscclpp-emulate")
    if emulate is None:
        pytest.skip("mscclpp-emulate not built (set MSCCLPP_BUILD_DIR)")
    path = tmp_path / "mscclpplang.json"
    path.write_text(program.to_json(indent=None))
    size = plan["gpus"][0]["output_chunks" if plan["collective"] == "allgather" else "input_chunks"] * 512
    result = subprocess.run([emulate, str(path), "--ranks", "2", "--size", str(size), "--iterations", "3"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_guide_allreduce_pipelines_semaphores_and_switch():
    plan = json.loads(dsl_guide_snippets.allreduce_snippet().to_json())
    tbs = plan["gpus"][0]["threadblocks"]
    bodies = [[op["name"] for op in tb["ops"][0]["ops"]] for tb in tbs]
    assert bodies[1] == ["sem_acquire", "nop", "glres", "nop", "signal", "nop", "sem_release", "nop"]
    assert bodies[2][:5] == ["nop", "sem_acquire", "nop", "wait", "nop"]


def test_integration_guide_allreduce_plan():
    program = integration_guide_allreduce.allreduce_example("allreduce_nvls", 8, 1024, 1 << 20, 48 << 30)
    plan = json.loads(program.to_json())
    assert (plan["name"], plan["collective"], len(plan["gpus"])) == ("allreduce_nvls", "allreduce", 8)
    assert len(plan["gpus"][0]["threadblocks"]) == 8  # instances=8
    ops = [op["name"] for op in plan["gpus"][3]["threadblocks"][5]["ops"]]
    assert ops == ["nop", "rlxsignal", "nop", "rlxwait", "nop", "glres", "nop", "rlxsignal", "nop", "rlxwait", "nop"]
    glres = plan["gpus"][3]["threadblocks"][5]["ops"][5]
    assert glres["src_buff"] == [{"switch_channel_id": 0, "index": 3 * 8 + 5, "size": 1}]


def test_integration_guide_plan_passes_the_emulator(tmp_path):
    from mscclpp.cli.tools import find_tool

    emulate, _ = find_tool("mscclpp-emulate")
    if emulate is None:
        pytest.skip("mscclpp-emulate not built (set MSCCLPP_BUILD_DIR)")
    path = tmp_path / "guide_allreduce.json"
    path.write_text(integration_guide_allreduce.allreduce_example("allreduce_nvls", 8, 1024, 0, 2**64 - 1).to_json())
    result = subprocess.run([emulate, str(path), "--ranks", "8", "--size", str(1 << 20), "--iterations", "2"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
