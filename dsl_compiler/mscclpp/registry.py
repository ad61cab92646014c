"""ExecutionPlanRegistry: choosing a plan for a collective call from Python.

    registry = mscclpp.ExecutionPlanRegistry()
    handle = registry.select(collective="allreduce", world_size=8, n_ranks_per_node=8,
                             send_buffer=ptr, recv_buffer=ptr, message_size=nbytes)
    executor.execute(rank, ptr, ptr, nbytes, nbytes, dtype, handle.plan, stream)

It is a view of the runtime's one process-wide registry (plan_api.h): directory plans, plans
registered at run time and the selector are all seen here, and by the NCCL shim. The objects hold
no state of their own, so any number of them see the same registry.
"""
import ctypes
from typing import Callable, Iterable, List, Optional

from . import _capi
from . import plan as _plan
from .dtypes import DataType, ReduceOp, dtype_to_mscclpp_dtype

__all__ = ["ExecutionPlanRegistry", "ExecutionPlanHandle", "ExecutionPlan"]

_NAME_LENGTH = 256
_REDUCING = ("allreduce", "reducescatter", "reduce")
_ROOTED = ("broadcast", "reduce", "gather", "scatter")


class ExecutionPlan(_capi.OwnedHandle):
    """A chosen plan, as Executor.execute takes it (the C plan handle). Each rank loads its part of
    the plan at its first execute; the handle is released when this object is garbage collected or
    closed. Thread-safe: the runtime serialises the loads."""

    _destroy = "mscclppPlanHandleDestroy"

    def __init__(self, handle: ctypes.c_void_p, name: str):
        super().__init__(handle)
        self.name = name

    def _closed_what(self) -> str:
        return f"execution plan '{self.name}'"

    def __repr__(self):
        return f"<mscclpp ExecutionPlan '{self.name}'>"


class ExecutionPlanHandle:
    """What select returns: ``plan`` for Executor.execute, plus the plan's name, tags and the
    registry's reason for choosing it (MSCCL++'s ExecutionPlanHandle has id, tags and plan)."""

    def __init__(self, plan: ExecutionPlan, request: _plan.Request, reason: str):
        self.plan = plan
        self.request = request
        self.reason = reason
        self._info: Optional[_plan.PlanHandle] = None

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def id(self) -> str:  # MSCCL++'s spelling: plans are identified by their unique name here
        return self.plan.name

    @property
    def info(self) -> _plan.PlanHandle:
        """The registered plan's summary (collective, protocol, size range, tags, source)."""
        if self._info is None:
            found = next((p for p in _plan.plans() if p.name == self.plan.name), None)
            if found is None:
                raise LookupError(f"plan '{self.plan.name}' is no longer registered")
            self._info = found
        return self._info

    @property
    def tags(self) -> frozenset:
        return self.info.tags

    @property
    def collective(self) -> str:
        return self.request.collective

    def __repr__(self):
        request = self.request
        return f"<mscclpp ExecutionPlanHandle '{self.name}' for {request.collective} of {request.message_size} bytes>"


class ExecutionPlanRegistry:
    """The process-wide plan registry, seen from Python (see the module docstring)."""

    def __init__(self):
        self.last_reason = ""  # the registry's reason for the latest select on this object

    def select(
        self,
        collective: str,
        world_size: int,
        n_ranks_per_node: int,
        send_buffer: int,
        recv_buffer: int,
        message_size: int,
        *,
        dtype=None,
        red_op: Optional[int] = None,
        root: Optional[int] = None,
        in_place: Optional[bool] = None,
        tags: Iterable[str] = (),
    ) -> Optional[ExecutionPlanHandle]:
        """The plan the registry (or the installed selector) chooses for this call, or None.

        ``message_size`` is in bytes: the input size, for allgather the output size, for gather and
        scatter the per-rank part, as plans state their size ranges. Keywords beyond MSCCL++'s:
        ``dtype`` (anything dtype_to_mscclpp_dtype takes; default uint8, the weakest divisibility
        rule: pass the real one for an exact choice), ``red_op`` (ReduceOp; default sum for reducing
        collectives), ``root`` (rooted collectives, default 0), ``in_place`` (default: send_buffer ==
        recv_buffer) and ``tags``, which the plan must all carry. A request the registry cannot judge
        (unknown collective, ranks per node outside 1..world_size) raises InvalidArgumentError; "no
        plan" is None, and ``last_reason`` says why.
        """
        if not isinstance(collective, str):
            raise TypeError(f"select: collective must be a name such as 'allreduce', got {collective!r}")
        for name, value in (("world_size", world_size), ("n_ranks_per_node", n_ranks_per_node),
                            ("message_size", message_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"select: {name}={value!r} must be a non-negative integer")
        collective = collective.lower()
        data_type = DataType.uint8 if dtype is None else dtype_to_mscclpp_dtype(dtype)
        if red_op is None:
            red_op = int(ReduceOp.sum) if collective in _REDUCING else -1
        if root is None:
            root = 0 if collective in _ROOTED else -1
        if in_place is None:
            in_place = send_buffer == recv_buffer
        if isinstance(tags, str):  # one tag, not its characters
            tags = (tags,)
        request = _plan.Request(
            collective=collective,
            world_size=world_size,
            nranks_per_node=n_ranks_per_node,
            message_size=message_size,
            in_place=bool(in_place),
            dtype=int(data_type),
            red_op=int(red_op),
            root=int(root),
            send_buffer=_pointer(send_buffer, "send_buffer"),
            recv_buffer=_pointer(recv_buffer, "recv_buffer"),
            tags=frozenset(tags),
        )
        lib = _capi.load()
        c_request = _plan._c_request(request)
        handle = ctypes.c_void_p()
        name = ctypes.create_string_buffer(_NAME_LENGTH)
        reason = _capi.error_buffer()
        status = lib.mscclppPlanSelectHandle(ctypes.byref(c_request), ctypes.byref(handle), name, _NAME_LENGTH,
                                             reason, len(reason))
        _capi.check(status, reason, f"ExecutionPlanRegistry.select({collective}, {message_size} bytes)")
        self.last_reason = _capi.text(reason)
        if status == 0:
            return None
        return ExecutionPlanHandle(ExecutionPlan(handle, _capi.text(name)), request, self.last_reason)

    # mscclpp.plan's registration and selectors, under MSCCL++'s method names.
    def register_plan(self, plan, tags: Optional[Iterable[str]] = None) -> None:
        """Registers a compiled plan (jit.compile's result) or a plan file path."""
        _plan.register(plan, tags=tags)

    def register_json(self, text: str, source_name: str = "<memory>", tags: Optional[Iterable[str]] = None) -> None:
        _plan.register_json(text, source_name=source_name, tags=tags)

    def unregister(self, name: str) -> None:
        _plan.unregister(name)

    def set_selector(self, selector: Optional[Callable]) -> None:
        """``selector(plans, request) -> PlanHandle | None`` for every later selection (None removes it)."""
        _plan.set_selector(selector)

    def plans(self, collective: Optional[str] = None) -> List[_plan.PlanHandle]:
        """The registered plans in registry order (of one collective when given)."""
        return [p for p in _plan.plans() if collective is None or p.collective == collective]

    def get(self, name: str) -> Optional[_plan.PlanHandle]:
        """The registered plan of that name, or None."""
        return next((p for p in _plan.plans() if p.name == name), None)


def _pointer(value, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"select: {what} must be an address (a non-negative int, e.g. tensor.data_ptr()), "
                        f"got {value!r}")
    return value
