"""Shared helpers of the DSL tests (a plain module: test files import it by name)."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The corpus is vendored in the repository (CI has only the repository).
REFERENCE_DIR = os.path.join(REPO, "tests", "data", "reference-plans", "mscclpp", "generated")


def compile_plan(program, **kwargs):
    """The plan of a CollectiveProgram as a dict."""
    return json.loads(program.to_json(**kwargs))


def op_names(plan, rank=0, tb=0):
    return [op["name"] for op in plan["gpus"][rank]["threadblocks"][tb]["ops"]]
