"""The compiler verifies what it emits (mscclpp.plan_verify), source locations in plans, and the plan
pictures of python3 -m mscclpp show / mscclpp-plan show (docs/plan-verifier.md)."""
import io
import json
import os
import shutil
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET

import pytest
from dsl_test_support import HERE, REPO

from mscclpp import plan_verify
from mscclpp.cli import main
from mscclpp.dsl import jit
from mscclpp.dsl.presets import catalog
from mscclpp.language.errors import DSLError
from mscclpp.language.internal import locations

PROGRAMS = os.path.join(HERE, "programs")
EXAMPLES = os.path.join(REPO, "examples", "dsl")
BUILD = os.environ.get("MSCCLPP_BUILD_DIR", "")
SVG = "{http://www.w3.org/2000/svg}"


def tool(name):
    path = os.path.join(BUILD, "tools", name)
    return path if BUILD and os.access(path, os.X_OK) else None


needs_tools = pytest.mark.skipif(tool("mscclpp-plan") is None, reason="the C++ tools are not built (MSCCLPP_BUILD_DIR)")


def run_cli(*args, env=None):
    environment = dict(os.environ, PYTHONPATH=os.path.join(REPO, "dsl_compiler"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "mscclpp", *args], capture_output=True, text=True, env=environment)


def unsynchronised_allreduce(name="unsync", gpu_size=2):
    """An allreduce that reads the peer's input with no barrier first: the verifier refutes it."""
    from mscclpp.language import AllReduce, CollectiveProgram, MemoryChannel, Rank

    with CollectiveProgram(name, AllReduce(gpu_size, 1, True), gpu_size) as program:
        for r in range(gpu_size):
            MemoryChannel(1 - r, r).reduce(Rank(r).get_input_buffer()[0:1], [Rank(1 - r).get_input_buffer()[0:1]], tb=0)
    return program


def unsynchronised_script(directory):
    """A program file that builds unsynchronised_allreduce (a script for the CLI)."""
    script = directory / "unsync.py"
    script.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom test_verify import unsynchronised_allreduce\nunsynchronised_allreduce()\n"
        % os.path.dirname(__file__)
    )
    return script


def strip_sources(plan):
    for gpu in plan["gpus"]:
        for tb in gpu["threadblocks"]:
            for op in tb["ops"]:
                op.pop("source", None)
                for inner in op.get("ops", []):
                    inner.pop("source", None)
    return plan


@needs_tools
def test_jit_compile_refuses_a_plan_the_verifier_refutes(tmp_path, monkeypatch):
    monkeypatch.setenv("MSCCLPP_CACHE_DIR", str(tmp_path))
    with pytest.raises(DSLError, match=r"the plan verifier does not prove plan 'unsync'[^\n]*\n.*NOT PROVEN") as error:
        jit.compile(unsynchronised_allreduce, "unsync", "allreduce", 2, 2)
    assert "race: rank " in str(error.value)
    cache = tmp_path / "jit"
    assert not cache.exists() or not os.listdir(cache)  # nothing cached
    plan = jit.compile(unsynchronised_allreduce, "unsync", "allreduce", 2, 2, verify=False)
    assert os.path.exists(plan.path)
    monkeypatch.setenv("MSCCLPP_DSL_VERIFY", "0")
    assert plan_verify.check_plan_text(plan.json, "unsync.json") is None


@needs_tools
def test_jit_compile_verifies_through_the_library_or_the_tool(monkeypatch):
    text = catalog()[0].build().to_json()
    verdict = plan_verify.verify_plan_text(text, "p.json")
    assert verdict.proven is True and verdict.via == "library"
    assert verdict.report.startswith("p.json: PROVEN")
    # Without the library (symbols not in the process, no MSCCLPP_LIBRARY): the mscclpp-plan tool.
    monkeypatch.setattr(plan_verify, "_library", lambda: (None, "no library"))
    verdict = plan_verify.verify_plan_text(text, "p.json")
    assert verdict.proven is True and verdict.via == "tool"
    bad = json.dumps(json.loads(unsynchronised_allreduce().to_json()))
    verdict = plan_verify.verify_plan_text(bad, "bad.json")
    assert verdict.proven is False and "bad.json: NOT PROVEN" in verdict.report


