"""Symbolic execution of a compiled plan: which input data ends where.

Each unit of each buffer holds the sorted tuple of the (rank, input unit) pairs summed into it:
a copy of unit u of rank r's input is ``((r, u),)``; ``None`` means nothing defined. A unit is a
chunk, or 1/F of one where thread-block groups split references (F: the lcm of the group sizes).
Threadblocks run op by op, round-robin; an op that must wait blocks its threadblock until another
makes progress, and when none can the run reports the deadlock. It models one valid schedule,
with the simplifications docs/dsl-compiler.md lists ("Checking a program's result").
"""
from math import gcd

_UNWRITTEN = object()  # a packet slot no op has written in this launch


class SimulationError(Exception):
    """The plan cannot be run symbolically (it deadlocks, or is malformed); the message says where."""


def combine(values):
    """The reduction of symbolic values (None, undefined, absorbs everything)."""
    merged = []
    for value in values:
        if value is None:
            return None
        merged += value
    merged.sort()
    return tuple(merged)


class _Rank:
    """One rank's memory and resources, resolved from its plan entry."""

    def __init__(self, rank, gpu, units):
        self.rank = rank
        self.input_units = gpu["input_chunks"] * units
        self.output_units = gpu["output_chunks"] * units
        self.scratch_units = gpu["scratch_chunks"] * units
        self.peers = {"memory": [], "port": []}
        self.switch = []  # (buffer char, [ranks]) per rank-level switch channel
        for entry in gpu.get("channels", []):
            ctype = entry["channel_type"]
            if ctype == "switch":
                for group in entry["rank_groups"]:
                    self.switch.append((entry["buffer_type"], list(group["ranks"])))
            elif ctype in self.peers:
                self.peers[ctype].extend(entry["connected_to"])
        self.remote_buffers = [(rb["rank"], rb["type"]) for rb in gpu.get("remote_buffers", [])]
        self.semaphores = [s["init_value"] for s in gpu.get("semaphores", [])]
        self.memory = {}  # buffer char -> (list of values, offset in it)
        self.packets = [_UNWRITTEN] * self.scratch_units

    def lay_out(self, collective, inplace, input_values):
        """Input and output share storage in place, where the collective says they overlap."""
        ins, outs = self.input_units, self.output_units
        if inplace and collective in ("allgather", "gather"):
            base = [None] * max(outs, (self.rank + 1) * ins)
            start = self.rank * ins
            base[start : start + ins] = input_values
            self.memory["o"] = (base, 0)
            self.memory["i"] = (base, start)
        elif inplace and collective in ("reducescatter", "scatter"):
            base = list(input_values) + [None] * max(0, (self.rank + 1) * outs - ins)
            self.memory["i"] = (base, 0)
            self.memory["o"] = (base, self.rank * outs)
        elif inplace:
            base = list(input_values) + [None] * max(0, outs - ins)
            self.memory["i"] = (base, 0)
            self.memory["o"] = (base, 0)
        else:
            self.memory["i"] = (list(input_values), 0)
            self.memory["o"] = ([None] * outs, 0)
        self.memory["s"] = ([None] * self.scratch_units, 0)

    def span(self, buffer, start, count):
        """(storage list, first position) of units [start, start+count) of a buffer, bounds-checked."""
        if buffer not in self.memory:
            raise SimulationError(f"rank {self.rank}: unknown buffer type {buffer!r}")
        values, offset = self.memory[buffer]
        if start < 0 or offset + start + count > len(values):
            raise SimulationError(f"rank {self.rank}: a reference runs past the end of its {buffer!r} buffer")
        return values, offset + start

    def read(self, buffer, start, count):
        values, at = self.span(buffer, start, count)
        return values[at : at + count]

    def write(self, buffer, start, new):
        values, at = self.span(buffer, start, len(new))
        values[at : at + len(new)] = new


class _Task:
    """One threadblock: its ops (pipeline bodies inlined), program counter and wait progress."""

    __slots__ = ("rank", "tb", "ops", "pc", "sub", "channels", "remote_refs")

    def __init__(self, rank, tb):
        self.rank = rank
        self.tb = tb["id"]
        self.ops = []
        _flatten(tb.get("ops", []), self.ops)
        self.pc = 0
        self.sub = 0  # ids already satisfied by a multi-id wait/acquire, or the barrier generation
        self.channels = {}
        for entry in tb.get("channels", []):
            self.channels.setdefault(entry["channel_type"], []).extend(entry["channel_ids"])
        self.remote_refs = {}
        for entry in tb.get("remote_buffer_refs", []):
            self.remote_refs.setdefault(entry["access_channel_type"], []).extend(entry["remote_buffer_ids"])


