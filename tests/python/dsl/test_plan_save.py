"""mscclpp.plan.save: a compiled plan written into the user's plan directory, where processes started
later (the NCCL shim among them) find it; whole files only, the tags given joined to the plan's."""
import json
import os

import pytest

import mscclpp.plan
from mscclpp.plan import PlanError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLAN = os.path.join(REPO, "plans", "allreduce_ll_n2_ip.json")


class Compiled:  # what jit.compile returns, as far as save reads it
    path = PLAN
    tags = frozenset({"mine"})


def test_save_writes_into_the_plan_cache_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("MSCCLPP_PLAN_DIR", raising=False)
    monkeypatch.setenv("MSCCLPP_CACHE_DIR", str(tmp_path / "cache"))
    path = mscclpp.plan.save(Compiled(), tags=["fast"])
    assert path == str(tmp_path / "cache" / "plans" / "allreduce_ll_n2_ip.json")
    saved = json.loads(open(path).read())
    original = json.loads(open(PLAN).read())
    assert saved["tags"] == original["tags"] + ["fast", "mine"]
    assert {k: v for k, v in saved.items() if k != "tags"} == {k: v for k, v in original.items() if k != "tags"}
    assert os.listdir(tmp_path / "cache" / "plans") == ["allreduce_ll_n2_ip.json"]  # no leftover temporary


def test_save_goes_to_the_first_plan_dir_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("MSCCLPP_PLAN_DIR", f"{tmp_path / 'first'}:{tmp_path / 'second'}")
    assert mscclpp.plan.save(PLAN) == str(tmp_path / "first" / "allreduce_ll_n2_ip.json")
    assert mscclpp.plan.save(PLAN, directory=str(tmp_path / "x")) == str(tmp_path / "x" / "allreduce_ll_n2_ip.json")


def test_save_refuses_a_name_that_is_no_file_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(json.loads(open(PLAN).read()), name="../escape")))
    with pytest.raises(PlanError, match="cannot name a file"):
        mscclpp.plan.save(str(bad), directory=str(tmp_path / "out"))
    assert not (tmp_path / "escape.json").exists()