def test_without_any_verifier_the_compiler_says_so_once(monkeypatch, capsys):
    monkeypatch.setattr(plan_verify, "_library", lambda: (None, "MSCCLPP_LIBRARY is not set"))
    from mscclpp.cli import tools

    monkeypatch.setattr(tools, "find_tool", lambda name: (None, ["PATH"]))
    monkeypatch.setattr(plan_verify, "_warned", False)
    text = catalog()[0].build().to_json()
    with pytest.warns(RuntimeWarning, match="plans are not verified: MSCCLPP_LIBRARY is not set"):
        verdict = plan_verify.check_plan_text(text, "p.json")
    assert verdict.proven is None and verdict.via == "none"
    assert "mscclpp: warning: plans are not verified" in capsys.readouterr().err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan_verify.check_plan_text(text, "p.json")  # said once only
    assert capsys.readouterr().err == ""


@needs_tools
def test_cli_compile_verifies(tmp_path):
    out = tmp_path / "p.json"
    good = run_cli("compile", os.path.join(EXAMPLES, "allgather_memory.py"), "-o", str(out))
    assert good.returncode == 0, good.stderr
    assert out.exists()
    script = unsynchronised_script(tmp_path)
    bad_out = tmp_path / "bad.json"
    bad = run_cli("compile", str(script), "-o", str(bad_out))
    assert bad.returncode == 1 and not bad_out.exists()
    assert "the plan verifier does not prove 'unsync'; nothing written" in bad.stderr
    assert "race: rank " in bad.stderr
    assert "test_verify.py:" in bad.stderr  # the findings name the DSL lines, by default
    assert '"source"' not in out.read_text()  # which the plan written carries only when asked
    forced = run_cli("compile", str(script), "-o", str(bad_out), "--no-verify")
    assert forced.returncode == 0 and bad_out.exists()


def test_source_locations_change_nothing_else():
    checked = 0
    for preset in catalog()[::7]:
        plain = preset.build().to_json()
        assert '"source"' not in plain
        with locations.capture():
            located = json.loads(preset.build().to_json())
        sources = [op.get("source") for gpu in located["gpus"] for tb in gpu["threadblocks"] for op in tb["ops"]]
        assert any(s and "mscclpp/dsl/presets/" in s for s in sources)
        assert json.dumps(strip_sources(located), separators=(",", ":")) == json.dumps(json.loads(plain),
                                                                                       separators=(",", ":"))
        checked += 1
    assert checked >= 20


@needs_tools
def test_cli_compile_source_locations_name_the_program_lines(tmp_path):
    out = tmp_path / "p.json"
    result = run_cli("compile", os.path.join(EXAMPLES, "allgather_memory.py"), "-o", str(out), "--source-locations")
    assert result.returncode == 0, result.stderr
    plan = json.loads(out.read_text())
    sources = {op["source"] for op in plan["gpus"][0]["threadblocks"][0]["ops"] if "source" in op}
    lines = {s.rsplit(":", 1)[1] for s in sources}
    assert all(s.endswith(tuple(f"allgather_memory.py:{n}" for n in lines)) for s in sources)
    with open(os.path.join(EXAMPLES, "allgather_memory.py")) as f:
        text = f.read().splitlines()
    assert any("channel.put(" in text[int(n) - 1] for n in lines)


def lanes_of(svg_path):
    root = ET.parse(svg_path).getroot()
    assert root.tag == SVG + "svg"
    return [(int(g.get("data-rank")), int(g.get("data-tb"))) for g in root.iter(SVG + "g") if g.get("class") == "lane"]


@needs_tools
def test_show_draws_one_lane_per_rank_and_threadblock(tmp_path):
    plan_file = os.path.join(REPO, "plans", "allreduce_rsag_n4_ip.json")
    with open(plan_file) as f:
        plan = json.load(f)
    expected = [(g["id"], tb["id"]) for g in plan["gpus"] for tb in g["threadblocks"]]
    svg = tmp_path / "p.svg"
    result = run_cli("show", plan_file, "-o", str(svg))
    assert result.returncode == 0, result.stderr
    assert lanes_of(svg) == expected
    root = ET.parse(svg).getroot()
    ops = [g for g in root.iter(SVG + "g") if g.get("class") == "op"]
    assert len(ops) == sum(1 for g in plan["gpus"] for tb in g["threadblocks"] for op in tb["ops"] if op["name"] != "nop")
    assert any(p.get("class") == "signal" for p in root.iter(SVG + "path"))
    assert "PROVEN" in "".join(root.itertext())
    filtered = tmp_path / "r.svg"
    assert run_cli("show", plan_file, "-o", str(filtered), "--ranks", "1,3").returncode == 0
    assert lanes_of(filtered) == [lane for lane in expected if lane[0] in (1, 3)]


