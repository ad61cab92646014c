"""Puts this folder (dsl_test_support), programs/ (the test programs) and, when pytest is started on
this folder alone, dsl_compiler/ and examples/dsl/ on sys.path (tests/python/conftest.py does the
latter for the whole Python suite)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
for path in (os.path.join(REPO_ROOT, "dsl_compiler"), os.path.join(REPO_ROOT, "examples", "dsl"), HERE,
             os.path.join(HERE, "programs")):
    if path not in sys.path:
        sys.path.insert(0, path)
