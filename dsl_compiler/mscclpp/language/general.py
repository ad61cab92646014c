"""JSON(): compile the active program and return its plan as compact JSON text."""
from .internal.state import get_program

__all__ = ["JSON"]


def JSON(indent=None):
    return get_program().to_json(indent=indent)
