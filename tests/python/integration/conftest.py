"""Puts this folder on sys.path so the tests import integration_support by name (the DSL tests do the
same with dsl_test_support)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
