"""Example DSL programs.

``reference_corpus`` maps every plan in shared/reference-plans/mscclpp/generated/ to the program
here that expresses the same algorithm (tests/python/dsl/test_equivalence.py compiles each and
compares). Each module also runs as a script: ``python3 -m mscclpp compile <file> --num_gpus 8``.
"""