def _flatten(ops, out):
    for op in ops:
        if op.get("name") == "pipeline":
            _flatten(op.get("ops", []), out)
        else:
            out.append(op)


def _units_factor(plan):
    factor = 1
    stack = [op for gpu in plan["gpus"] for tb in gpu.get("threadblocks", []) for op in tb.get("ops", [])]
    while stack:
        op = stack.pop()
        if op.get("name") == "pipeline":
            stack.extend(op.get("ops", []))
        info = op.get("tbg_info")
        if info:
            size = info["tbg_size"]
            factor = factor * size // gcd(factor, size)
    return factor


class Machine:
    """Runs a plan dict symbolically. ``run()`` returns the ranks' memory; see the module doc."""

    def __init__(self, plan):
        self.plan = plan
        self.units = _units_factor(plan)
        self.collective = plan.get("collective", "custom")
        inplace = bool(plan.get("inplace", False))
        self.ranks = []
        for r, gpu in enumerate(plan["gpus"]):
            state = _Rank(r, gpu, self.units)
            state.lay_out(self.collective, inplace, [((r, u),) for u in range(state.input_units)])
            self.ranks.append(state)
        self.tasks = [_Task(r, tb) for r, gpu in enumerate(plan["gpus"]) for tb in gpu.get("threadblocks", [])]
        self.counters = {}  # (rank, channel type, channel id) -> pending signals
        self.barriers = {}  # (rank, barrier id) -> [generation, arrived]
        self.partner = {}
        for state in self.ranks:
            for ctype, peers in state.peers.items():
                seen = {}
                for c, peer in enumerate(peers):
                    k = seen.get(peer, 0)
                    seen[peer] = k + 1
                    self.partner[(state.rank, ctype, c)] = (peer, ctype, self._kth(peer, ctype, state.rank, k))
        self.progress = False

    def _kth(self, rank, ctype, peer, k):
        """Rank-level id of rank's k-th channel of ctype to peer (an implicit one when it lists fewer)."""
        if not 0 <= rank < len(self.ranks):
            raise SimulationError(f"a {ctype} channel connects to rank {rank}, which the plan does not have")
        count = 0
        for c, p in enumerate(self.ranks[rank].peers[ctype]):
            if p == peer:
                if count == k:
                    return c
                count += 1
        return ("implicit", peer, k)

    # ---- running ----

    def run(self):
        tasks = self.tasks
        while True:
            self.progress = False
            pending = False
            for task in tasks:
                ops = task.ops
                while task.pc < len(ops):
                    if not self._step(task, ops[task.pc]):
                        break
                    task.pc += 1
                    task.sub = 0
                    self.progress = True
                if task.pc < len(ops):
                    pending = True
            if not pending:
                return self.ranks
            if not self.progress:
                raise SimulationError(self._deadlock(tasks))

    def _deadlock(self, tasks):
        stuck = [t for t in tasks if t.pc < len(t.ops)]
        lines = [
            f"rank {t.rank} threadblock {t.tb} op {t.pc} ({t.ops[t.pc].get('name')}): {self._blocker(t)}" for t in stuck[:8]
        ]
        more = f" (and {len(stuck) - 8} more)" if len(stuck) > 8 else ""
        return "the plan deadlocks; blocked: " + "; ".join(lines) + more

    def _blocker(self, task):
        op = task.ops[task.pc]
        name = op.get("name")
        if name in ("wait", "rlxwait"):
            ctype = op.get("channel_type")
            cid = task.channels[ctype][op["channel_ids"][task.sub]]
            peer = self.ranks[task.rank].peers[ctype][cid]
            return f"no signal from rank {peer} on {ctype} channel {cid}"
        if name == "barrier":
            return f"barrier {op['barrier_id']} waits for {op['num_threadblocks']} threadblocks"
        if name == "sem_acquire":
            return f"semaphore {op['semaphore_ids'][task.sub]} stays at 0"
        return "LL packets that are never written"

    def _step(self, task, op):
        name = op.get("name")
        handler = _HANDLERS.get(name)
        if handler is None:
            raise SimulationError(f"rank {task.rank} threadblock {task.tb}: op {name!r} cannot be simulated")
        return handler(self, task, op)

    # ---- references ----

    def _slice(self, op, start, count):
        info = op.get("tbg_info")
        if not info:
            return start, count
        j, g = info["tb_id"], info["tbg_size"]
        return start + j * count // g, count // g

    def _local(self, task, op, ref):
        u = self.units
        start, count = self._slice(op, ref["index"] * u, ref["size"] * u)
        return task.rank, ref["type"], start, count

    def _remote(self, task, op, ref):
        ctype = op.get("channel_type")
        try:
            rid = task.remote_refs[ctype][ref["buffer_id"]]
            peer, buffer = self.ranks[task.rank].remote_buffers[rid]
        except (KeyError, IndexError):
            raise SimulationError(
                f"rank {task.rank} threadblock {task.tb}: remote buffer {ref['buffer_id']} of {ctype} is not declared"
            ) from None
        u = self.units
        start, count = self._slice(op, ref["index"] * u, ref["size"] * u)
        return peer, buffer, start, count

    def _ref(self, task, op, ref):
        return self._remote(task, op, ref) if "buffer_id" in ref else self._local(task, op, ref)

    def _switch(self, task, op, ref):
        try:
            buffer, ranks = self.ranks[task.rank].switch[task.channels["switch"][ref["switch_channel_id"]]]
        except (KeyError, IndexError):
            raise SimulationError(f"rank {task.rank} threadblock {task.tb}: switch channel is not declared") from None
        u = self.units
        start, count = self._slice(op, ref["index"] * u, ref["size"] * u)
        return buffer, ranks, start, count

    def read(self, where):
        rank, buffer, start, count = where
        return self.ranks[rank].read(buffer, start, count)

    def write(self, where, values):
        rank, buffer, start, count = where
        self.ranks[rank].write(buffer, start, values[:count])

    def read_packets(self, where):
        """The packet values, or None while any is unwritten."""
        rank, buffer, start, count = where
        state = self.ranks[rank]
        if buffer != "s" or start + count > len(state.packets):
            raise SimulationError(f"rank {rank}: LL packets live only in scratch (got {buffer!r})")
        values = state.packets[start : start + count]
        return None if any(v is _UNWRITTEN for v in values) else values

    def write_packets(self, where, values):
        rank, buffer, start, count = where
        state = self.ranks[rank]
        if buffer != "s" or start + count > len(state.packets):
            raise SimulationError(f"rank {rank}: LL packets live only in scratch (got {buffer!r})")
        state.packets[start : start + count] = values[:count]

    def signal(self, task, ctype, local_id):
        cid = task.channels[ctype][local_id]
        key = self.partner[(task.rank, ctype, cid)]
        self.counters[key] = self.counters.get(key, 0) + 1


