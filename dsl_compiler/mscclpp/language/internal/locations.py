"""Source locations in plans (an optional per-op "source" key, docs/plan-verifier.md): off by default,
so plans stay byte-identical; on inside ``capture()`` or with MSCCLPP_DSL_SOURCE_LOCATIONS=1.

A program created while capture is on records, for each op it is given, the user's file:line (the
first frame outside the language package). It then takes the DSL's general path for every call (the
fast paths record runs of ops, not ops), which emits the same plan. Fusion keeps the location of the
first op of a fused group; the barriers the passes insert carry none.
"""
import contextlib
import os

from ..._env import env_bool
from ..errors import user_location

_depth = 0


def enabled():
    return _depth > 0 or env_bool("MSCCLPP_DSL_SOURCE_LOCATIONS", False)


@contextlib.contextmanager
def capture(on=True):
    """Programs created inside record source locations (when on)."""
    global _depth
    _depth += 1 if on else 0
    try:
        yield
    finally:
        _depth -= 1 if on else 0


class Locations:
    """op -> "file:line", keeping the ops alive so their ids stay theirs until emission."""

    __slots__ = ("_by_id",)

    def __init__(self):
        self._by_id = {}

    def record(self, op):
        filename, line = user_location(2)
        try:
            rel = os.path.relpath(filename)
            if not rel.startswith(".."):
                filename = rel
        except ValueError:
            pass
        self._by_id[id(op)] = (op, f"{filename}:{line}")

    def inherit(self, new, old):
        """new (made by fusing old with a neighbour) takes old's location unless it has its own."""
        if new is not old and id(new) not in self._by_id and id(old) in self._by_id:
            self._by_id[id(new)] = (new, self._by_id[id(old)][1])

    def of(self, op):
        entry = self._by_id.get(id(op))
        return entry[1] if entry is not None and entry[0] is op else None


# The table of the program being compiled, for passes.fuse; None otherwise.
ACTIVE = None