@needs_tools
def test_show_draws_a_dsl_program_with_its_lines_and_findings(tmp_path):
    script = unsynchronised_script(tmp_path)
    page = tmp_path / "p.html"
    result = run_cli("show", str(script), "-o", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script>" in html and "<svg" in html
    assert "NOT PROVEN" in html
    assert "source: " in html and "test_verify.py:" in html  # the op's line in the program
    assert 'stroke="#dc2626"' in html  # the racing ops outlined


@needs_tools
@pytest.mark.skipif(tool("mscclpp-emulate") is None, reason="mscclpp-emulate is not built")
def test_dropped_nops_pass_emulation_but_not_the_verifier(tmp_path):
    """On the CPU backend a threadblock is one thread, so a missing block-wide barrier (nop) changes
    nothing there; on a GPU the signal after a put would release only one thread's part of it."""
    caught = 0
    for name in ("allgather_put_n2_ip", "allreduce_allpairs_n2_ip", "alltoall_put_n2_oop", "reducescatter_put_n2_ip"):
        with open(os.path.join(REPO, "plans", f"{name}.json")) as f:
            plan = json.load(f)
        ops = plan["gpus"][0]["threadblocks"][0]["ops"]
        index = next(i for i in range(1, len(ops) - 1)
                     if ops[i]["name"] == "nop" and "dst_buff" in ops[i - 1] and ops[i + 1]["name"] == "signal")
        del ops[index]
        mutant = tmp_path / f"{name}_mutant.json"
        mutant.write_text(json.dumps(plan))
        size = str(max(plan.get("min_message_size", 0), 1 << 20))
        emulated = subprocess.run([tool("mscclpp-emulate"), str(mutant), "--ranks", "2", "--size", size,
                                   "--iterations", "3"], capture_output=True, text=True)
        assert emulated.returncode == 0, emulated.stdout + emulated.stderr
        verified = subprocess.run([tool("mscclpp-plan"), "verify", str(mutant)], capture_output=True, text=True)
        assert verified.returncode == 1
        assert "race: " in verified.stdout and "with no nop between" in verified.stdout
        caught += 1
    assert caught == 4


def box_texts(svg_path):
    """(rank, tb) -> the titles of its op boxes, in order, and every box with its badge, if any."""
    root = ET.parse(svg_path).getroot()
    titles, boxes = {}, []
    for g in root.iter(SVG + "g"):
        if g.get("class") != "op":
            continue
        rects = [r for r in g.iter(SVG + "rect")]
        texts = [t.text for t in g.iter(SVG + "text")]
        titles.setdefault((int(g.get("data-rank")), int(g.get("data-tb"))), []).append(texts[0])
        box = next(r for r in rects if r.get("class") is None and r.get("width") != "3")
        badge = next((r for r in rects if r.get("class") == "badge"), None)
        boxes.append((box, badge, texts))
    return titles, boxes


@needs_tools
def test_show_picture_titles_match_the_text_summary_and_fit(tmp_path):
    # Each box's title is the summary's op word ("rresx3": three peers), unclipped.
    from mscclpp.cli.plan_files import show as summary

    plan_file = os.path.join(REPO, "plans", "allreduce_allpairs_n4_ip.json")
    svg = tmp_path / "p.svg"
    assert run_cli("show", plan_file, "-o", str(svg)).returncode == 0
    titles, boxes = box_texts(svg)
    text = io.StringIO()
    summary(plan_file, text)
    rank = -1
    for line in text.getvalue().splitlines():
        if line.startswith("rank "):
            rank = int(line.split()[1].rstrip(":"))
        elif line.startswith("  tb "):
            tb, words = line.split(":", 1)
            expanded = []
            for word in words.split():
                name, _, times = word.partition("*")
                expanded += [name] * (int(times) if times else 1)
            assert titles[(rank, int(tb.split()[1]))] == [w for w in expanded if w != "nop"]
    assert any(t.startswith("rresx3") for ts in titles.values() for t in ts)
    assert not any(t.endswith("~") for _, _, texts in boxes for t in texts)


@needs_tools
def test_show_finding_badges_stay_inside_their_boxes(tmp_path):
    svg = tmp_path / "p.svg"
    assert run_cli("show", str(unsynchronised_script(tmp_path)), "-o", str(svg)).returncode == 0
    badges = 0
    for box, badge, _ in box_texts(svg)[1]:
        if badge is None:
            continue
        badges += 1
        x, y, w, h = (float(box.get(k)) for k in ("x", "y", "width", "height"))
        bx, by, bw, bh = (float(badge.get(k)) for k in ("x", "y", "width", "height"))
        assert x <= bx and bx + bw <= x + w and y <= by and by + bh <= y + h
    assert badges > 0