# ---- op handlers: True when the op completed, False while it must wait ----


def _nop(machine, task, op):
    return True


def _signal(machine, task, op):
    for i in op["channel_ids"]:
        machine.signal(task, op["channel_type"], i)
    return True


def _wait(machine, task, op):
    ids = op["channel_ids"]
    ctype = op["channel_type"]
    while task.sub < len(ids):
        key = (task.rank, ctype, task.channels[ctype][ids[task.sub]])
        if machine.counters.get(key, 0) == 0:
            return False
        machine.counters[key] -= 1
        task.sub += 1
        machine.progress = True
    return True


def _barrier(machine, task, op):
    key = (task.rank, op["barrier_id"])
    state = machine.barriers.setdefault(key, [0, 0])
    if task.sub == 0:  # arriving: remember the generation (+1, so 0 means "not arrived")
        task.sub = state[0] + 1
        state[1] += 1
        machine.progress = True
        if state[1] == op["num_threadblocks"]:
            state[0] += 1
            state[1] = 0
    return state[0] >= task.sub


def _sem_release(machine, task, op):
    sems = machine.ranks[task.rank].semaphores
    for i in op["semaphore_ids"]:
        sems[i] += 1
    return True


def _sem_acquire(machine, task, op):
    sems = machine.ranks[task.rank].semaphores
    ids = op["semaphore_ids"]
    while task.sub < len(ids):
        if sems[ids[task.sub]] == 0:
            return False
        sems[ids[task.sub]] -= 1
        task.sub += 1
        machine.progress = True
    return True


def _pairs(srcs, dsts):
    if len(srcs) == len(dsts):
        return list(zip(srcs, dsts))
    if len(srcs) == 1:
        return [(srcs[0], d) for d in dsts]
    raise SimulationError("an op has unequal numbers of source and destination references")


