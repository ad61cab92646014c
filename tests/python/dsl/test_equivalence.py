"""Our programs vs the plans MSCCL++'s compiler generated from its examples (INDEX.tsv)."""
import json
import os

import pytest
from dsl_test_support import REFERENCE_DIR
from reference_corpus import CORPUS, WARNED, first_difference, normalize

from mscclpp.language.errors import DSLWarning



def test_reference_corpus_is_present():
    assert os.path.isdir(REFERENCE_DIR), f"vendored corpus missing: {REFERENCE_DIR}"


def test_corpus_covers_every_generated_plan():
    with open(os.path.join(REFERENCE_DIR, "INDEX.tsv")) as f:
        listed = {line.split("\t")[0] for line in f if line.strip()}
    assert listed == set(CORPUS) | set(WARNED)


@pytest.mark.parametrize("plan_file", sorted(CORPUS))
def test_plan_is_equivalent(plan_file):
    build, kwargs = CORPUS[plan_file]
    ours = normalize(json.loads(build(**kwargs).to_json()))
    with open(os.path.join(REFERENCE_DIR, plan_file)) as f:
        theirs = normalize(json.load(f))
    assert first_difference(ours, theirs) is None
    assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)


@pytest.mark.parametrize("plan_file", sorted(WARNED))
def test_unmatched_fused_signals_compile_with_a_warning(plan_file):
    build, kwargs, message = WARNED[plan_file]
    with pytest.warns(DSLWarning) as caught:
        ours = normalize(json.loads(build(**kwargs).to_json()))
    assert len(caught) == 1
    assert message in str(caught[0].message)
    assert caught[0].filename.endswith("unit_programs.py")
    with open(os.path.join(REFERENCE_DIR, plan_file)) as f:
        theirs = normalize(json.load(f))
    assert first_difference(ours, theirs) is None


def test_normalize_keeps_real_differences():
    build, kwargs = CORPUS["sn_allgather.json"]
    ours = normalize(json.loads(build(**kwargs).to_json()))
    changed = json.loads(json.dumps(ours))
    changed["gpus"][0]["threadblocks"][0]["ops"][5]["src_buff"][0]["index"] = 1
    assert first_difference(ours, changed) == "plan.gpus[0].threadblocks[0].ops[5].src_buff[0].index: 0 != 1"
