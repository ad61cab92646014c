"""MSCCLPPLang, the DSL of MSCCL++ 0.5-0.6: ``chunk(rank, buffer, index, size)`` references.

Their operations run inside ``with MSCCLPPProgram(...):``, with ``Json()`` and ``Check()``.
This is a front end only: ref.py checks and records each call, and lower.py turns the records
into the compiler's IR when the program compiles. So MSCCLPPLang programs get the same passes,
plan format and errors as current-DSL ones; docs/dsl-compiler.md ("MSCCLPPLang") says what works.
"""
from .program import Check, Json, MSCCLPPProgram, chunk, rank
from .ref import RankRef, Ref

__all__ = ["Check", "Json", "MSCCLPPProgram", "RankRef", "Ref", "chunk", "rank"]