def _put(machine, task, op):
    srcs = [machine._local(task, op, r) for r in op["src_buff"]]
    dsts = [machine._remote(task, op, r) for r in op["dst_buff"]]
    for s, d in _pairs(srcs, dsts):
        machine.write(d, machine.read(s))
    if op["name"] in ("pws", "pwsf"):
        for i in op.get("channel_ids", []):
            machine.signal(task, op["channel_type"], i)
    return True


def _put_packets(machine, task, op):
    srcs = [machine._local(task, op, r) for r in op["src_buff"]]
    dsts = [machine._remote(task, op, r) for r in op["dst_buff"]]
    from_packets = op["name"] == "rppkt" or op.get("channel_type") == "port"
    values = []
    for s in srcs:
        v = machine.read_packets(s) if from_packets else machine.read(s)
        if v is None:
            return False
        values.append(v)
    by_src = dict(zip(srcs, values))
    for s, d in _pairs(srcs, dsts):
        machine.write_packets(d, by_src[s])
    return True


def _get(machine, task, op):
    srcs = [machine._remote(task, op, r) for r in op["src_buff"]]
    dsts = [machine._local(task, op, r) for r in op["dst_buff"]]
    for s, d in _pairs(srcs, dsts):
        machine.write(d, machine.read(s))
    return True


def _copy(machine, task, op):
    s = machine._local(task, op, op["src_buff"][0])
    d = machine._local(task, op, op["dst_buff"][0])
    name = op["name"]
    if name == "upkt":
        values = machine.read_packets(s)
        if values is None:
            return False
    else:
        values = machine.read(s)
    if name == "cpkt":
        machine.write_packets(d, values)
    else:
        machine.write(d, values)
    return True


def _reduce(machine, task, op):
    packet = op["name"].endswith("pkt")
    operands = []
    for k, ref in enumerate(op["src_buff"]):
        where = machine._ref(task, op, ref)
        values = machine.read_packets(where) if packet and k > 0 else machine.read(where)
        if values is None:
            return False
        operands.append(values)
    result = [combine(unit) for unit in zip(*operands)]
    first_local = True
    for ref in op["dst_buff"]:
        where = machine._ref(task, op, ref)
        if "buffer_id" not in ref and first_local:
            machine.write(where, result)
            first_local = False
        elif packet:
            machine.write_packets(where, result)
        else:
            machine.write(where, result)
    return True


def _group_reduce_values(machine, buffer, ranks, start, count):
    return [combine(unit) for unit in zip(*[machine.ranks[r].read(buffer, start, count) for r in ranks])]


def _glre(machine, task, op):
    buffer, ranks, start, count = machine._switch(task, op, op["src_buff"][0])
    result = _group_reduce_values(machine, buffer, ranks, start, count)
    machine.write(machine._local(task, op, op["dst_buff"][0]), result)
    return True


def _glres(machine, task, op):
    for src, dst in zip(op["src_buff"], op["dst_buff"]):
        buffer, ranks, start, count = machine._switch(task, op, src)
        result = _group_reduce_values(machine, buffer, ranks, start, count)
        dbuffer, dranks, dstart, _ = machine._switch(task, op, dst)
        for r in dranks:
            machine.ranks[r].write(dbuffer, dstart, result)
    return True


def _gstore(machine, task, op):
    src = machine._local(task, op, op["src_buff"][0])
    packets = op["name"] == "gstorepkt"
    values = machine.read_packets(src) if packets else machine.read(src)
    if values is None:
        return False
    buffer, ranks, start, count = machine._switch(task, op, op["dst_buff"][0])
    for r in ranks:
        if packets:
            machine.write_packets((r, buffer, start, count), values)
        else:
            machine.ranks[r].write(buffer, start, values[:count])
    return True


_HANDLERS = {
    "nop": _nop,
    "flush": _nop,
    "signal": _signal,
    "rlxsignal": _signal,
    "wait": _wait,
    "rlxwait": _wait,
    "barrier": _barrier,
    "sem_release": _sem_release,
    "sem_acquire": _sem_acquire,
    "put": _put,
    "pws": _put,
    "pwsf": _put,
    "ppkt": _put_packets,
    "rppkt": _put_packets,
    "get": _get,
    "copy": _copy,
    "cpkt": _copy,
    "upkt": _copy,
    "re": _reduce,
    "res": _reduce,
    "rre": _reduce,
    "rres": _reduce,
    "repkt": _reduce,
    "respkt": _reduce,
    "recpkt": _reduce,
    "recspkt": _reduce,
    "glre": _glre,
    "glres": _glres,
    "gstore": _gstore,
    "gstorepkt": _gstore,
}
