"""jit.compile: run a DSL algorithm function, compile its plan, cache the file by content.

    plan = jit.compile(algo=my_allreduce, name="my_allreduce", collective="allreduce",  # my_allreduce
                       world_size=8, min_msg_size=1 << 20, tags={"mine"})   # builds a CollectiveProgram
    mscclpp.plan.register(plan)              # this process
    mscclpp.plan.register(plan, save=True)   # also every process started later (the NCCL shim's)

``compile`` says how ``algo`` is called, what is cached and how plans are verified.
"""
import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field

from .._version import __version__
from ..language import collectives as _collectives
from ..language.errors import DSLError as _DSLError
from ..language.errors import package_caller_location


def DSLError(message):  # noqa: N802 - builds the one exception type, located at the user's jit call
    return _DSLError(message, package_caller_location())

from .. import plan_verify
from ..language.internal import locations
from ..language.program import CollectiveProgram
from ..language.utils import AlgoSpec

__all__ = ["compile", "CompiledPlan", "cache_dir"]

_COLLECTIVES = {
    "allreduce": _collectives.AllReduce,
    "allgather": _collectives.AllGather,
    "reducescatter": _collectives.ReduceScatter,
    "alltoall": _collectives.AllToAll,
    "sendrecv": _collectives.SendRecv,
    "broadcast": _collectives.Broadcast,
    "reduce": _collectives.Reduce,
    "gather": _collectives.Gather,
    "scatter": _collectives.Scatter,
}


@dataclass(frozen=True)
class CompiledPlan:
    """A compiled plan on disk: what mscclpp.plan.register takes."""

    name: str
    collective: str
    tags: frozenset
    path: str
    world_size: int
    protocol: str
    min_message_size: int
    max_message_size: int
    cache_key: str = field(default="", compare=False)

    @property
    def json(self):
        with open(self.path, encoding="utf-8") as f:
            return f.read()


def cache_dir():
    """$MSCCLPP_CACHE_DIR, else ~/.cache/mscclpp (mscclpp._paths: the runtime's rule)."""
    from .. import _paths

    cache = _paths.cache_dir()
    if cache is None:
        raise OSError("no cache folder: set MSCCLPP_CACHE_DIR (this user has no home directory)")
    return cache


_fingerprint = None


