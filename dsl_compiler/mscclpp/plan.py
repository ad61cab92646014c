"""Registering plans with the runtime of this process and choosing among them.

    plan = mscclpp.dsl.jit.compile(algo, ...)
    mscclpp.plan.register(plan)                 # this process
    mscclpp.plan.register(plan, save=True)      # and every later one: saved into the user's plan directory
    mscclpp.plan.set_selector(lambda plans, req: ...)

Everything goes through the C plan registry (plan_api.h) that ``mscclpp._runtime_lib.load()``
finds: the same registry the NCCL shim and the executor use.
"""
import ctypes
import json
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from . import _runtime_lib as rt

__all__ = ["register", "save", "register_json", "unregister", "set_selector", "plans", "select", "PlanHandle", "Request", "PlanError"]

_ERROR_LENGTH = 1024


class PlanError(RuntimeError):
    """The registry refused a request; the message is the registry's. ``status`` is the mscclppStatus
    (runtime/include/mscclpp/status.h: e.g. -12 mscclppAlreadyExists for a name registered twice,
    -11 mscclppNotFound, -8 mscclppInvalidPlan)."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PlanHandle:
    """A registered plan as selectors see it."""

    name: str
    collective: str
    protocol: str
    world_size: int
    in_place: bool
    root: int
    min_message_size: int
    max_message_size: int
    tags: frozenset = field(default_factory=frozenset)
    source: str = ""
    index: int = -1  # position among the candidates of one selection


@dataclass(frozen=True)
class Request:
    """What a collective call asks for. message_size is in bytes (allgather: the output size; gather and
    scatter: the per-rank part)."""

    collective: str
    world_size: int
    nranks_per_node: int
    message_size: int
    in_place: bool
    dtype: int
    red_op: int
    root: int
    send_buffer: int
    recv_buffer: int
    tags: frozenset = frozenset()  # tags the chosen plan must all carry

    @property
    def message_bytes(self):
        return self.message_size


def _text(value):
    return value.decode("utf-8", "replace") if value else ""


def _handle(info, index):
    tags = frozenset(_text(info.tags[i]) for i in range(info.nTags)) if info.nTags > 0 else frozenset()
    return PlanHandle(
        name=_text(info.name),
        collective=_text(info.collective),
        protocol=_text(info.protocol),
        world_size=info.worldSize,
        in_place=bool(info.inPlace),
        root=info.root,
        min_message_size=info.minMessageBytes,
        max_message_size=info.maxMessageBytes,
        tags=tags,
        source=_text(info.source),
        index=index,
    )


def _tag_array(tags):
    tags = sorted(tags or ())
    encoded = [t.encode() for t in tags]
    array = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
    return array, len(encoded)


def _check(status, buffer, what):
    if status != 0:
        raise PlanError(f"{what} failed ({status}): {_text(buffer.value)}", status)


def save(plan, directory=None, tags=None):
    """Writes a plan (as ``register`` takes it) into a plan directory as ``<name>.json``, so that
    every process started later finds it, the NCCL shim preloaded into an unchanged program too:
    by default the directory the runtime reads first, the first ``$MSCCLPP_PLAN_DIR`` entry, else
    the user's plan cache (``$MSCCLPP_CACHE_DIR/plans``, else ``~/.cache/mscclpp/plans``). Plans
    there rank before the installed defaults. ``tags`` join the plan's own in the file. The file
    is replaced whole (written aside, then renamed), so a process scanning meanwhile never reads
    half of it. Returns the path written; needs no runtime."""
    from . import _paths

    directory = directory or _paths.default_install_dir()
    if directory is None:
        raise PlanError("no plan directory to save into: set MSCCLPP_CACHE_DIR or MSCCLPP_PLAN_DIR (this user "
                        "has no home directory)")
    source = str(getattr(plan, "path", plan))
    with open(source, encoding="utf-8") as f:
        document = json.load(f)
    name = document.get("name")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise PlanError(f"{source}: the plan's name {name!r} cannot name a file")
    extra = set(getattr(plan, "tags", ()) or ()) | set(tags or ())
    if extra:
        document["tags"] = list(document.get("tags", [])) + sorted(extra - set(document.get("tags", [])))
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, name + ".json")
    fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(document, separators=(",", ":")) + "\n")
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
    return target


_save = save  # register's keyword of the same name hides it there


def register(plan, tags=None, save=False):
    """Registers a plan: an object with ``path`` (and ``tags``) as jit.compile returns, or a path.

    ``tags`` adds to the plan's own tags. With ``save=True`` the plan is first saved into the
    user's plan directory (``save()``), so that later processes find it too, and registered from
    there; the copy this process's scan may have found there already (the same file, saved by an
    earlier run) is replaced, so a job that saves its plan at every start runs again.
    """
    lib = rt.load()
    path = getattr(plan, "path", plan)
    all_tags = set(getattr(plan, "tags", ()) or ()) | set(tags or ())
    if save:
        path = _save(plan, tags=tags)
        all_tags = set()  # the saved file holds them
        with open(path, encoding="utf-8") as f:
            name = json.load(f)["name"]
        if any(p.name == name and os.path.realpath(p.source) == os.path.realpath(path) for p in plans()):
            unregister(name)
    array, count = _tag_array(all_tags)
    error = ctypes.create_string_buffer(_ERROR_LENGTH)
    status = lib.mscclppPlanRegisterFile(str(path).encode(), array, count, error, _ERROR_LENGTH)
    _check(status, error, f"registering {path}")


def register_json(text, source_name="<memory>", tags=None):
    """Registers a plan given as JSON text."""
    lib = rt.load()
    data = text.encode() if isinstance(text, str) else bytes(text)
    array, count = _tag_array(tags)
    error = ctypes.create_string_buffer(_ERROR_LENGTH)
    status = lib.mscclppPlanRegisterJson(data, len(data), source_name.encode(), array, count, error, _ERROR_LENGTH)
    _check(status, error, f"registering {source_name}")


def unregister(name):
    lib = rt.load()
    error = ctypes.create_string_buffer(_ERROR_LENGTH)
    _check(lib.mscclppPlanUnregister(name.encode(), error, _ERROR_LENGTH), error, f"unregistering {name}")


def plans() -> List[PlanHandle]:
    """Every registered plan, in registry order."""
    lib = rt.load()
    result = []
    for i in range(lib.mscclppPlanCount()):
        info = rt.PlanInfo()
        if lib.mscclppPlanGetInfo(i, ctypes.byref(info)) == 0:
            result.append(_handle(info, i))
    return result


def select(request: Request):
    """Runs the registry's selection for request: (plan name or None, reason)."""
    lib = rt.load()
    name = ctypes.create_string_buffer(256)
    reason = ctypes.create_string_buffer(_ERROR_LENGTH)
    c_request = _c_request(request)
    chosen = lib.mscclppPlanSelect(ctypes.byref(c_request), name, 256, reason, _ERROR_LENGTH)
    return (_text(name.value) or None) if chosen == 1 else None, _text(reason.value)


