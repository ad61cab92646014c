"""Shared helpers of the DSL tests (a plain module: test files import it by name)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tests", "support"))
import reference_plans  # noqa: E402 - after the path it lives on

# MSCCL++'s compiled examples, unpacked from the archive in tests/data/reference-plans.
REFERENCE_DIR = os.path.join(reference_plans.directory(), "mscclpp", "generated")


def compile_plan(program, **kwargs):
    """The plan of a CollectiveProgram as a dict."""
    return json.loads(program.to_json(**kwargs))


def op_names(plan, rank=0, tb=0):
    return [op["name"] for op in plan["gpus"][rank]["threadblocks"][tb]["ops"]]
