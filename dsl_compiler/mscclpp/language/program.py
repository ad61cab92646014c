"""CollectiveProgram: the container a DSL program builds, and its compilation to plan JSON."""
import gc
import json
from typing import Any, Dict, List  # noqa: F401 (re-exported: MSCCL++'s star import gives them)

from . import collectives
from .buffer import BaseBuffer
from .channel import MemoryChannel, PortChannel, SwitchChannel
from .collectives import *  # noqa: F401,F403 (re-exported, as MSCCL++'s program module does)
from .collectives import Collective
from .errors import DSLError, user_location
from .internal import emit, locations, passes, variable
from .internal import indent as indent_json
from .internal.pairing import check_pairing
from .internal.rank_state import RankState
from .internal.state import active_program, get_program, set_program
from .rank import Semaphore
from .thread_block_group import ThreadBlockGroup
from .types import BufferType, ChannelType, Chunk, RankGroup, ReduceOperationType, ReplicationPolicy, SyncType
from .utils import AlgoSpec

# The DSL's names among those MSCCL++'s star import of this module gives.
# Its program module star-imports channel and collectives.
# MSCCLPPLang's program-module names are here too.
__all__ = [
    "CollectiveProgram",
    "MSCCLPPProgram",
    "DSLError",
    "SyncType",
    "BufferType",
    "ChannelType",
    "ReduceOperationType",
    "ReplicationPolicy",
    "AlgoSpec",
    "Chunk",
    "RankGroup",
    "ThreadBlockGroup",
    "MemoryChannel",
    "PortChannel",
    "SwitchChannel",
    "Semaphore",
    "BaseBuffer",
    "get_program",
    "Any",
    "Dict",
    "List",
    "Json",
    "Check",
    "chunk",
    "rank",
]
__all__ += [name for name in collectives.__all__ if name not in __all__]

_PROTOCOLS = ("Simple", "LL")


