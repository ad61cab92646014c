"""Puts this folder and examples/dsl/ on sys.path so the tests import integration_support and the DSL
examples by name (the DSL tests do the same with dsl_test_support)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (HERE, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples", "dsl")):
    if path not in sys.path:
        sys.path.insert(0, path)
