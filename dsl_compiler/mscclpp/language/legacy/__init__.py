"""MSCCLPPLang, the DSL of MSCCL++ 0.5-0.6 (seed 002): ``chunk(rank, buffer, index, size)``
references and their operations inside ``with MSCCLPPProgram(...):``, ``Json()``, ``Check()``.

A front end only: calls are checked and recorded (ref.py), then lowered to the compiler's IR
(lower.py) when the program compiles, so MSCCLPPLang programs get the same passes, plan format and
error reporting as current-DSL ones. docs/dsl-compiler.md ("MSCCLPPLang") describes what is supported.
"""
from .program import Check, Json, MSCCLPPProgram, chunk, rank
from .ref import RankRef, Ref

__all__ = ["Check", "Json", "MSCCLPPProgram", "RankRef", "Ref", "chunk", "rank"]
