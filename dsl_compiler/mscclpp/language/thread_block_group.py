"""ThreadBlockGroup: several threadblocks that share one op, each taking a slice of every reference."""
from typing import Any, Dict, List  # noqa: F401 (re-exported: MSCCL++'s star import gives them)

from .errors import DSLError, user_location

__all__ = ["ThreadBlockGroup", "Any", "Dict", "List"]


class ThreadBlockGroup:
    def __init__(self, tb_list):
        tb_list = list(tb_list)
        if not tb_list:
            raise DSLError("a ThreadBlockGroup needs at least one threadblock", user_location())
        self._tb_id = {}
        for i, tb in enumerate(tb_list):
            if not isinstance(tb, int) or tb < 0:
                raise DSLError(f"threadblock {tb!r} is not a non-negative integer", user_location())
            if tb in self._tb_id:
                raise DSLError(f"threadblock {tb} appears twice in the group {tb_list}", user_location())
            self._tb_id[tb] = i
        self.tb_list = tb_list

    def get_internal_id(self, tb):
        if tb not in self._tb_id:
            raise DSLError(f"threadblock {tb} is not in the group {self.tb_list}", user_location())
        return self._tb_id[tb]

    def numtb(self):
        return len(self.tb_list)

    def __len__(self):
        return len(self.tb_list)


def threadblocks(tb, tb_group):
    """[(tb, tbg_info or None)] for an op given ``tb=`` (an int or a group) or ``tb_group=``."""
    if tb_group is None and isinstance(tb, ThreadBlockGroup):
        tb, tb_group = None, tb
    if tb is not None:
        if tb_group is not None:
            raise DSLError("give either tb= or tb_group=, not both", user_location())
        if type(tb) is not int or tb < 0:
            raise DSLError(f"tb must be a non-negative integer threadblock id, got {tb!r}", user_location())
        return ((tb, None),)
    if tb_group is None:
        raise DSLError("missing threadblock: give tb= (an id) or tb_group= (a ThreadBlockGroup)", user_location())
    size = len(tb_group.tb_list)
    return tuple((t, (i, size)) for i, t in enumerate(tb_group.tb_list))