class CollectiveProgram:
    """A collective algorithm for ``num_ranks`` ranks, written inside ``with CollectiveProgram(...):``.

    The settings are those of the plan it compiles to (docs/dsl-compiler.md lists them). Compilation
    happens once, on the first ``to_json()``/``JSON()``; the program cannot change afterwards.
    """

    def __init__(
        self,
        name,
        collective,
        num_ranks,
        instances=1,
        protocol="Simple",
        instr_fusion=True,
        auto_sync=True,
        replication_policy=ReplicationPolicy.interleaved,
        reuse_resources=False,
        num_threads_per_block=1024,
        use_double_scratch_buffer=False,
        buffer_alignment=16,
        min_message_size=0,
        max_message_size=2**64 - 1,
        tags=(),
    ):
        where = user_location()
        if not isinstance(collective, Collective):
            raise DSLError(f"collective must be a Collective (AllReduce(...), ...), got {collective!r}", where)
        if protocol not in _PROTOCOLS:
            raise DSLError(f"protocol {protocol!r} is not supported: use \"Simple\" or \"LL\"", where)
        if not isinstance(num_ranks, int) or num_ranks < 1:
            raise DSLError(f"num_ranks must be a positive integer, got {num_ranks!r}", where)
        if num_ranks != collective.num_ranks:
            raise DSLError(
                f"num_ranks {num_ranks} differs from the collective's num_ranks {collective.num_ranks}", where
            )
        if not isinstance(instances, int) or instances < 1:
            raise DSLError(f"instances must be a positive integer, got {instances!r}", where)
        if isinstance(replication_policy, str):
            if replication_policy not in ReplicationPolicy.__members__:
                names = ", ".join(ReplicationPolicy.__members__)
                raise DSLError(f"replication_policy {replication_policy!r}: use one of {names}", where)
            replication_policy = ReplicationPolicy[replication_policy]
        elif not isinstance(replication_policy, ReplicationPolicy):
            raise DSLError(f"replication_policy must be a ReplicationPolicy, got {replication_policy!r}", where)
        if not 0 <= min_message_size <= max_message_size <= 2**64 - 1:
            raise DSLError(
                f"message size range [{min_message_size}, {max_message_size}] is not within [0, 2**64-1]", where
            )
        if buffer_alignment < 1:
            raise DSLError(f"buffer_alignment must be positive, got {buffer_alignment}", where)
        self.name = name
        self.collective = collective
        self.num_ranks = num_ranks
        self.instances = instances
        self.protocol = protocol
        self.instr_fusion = instr_fusion
        self.auto_sync = auto_sync
        self.replication_policy = replication_policy
        self.reuse_resources = reuse_resources
        self.num_threads_per_block = num_threads_per_block
        self.use_double_scratch_buffer = use_double_scratch_buffer
        self.buffer_alignment = buffer_alignment
        self.min_message_size = min_message_size
        self.max_message_size = max_message_size
        self.tags = list(tags)
        self.buffers = collective.init_buffers()
        self.ranks = [
            RankState(r, self.buffers[r][BufferType.input].size, self.buffers[r][BufferType.output].size)
            for r in range(num_ranks)
        ]
        self.loop_context = None
        # The ops' source locations; None unless capture was on at creation.
        self._locations = locations.Locations() if locations.enabled() else None
        # True while ops go straight to their threadblock: outside loops,
        # before compiling, without source locations. Fast paths test this flag.
        self._direct = self._locations is None
        # Pairing records: outside loops each channel's are in RankState.peer_channels; inside
        # loops, (rank, peer, channel type, k, loop key) -> ([signal locs], [wait locs]) here.
        self.sync_records = {}
        # The keys (rank, peer, channel type, k, loop key) of the records, in the order they were first
        # made. Keys, not channels: a program refers to no channel, so reference counting frees it.
        self.sync_order = []
        self.last_rank = None  # rank of the latest Rank(...): the executing rank of legacy switch calls
        self._json = None
        self._gc_was_enabled = False
        self.deferred_checks = []  # callables raising DSLError; run first when compiling
        # Whether current-DSL calls may use this program. MSCCLPPProgram decides
        # on the first call; get_program asks claim_current while it is False.
        self._current_model = True

    @classmethod
    def from_spec(cls, spec: AlgoSpec):
        return cls(
            spec.name,
            spec.collective,
            spec.world_size,
            instances=spec.instances,
            protocol=spec.protocol,
            instr_fusion=spec.instr_fusion,
            auto_sync=spec.auto_sync,
            replication_policy=spec.replication_policy,
            reuse_resources=spec.reuse_resources,
            num_threads_per_block=spec.num_threads_per_block,
            use_double_scratch_buffer=spec.use_double_scratch_buffer,
            buffer_alignment=spec.buffer_alignment,
            min_message_size=spec.min_message_size,
            max_message_size=spec.max_message_size,
            tags=sorted(spec.tags) if isinstance(spec.tags, (set, frozenset)) else list(spec.tags),
        )

    def __enter__(self):
        if active_program() is not None:
            raise DSLError("CollectiveProgram blocks cannot be nested", user_location())
        set_program(self)
        # Programs allocate millions of small acyclic objects. The cycle collector
        # would rescan them again and again, a third of the run time.
        # So it is off inside the block only.
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        _notify_created(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        set_program(None)
        self.loop_context = None
        self._direct = self._json is None and self._locations is None
        if self._gc_was_enabled:
            gc.enable()
        return False

    # ---- used by the DSL objects while the program is written ----

    def claim_current(self):
        """Called by get_program() while _current_model is False (MSCCLPPProgram overrides it)."""
        self._current_model = True

    def rank_state(self, rank):
        return self.ranks[rank]

    def check_writable(self):
        if self._json is not None:
            raise DSLError(f"program {self.name!r} was already compiled; it cannot change", user_location())

    def add_op(self, rank, tb, op):
        if self._json is not None:
            self.check_writable()
        if self._locations is not None:
            self._locations.record(op)
        loop = self.loop_context
        if loop is None:
            self.ranks[rank].tb(tb).ops.append(op)
        else:
            loop._append(self, rank, tb, op)

    def sync_entry(self, pair, loop_key):
        """The (signal locations, wait locations) lists of one channel, inside one loop shape or none.

        pair is (rank, peer, channel type, k) for the rank's k-th channel of that type to peer."""
        if loop_key is None:
            rank, peer, ctype, k = pair
            records = self.ranks[rank].peer_channels[(ctype, peer)]
            entry = records[k]
            if entry is None:
                entry = records[k] = ([], [])
                self.sync_order.append(pair + (None,))
            return entry
        key = pair + (loop_key,)
        entry = self.sync_records.get(key)
        if entry is None:
            entry = self.sync_records[key] = ([], [])
            self.sync_order.append(key)
        return entry

    def record_sync(self, pair, is_signal, location):
        loop = self.loop_context
        loop_key = None if loop is None else (loop.unit, loop.num_chunks)
        self.sync_entry(pair, loop_key)[0 if is_signal else 1].append(location)

    def set_loop_context(self, loop_context):
        if self.loop_context is not None and loop_context is not None:
            raise DSLError("pipeline loops cannot be nested", user_location())
        self.loop_context = loop_context
        self._direct = loop_context is None and self._json is None and self._locations is None

    # ---- compilation ----

    def post_process_operations(self):
        """Runs the compiler passes (once). Called by to_json(); public for MSCCL++ compatibility."""
        if self._json is not None:
            return
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._compile()
        finally:
            if gc_was_enabled:
                gc.enable()

    def _before_compile(self):
        """Adds what a front end kept aside to the ranks' threadblocks (MSCCLPPProgram overrides it)."""

    def _compile(self):
        self._before_compile()
        for check in self.deferred_checks:
            check()
        check_pairing(self.ranks, self.sync_order, self.sync_records)
        locations.ACTIVE = self._locations
        try:
            self._run_passes()
            self._json = emit.plan_json(self, self.ranks)
            if getattr(self.collective, "variable", False):
                self._unit_json = self._json
                self._json = variable.variable_plan_json(self._json, self.collective.slot_bytes)
        finally:
            locations.ACTIVE = None
        self._direct = False

    def _run_passes(self):
        for state in self.ranks:
            for tb in state.threadblocks:
                ops = tb.ops
                if self.instr_fusion:
                    ops = passes.fuse(ops)
                else:
                    ops = passes.expand_runs(ops)
                ops = passes.expand_data_sync(ops)
                if self.auto_sync:
                    ops = passes.insert_dependency_syncs(ops)
                tb.ops = ops

    def to_json(self, indent=2, **kwargs):
        """The plan as JSON text, indented by 2 as MSCCL++'s to_json; ``indent=None`` for the compact
        text the compiler writes directly (what tools and caches store: several times faster)."""
        self.post_process_operations()
        if indent is None and not kwargs:
            return self._json
        if type(indent) is int and not kwargs:
            # Many small objects, no cycles: the collector would only walk the program's heap again.
            gc_was_enabled = gc.isenabled()
            gc.disable()
            try:
                # The emitter's own strings are plain; the user's name and tags, and source locations,
                # may not be.
                if self._locations is None and all(map(indent_json.plain_string, [self.name, *self.tags])):
                    return indent_json.dumps_text(self._json, indent)
                return indent_json.dumps(json.loads(self._json), indent)
            finally:
                if gc_was_enabled:
                    gc.enable()
        return json.dumps(json.loads(self._json), indent=indent, **kwargs)

    def to_json_without_locations(self, indent=None):
        """to_json's text without the ops' "source" keys, for a program compiled with source locations
        whose plan is to be written without them."""
        self.post_process_operations()
        if self._locations is None:
            return self.to_json(indent=indent)
        text = emit.plan_json(self, self.ranks)  # locations.ACTIVE is None outside _compile
        if getattr(self.collective, "variable", False):
            text = variable.variable_plan_json(text, self.collective.slot_bytes)
        return text if indent is None else indent_json.dumps(json.loads(text), indent)

    def to_dict(self):
        self.post_process_operations()
        return json.loads(self._json)

    def unit_plan(self):
        """A variable-size program's plan before its chunks became segments, as the fixed-size
        collective it generalises: what checking it simulates (internal/variable.py)."""
        self.post_process_operations()
        plan = json.loads(self._unit_json)
        plan["collective"] = self.collective.fixed
        return plan


_observers = []


def _notify_created(program):
    for observer in list(_observers):
        observer(program)


def observe_programs(callback):
    """Calls callback(program) for every program entered from now on; returns an unsubscribe function."""
    _observers.append(callback)
    return lambda: _observers.remove(callback)


# MSCCLPPProgram, MSCCL++'s earlier name and MSCCLPPLang's program, subclasses
# CollectiveProgram in legacy/: so it is imported last.
from .legacy.program import Check, Json, MSCCLPPProgram, chunk, rank  # noqa: E402
