"""Puts this folder (dsl_test_support), programs/ (the seed and CLI test programs) and, when pytest
is started on this folder alone, dsl_compiler/ on sys.path (tests/python/conftest.py does the
latter for the whole Python suite)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "dsl_compiler")
for path in (PACKAGE_ROOT, HERE, os.path.join(HERE, "programs")):
    if path not in sys.path:
        sys.path.insert(0, path)
