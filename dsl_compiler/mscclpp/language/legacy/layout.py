"""Buffer layout of the collectives as MSCCLPPLang defines them.

Two things differ from the current DSL (collectives.py), both as the legacy compiler had them:
- sizes: a legacy ``AllReduce(n, f, inplace)`` has f chunks per rank, not n*f (the other
  collectives have the same sizes in both models);
- in place, a chunk reference is moved into the buffer it aliases when it is created (an in-place
  allreduce's output *is* its input; an in-place allgather's input is output chunk rank*f..), so a
  program may name either buffer and every reference says where the data really is.
"""
from ..types import BufferType

_INPUT = BufferType.input
_OUTPUT = BufferType.output


def legacy_sizes(collective):
    """(input chunks, output chunks) of every rank where MSCCLPPLang's definition differs from the
    current DSL's, else None (the program keeps the buffers it has)."""
    if collective.name == "allreduce":
        return collective.chunk_factor, collective.chunk_factor
    return None


def legacy_location(collective, rank, buffer, index):
    """(buffer, index) a reference really names: in place, input and output alias as MSCCLPPLang's
    collectives declared (allreduce, sendrecv: output is input; allgather, gather: input is output
    part rank; reducescatter, scatter: output is input part rank)."""
    if not collective.inplace:
        return buffer, index
    name = collective.name
    f = collective.chunk_factor
    if name in ("allreduce", "sendrecv") and buffer is _OUTPUT:
        return _INPUT, index
    if name in ("allgather", "gather") and buffer is _INPUT:
        return _OUTPUT, index + rank * f
    if name in ("reducescatter", "scatter") and buffer is _OUTPUT:
        return _INPUT, index + rank * f
    return buffer, index
