"""The default plans: which algorithm serves which collective, rank count and message size.

``python3 -m mscclpp.dsl.presets --out plans/`` writes them (one JSON file per plan, compact);
``python3 -m mscclpp --install`` writes the same files where the registry looks. ``catalog()``
lists them without compiling. For each collective and rank count the "default"-tagged plans of
one in-place flavour cover every message size exactly once; "nvls" plans are extra (they need
NVSwitch multicast) and never tagged "default".
"""
import os
from dataclasses import dataclass, field

from . import algorithms as a
from . import multinode

__all__ = ["Preset", "catalog", "build", "write_all", "RANKS_PER_NODE"]

RANKS_PER_NODE = (2, 4, 8)
ALLTOALLV_RANKS = tuple(range(2, 9))
ALLTOALLV_SLOT = 64 << 10  # the largest segment the staged all-to-all-v plans take
MiB = 1 << 20
MAX = a.MAX


@dataclass(frozen=True)
class Preset:
    name: str
    collective: str
    ranks: int
    inplace: bool
    size_range: tuple
    tags: tuple
    algorithm: object = field(compare=False)
    options: tuple = ()

    def build(self):
        return self.algorithm(self.name, self.ranks, self.inplace, self.size_range, list(self.tags), **dict(self.options))


# (collective, algorithm short name, function, size range, tags)
_TABLE = (
    ("allreduce", "ll", a.allreduce_ll, (0, MiB - 1), ("default", "ll")),
    ("allreduce", "allpairs", a.allreduce_allpairs, (MiB, 16 * MiB - 1), ("default", "allpairs")),
    ("allreduce", "rsag", a.allreduce_rsag, (16 * MiB, MAX), ("default", "rsag")),
    ("allreduce", "nvls", a.allreduce_nvls, (MiB, MAX), ("nvls",)),
    ("allgather", "ll", a.allgather_ll, (0, MiB - 1), ("default", "ll")),
    ("allgather", "put", a.allgather_put, (MiB, MAX), ("default",)),
    ("reducescatter", "ll", a.reducescatter_ll, (0, MiB - 1), ("default", "ll")),
    ("reducescatter", "put", a.reducescatter_put, (MiB, MAX), ("default",)),
    ("alltoall", "put", a.alltoall_put, (0, MAX), ("default",)),
    ("broadcast", "put", a.broadcast_put, (0, MAX), ("default",)),
    ("reduce", "put", a.reduce_put, (0, MAX), ("default",)),
    ("gather", "put", a.gather_put, (0, MAX), ("default",)),
    ("scatter", "put", a.scatter_put, (0, MAX), ("default",)),
)
_ROOTED = ("broadcast", "reduce", "gather", "scatter")


def catalog():
    presets = []
    for n in RANKS_PER_NODE:
        for collective, short, function, size_range, tags in _TABLE:
            for inplace in (True, False):
                flavour = "ip" if inplace else "oop"
                roots = range(n) if collective in _ROOTED else (None,)
                for root in roots:
                    name = f"{collective}_{short}_n{n}_{flavour}" + (f"_root{root}" if root is not None else "")
                    options = (("root", root),) if root is not None else ()
                    presets.append(Preset(name, collective, n, inplace, size_range, tags, function, options))
    # The NCCL shim's send/recv with plans: a two-rank out-of-place exchange.
    presets.append(Preset("sendrecv_put_n2_oop", "sendrecv", 2, False, (0, MAX), ("default",), a.sendrecv_put))
    # Across hosts: 2 hosts of 2 ranks, never tagged "default".
    for inplace in (True, False):
        name = "allreduce_2node_n4_" + ("ip" if inplace else "oop")
        presets.append(Preset(name, "allreduce", 4, inplace, (0, MAX), ("multinode",), multinode.allreduce_2node))
    # All-to-all-v (variable sizes, selected by the largest segment): staged through LL scratch
    # slots up to ALLTOALLV_SLOT, every pair direct above; 2 to 8 ranks, and 2 hosts of 2 and 4.
    for n in ALLTOALLV_RANKS:
        presets.append(
            Preset(f"alltoallv_ll_n{n}_oop", "alltoallv", n, False, (0, ALLTOALLV_SLOT), ("default", "ll"),
                   a.alltoallv_ll, (("slot_bytes", ALLTOALLV_SLOT),))
        )
        presets.append(
            Preset(f"alltoallv_direct_n{n}_oop", "alltoallv", n, False, (ALLTOALLV_SLOT + 1, MAX), ("default",),
                   a.alltoallv_direct)
        )
    # Reduce-scatter-v (each rank's output size its own): staged through LL scratch slots up to
    # ALLTOALLV_SLOT, read from the peers' inputs above; 2 to 8 ranks.
    for n in ALLTOALLV_RANKS:
        presets.append(
            Preset(f"reducescatterv_ll_n{n}_oop", "reducescatterv", n, False, (0, ALLTOALLV_SLOT), ("default", "ll"),
                   a.reducescatterv_ll, (("slot_bytes", ALLTOALLV_SLOT),))
        )
        presets.append(
            Preset(f"reducescatterv_read_n{n}_oop", "reducescatterv", n, False, (ALLTOALLV_SLOT + 1, MAX),
                   ("default",), a.reducescatterv_read)
        )
    for per_node in (2, 4):
        n = 2 * per_node
        presets.append(
            Preset(f"alltoallv_2node_n{n}_oop", "alltoallv", n, False, (0, MAX), ("multinode",),
                   multinode.alltoallv_2node, (("per_node", per_node),))
        )
    return presets


def build(preset):
    """The compiled plan of one preset, as compact JSON text."""
    return preset.build().to_json(indent=None)


def write_all(directory):
    """Writes every preset to directory/<name>.json; returns the paths written."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for preset in catalog():
        path = os.path.join(directory, preset.name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(build(preset))
            f.write("\n")
        paths.append(path)
    return paths