def _compiler_fingerprint():
    """Hash of this package's language sources: part of every cache key."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(__version__.encode())
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for folder, _, files in sorted(os.walk(os.path.join(root, "language"))):
            for name in sorted(files):
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), "rb") as f:
                        digest.update(name.encode() + f.read())
        _fingerprint = digest.hexdigest()
    return _fingerprint


def _source_of(algo):
    try:
        return inspect.getsource(algo)
    except (OSError, TypeError):
        code = getattr(algo, "__code__", None)
        if code is None:
            raise DSLError(f"jit.compile: cannot read the source of {algo!r} to key the cache") from None
        return repr((code.co_code, code.co_consts, code.co_names))


def _call(algo, spec, values, extra):
    try:
        signature = inspect.signature(algo)
    except (TypeError, ValueError):
        return algo(spec, **extra)
    params = [p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_spec = any(p.name in ("spec", "algo_spec") or p.annotation is AlgoSpec for p in params)
    if takes_spec:
        return algo(spec, **extra)
    kwargs = {}
    for p in params:
        if p.name in extra:
            kwargs[p.name] = extra[p.name]
        elif p.name in values:
            kwargs[p.name] = values[p.name]
        elif p.default is p.empty:
            raise DSLError(f"jit.compile: cannot supply parameter {p.name!r} of {algo.__name__}; pass it as a keyword")
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = set(extra) - set(kwargs)
    if unknown and not accepts_any:
        raise DSLError(f"jit.compile: {algo.__name__} takes no parameter(s) {sorted(unknown)}")
    if accepts_any:
        kwargs.update({k: v for k, v in extra.items() if k not in kwargs})
    return algo(**kwargs)


def compile(  # noqa: A001 - the name MSCCL++'s jit uses
    algo,
    name,
    collective,
    nranks_per_node,
    world_size,
    instances=1,
    protocol="Simple",
    num_threads_per_block=1024,
    min_msg_size=0,
    max_msg_size=2**64 - 1,
    tags=(),
    in_place=True,
    verify=None,
    source_locations=False,
    **kwargs,
):
    """The CompiledPlan of the program ``algo`` builds, from the cache when it is there.

    ``algo`` gets an AlgoSpec when it takes one parameter named ``spec``/``algo_spec`` (or annotated
    AlgoSpec), MSCCL++'s convention. Otherwise its parameters are matched by name: ``name``,
    ``gpu_size``/``num_gpus``/``num_ranks``/``world_size``, ``nranks_per_node``, ``instances``,
    ``protocol``, ``num_threads_per_block``, ``min_message_size``/``min_msg_size``,
    ``max_message_size``/``max_msg_size``, ``collective``, ``in_place``/``inplace``, ``tags``, plus
    the extra keyword arguments. It must return the CollectiveProgram it built.

    These arguments win over the program's name, instances, thread count, size range and tags; the
    collective, rank count and protocol must agree (DSLError).

    The cache is ``cache_dir()/jit/<sha256>.json``, keyed by the function's source, the arguments
    and the compiler's own sources, so a changed compiler never serves a stale plan. A hit does not
    run the function. A new plan is proven by the plan verifier first (docs/plan-verifier.md);
    ``verify=False`` or MSCCLPP_DSL_VERIFY=0 skips that. ``source_locations=True`` writes each op's
    file:line into the plan, so findings and pictures name DSL lines.
    """
    if not callable(algo):
        raise DSLError("jit.compile: algo must be a function that builds a CollectiveProgram")
    if collective not in _COLLECTIVES:
        raise DSLError(f"jit.compile: unknown collective {collective!r}; use one of {sorted(_COLLECTIVES)}")
    tags = frozenset(tags or ())
    key_material = {
        "compiler": _compiler_fingerprint(),
        "source": _source_of(algo),
        "function": f"{getattr(algo, '__module__', '')}.{getattr(algo, '__qualname__', '')}",
        "args": [name, collective, nranks_per_node, world_size, instances, protocol, num_threads_per_block],
        "sizes": [min_msg_size, max_msg_size],
        "tags": sorted(tags),
        "in_place": bool(in_place),
        "kwargs": repr(sorted(kwargs.items())),
        "source_locations": bool(source_locations),
    }
    key = hashlib.sha256(json.dumps(key_material, sort_keys=True).encode()).hexdigest()
    path = os.path.join(cache_dir(), "jit", f"{key}.json")
    plan = CompiledPlan(name, collective, tags, path, world_size, protocol, min_msg_size, max_msg_size, key)
    if os.path.exists(path):
        return plan

    spec = AlgoSpec(
        name=name,
        collective=_COLLECTIVES[collective](world_size, 1, in_place),
        nranks_per_node=nranks_per_node,
        world_size=world_size,
        in_place=in_place,
        instances=instances,
        protocol=protocol,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_msg_size,
        max_message_size=max_msg_size,
        tags=tags,
    )
    values = {
        "name": name,
        "gpu_size": world_size,
        "num_gpus": world_size,
        "num_ranks": world_size,
        "world_size": world_size,
        "nranks": world_size,
        "nranks_per_node": nranks_per_node,
        "instances": instances,
        "protocol": protocol,
        "num_threads_per_block": num_threads_per_block,
        "min_message_size": min_msg_size,
        "min_msg_size": min_msg_size,
        "max_message_size": max_msg_size,
        "max_msg_size": max_msg_size,
        "collective": spec.collective,
        "in_place": in_place,
        "inplace": in_place,
        "tags": tags,
    }
    with locations.capture(bool(source_locations)):
        program = _call(algo, spec, values, kwargs)
    if not isinstance(program, CollectiveProgram):
        raise DSLError(f"jit.compile: {getattr(algo, '__name__', algo)} returned {type(program).__name__}, not the CollectiveProgram it built")
    _apply(program, name, collective, world_size, instances, protocol, num_threads_per_block, min_msg_size, max_msg_size, tags)
    text = program.to_json(indent=None)
    try:
        plan_verify.check_plan_text(text, f"{name}.json", verify)
    except plan_verify.NotProven as error:
        raise DSLError(f"jit.compile: the plan verifier does not prove plan {name!r} (verify=False skips it):\n{error}") from None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.tmp.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)  # atomic: concurrent ranks compiling the same plan are fine
    return plan


def _apply(program, name, collective, world_size, instances, protocol, threads, min_size, max_size, tags):
    if program.collective.name != collective:
        raise DSLError(f"jit.compile: the program implements {program.collective.name!r}, not {collective!r}")
    if program.num_ranks != world_size:
        raise DSLError(f"jit.compile: the program has {program.num_ranks} ranks, world_size is {world_size}")
    if program.protocol != protocol:
        raise DSLError(f"jit.compile: the program uses protocol {program.protocol!r}, not {protocol!r}")
    if program._json is not None:
        raise DSLError("jit.compile: the function already compiled its program (called JSON()); return it uncompiled")
    program.name = name
    program.instances = instances
    program.num_threads_per_block = threads
    program.min_message_size = min_size
    program.max_message_size = max_size
    program.tags = sorted(set(program.tags) | set(tags))