def _c_request(request):
    tags, count = _tag_array(request.tags)
    c_request = rt.PlanRequest(
        request.collective.encode(),
        request.world_size,
        request.nranks_per_node,
        request.message_size,
        int(request.in_place),
        request.dtype,
        request.red_op,
        request.root,
        request.send_buffer or None,
        request.recv_buffer or None,
        tags,
        count,
    )
    c_request.keep_alive = tags  # the tag strings must outlive the call
    return c_request


def _request(c_request):
    r = c_request.contents
    return Request(
        collective=_text(r.collective),
        world_size=r.worldSize,
        nranks_per_node=r.nRanksPerNode,
        message_size=r.messageBytes,
        in_place=bool(r.inPlace),
        dtype=r.dtype,
        red_op=r.redOp,
        root=r.root,
        send_buffer=r.sendBuffer or 0,
        recv_buffer=r.recvBuffer or 0,
        tags=frozenset(_text(r.tags[i]) for i in range(r.nTags)) if r.nTags > 0 else frozenset(),
    )


NO_PLAN = -1
DEFAULT_CHOICE = -2

# The ctypes callback must outlive every call the runtime makes into it.
_active_callback = None


def set_selector(selector: Optional[Callable[[Dict[str, List[PlanHandle]], Request], Optional[PlanHandle]]]):
    """Installs ``selector(plans, req) -> PlanHandle | None`` (None removes it).

    ``plans`` maps the request's collective to its candidates (registered plans of that collective
    and world size, in registry order). Returning None means "no plan: let NCCL run the call".
    A selector that raises, or returns something that is not one of the candidates, is reported on
    stderr and the call falls back to NCCL (it never silently picks a plan).
    """
    global _active_callback
    lib = rt.load()
    if selector is None:
        lib.mscclppPlanSetSelector(rt.SELECTOR_FN(), None)
        _active_callback = None
        return

    def adapter(candidates, count, c_request, user_data):
        try:
            handles = [_handle(candidates[i], i) for i in range(count)]
            request = _request(c_request)
            chosen = selector({request.collective: handles}, request)
            if chosen is None:
                return NO_PLAN
            for handle in handles:
                if chosen is handle or (isinstance(chosen, PlanHandle) and chosen.name == handle.name):
                    return handle.index
            print(f"mscclpp.plan: the selector returned {chosen!r}, not one of the candidates", file=sys.stderr)
        except Exception:  # noqa: BLE001 - an exception must not cross into C
            print("mscclpp.plan: the plan selector raised; falling back to NCCL:", file=sys.stderr)
            traceback.print_exc()
        return NO_PLAN

    callback = rt.SELECTOR_FN(adapter)
    status = lib.mscclppPlanSetSelector(callback, None)
    if status != 0:
        raise PlanError(f"installing the selector failed ({status})")
    _active_callback = callback
