"""Communicators for running plans from Python: CommGroup and Communicator.

    group = mscclpp.comm.CommGroup(interfaceIpPortTrio="eth0:10.0.0.1:50000", rank=rank, size=world_size)
    executor = mscclpp.Executor(group.communicator)

A CommGroup joins a job over the runtime's TCP bootstrap, through mscclpp_c.h; docs/python-api.md
lists the ways ranks meet. Construction is collective and fails, never hangs, after ``timeout``.
Thread-safety: query a CommGroup from any thread; make collective calls (barrier, executor
creation, execute) in the same order on every rank.
"""
import ctypes
from typing import Any, Optional, Union

from . import _capi

__all__ = ["CommGroup", "Communicator", "create_unique_id", "DEVICE_AUTO", "DEVICE_HOST"]

DEVICE_AUTO = _capi.DEVICE_AUTO  # the current CUDA device when one is visible and MSCCLPP_BACKEND != cpu
DEVICE_HOST = _capi.DEVICE_HOST  # no GPU: host memory and the CPU backend


def create_unique_id() -> bytes:
    """A new 128-byte unique id; starts the bootstrap root in this process (like ncclGetUniqueId).

    The root lives until every rank has arrived or the deadline passed, so call this in a process
    that stays alive that long (usually rank 0).
    """
    lib = _capi.load()
    buffer = ctypes.create_string_buffer(_capi.UNIQUE_ID_BYTES)
    error = _capi.error_buffer()
    _capi.check(lib.mscclppUniqueIdCreate(buffer, _capi.UNIQUE_ID_BYTES, error, len(error)), error,
                "mscclpp.comm.create_unique_id")
    return buffer.raw


class Communicator(_capi.OwnedHandle):
    """A runtime communicator (the C handle). Owned by the CommGroup that made it; an Executor built
    on it keeps the C++ communicator alive on its own, so closing the group first is safe."""

    _destroy = "mscclppCommDestroy"

    def __init__(self, handle: ctypes.c_void_p):
        super().__init__(handle)
        info = _capi.CommInfo()
        error = _capi.error_buffer()
        _capi.check(_capi.load().mscclppCommGetInfo(handle, ctypes.byref(info), error, len(error)), error,
                    "mscclpp.comm.Communicator")
        self.rank: int = info.rank
        self.size: int = info.nRanks
        self.nranks_per_node: int = info.nRanksPerNode
        self.local_rank: int = info.localRank
        self.device: int = info.device

    def _closed_what(self) -> str:
        return f"communicator of rank {self.rank}/{self.size}"

    def barrier(self) -> None:
        """Waits until every rank has entered the barrier (bounded by the bootstrap's deadline)."""
        error = _capi.error_buffer()
        _capi.check(_capi.load().mscclppCommBarrier(self.handle, error, len(error)), error,
                    f"barrier on rank {self.rank}/{self.size}")

    def __repr__(self):
        state = "closed" if self._handle is None else f"device {self.device}"
        return f"<mscclpp Communicator rank {self.rank}/{self.size}, {self.nranks_per_node} per node, {state}>"


class CommGroup:
    """A group of ranks with a Communicator (MSCCL++'s ``mscclpp.comm.CommGroup``).

    Exactly one way of meeting must be given:
      ``interfaceIpPortTrio`` ("eth0:10.0.0.1:50000", "10.0.0.1:50000", "eth0:[fd00::1]:50000") with
      ``rank`` and ``size`` (and, with ``mpi_comm``, rank and size from it);
      ``unique_id`` (bytes from create_unique_id) with ``rank`` and ``size``;
      ``mpi_comm`` (mpi4py): rank 0 creates an id and broadcasts it;
      ``torch_group`` (a torch.distributed group, or True for the default group): the same with
      broadcast_object_list;
      ``torch_store`` (a torch.distributed Store) with ``rank`` and ``size``: rank 0 sets
      ``store_key``, the others wait for it with the store's own timeout.

    ``device``: DEVICE_AUTO, DEVICE_HOST or a CUDA ordinal. ``timeout``: seconds for the bootstrap's
    waits and the communicator's collectives (None: MSCCLPP_TIMEOUT_S, whose default 0 waits for live peers
    without a deadline; docs/failure-handling.md).
    """

    def __init__(
        self,
        mpi_comm: Any = None,
        interfaceIpPortTrio: str = "",  # noqa: N803 - MSCCL++'s spelling
        rank: Optional[int] = None,
        size: Optional[int] = None,
        *,
        unique_id: Optional[bytes] = None,
        torch_group: Any = None,
        torch_store: Any = None,
        store_key: str = "mscclpp/unique_id",
        device: int = DEVICE_AUTO,
        timeout: Optional[float] = None,
    ):
        ways = [name for name, given in (("interfaceIpPortTrio", bool(interfaceIpPortTrio)),
                                          ("unique_id", unique_id is not None),
                                          ("torch_group", torch_group is not None),
                                          ("torch_store", torch_store is not None)) if given]
        if len(ways) > 1:
            raise ValueError(f"CommGroup: give one way for the ranks to meet, not {' and '.join(ways)}")
        if mpi_comm is not None:
            rank = _checked_same("rank", rank, mpi_comm.Get_rank())
            size = _checked_same("size", size, mpi_comm.Get_size())
        elif torch_group is not None:
            import torch.distributed as dist  # noqa: PLC0415 - optional dependency

            group = None if torch_group is True else torch_group
            rank = _checked_same("rank", rank, dist.get_rank(group))
            size = _checked_same("size", size, dist.get_world_size(group))
        elif not ways:
            raise ValueError("CommGroup: give interfaceIpPortTrio, unique_id, mpi_comm, torch_group or torch_store "
                             "so that the ranks can find each other")
        rank, size = _checked_rank(rank, size)
        seconds = 0.0 if timeout is None else float(timeout)
        if seconds < 0:
            raise ValueError(f"CommGroup: timeout={timeout} must not be negative")

        lib = _capi.load()
        handle = ctypes.c_void_p()
        error = _capi.error_buffer()
        what = "mscclpp.comm.CommGroup"  # the runtime's messages name the rank
        if interfaceIpPortTrio:
            status = lib.mscclppCommInitAddress(interfaceIpPortTrio.encode(), rank, size, device, seconds,
                                                ctypes.byref(handle), error, len(error))
        else:
            if unique_id is None:
                unique_id = _distribute_unique_id(rank, mpi_comm, torch_group, torch_store, store_key)
            unique_id = bytes(unique_id)
            if len(unique_id) != _capi.UNIQUE_ID_BYTES:
                raise ValueError(f"{what} rank {rank}/{size}: a unique id has {_capi.UNIQUE_ID_BYTES} bytes, "
                                 f"got {len(unique_id)}")
            status = lib.mscclppCommInitUniqueId(unique_id, len(unique_id), rank, size, device, seconds,
                                                 ctypes.byref(handle), error, len(error))
        _capi.check(status, error, what)
        self.communicator = Communicator(handle)
        self.my_rank: int = self.communicator.rank
        self.nranks: int = self.communicator.size
        self.nranks_per_node: int = self.communicator.nranks_per_node
        self.local_rank: int = self.communicator.local_rank

    def barrier(self) -> None:
        """Waits until every rank of the group has entered the barrier."""
        self.communicator.barrier()

    def close(self) -> None:
        self.communicator.close()

    def __enter__(self) -> "CommGroup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self):
        return f"<mscclpp CommGroup rank {self.my_rank}/{self.nranks}, {self.nranks_per_node} per node>"


def _checked_same(what: str, given: Optional[int], actual: int) -> int:
    if given is not None and given != actual:
        raise ValueError(f"CommGroup: {what}={given} was given, but the communicator says {actual}")
    return actual


def _checked_rank(rank: Optional[int], size: Optional[int]):
    if rank is None or size is None:
        raise ValueError("CommGroup: rank and size are required with this way of meeting")
    if isinstance(rank, bool) or isinstance(size, bool) or not isinstance(rank, int) or not isinstance(size, int):
        raise TypeError(f"CommGroup: rank and size must be integers, got {rank!r} and {size!r}")
    if size < 1 or not 0 <= rank < size:
        raise ValueError(f"CommGroup: rank {rank} is not in 0..{size - 1} (size={size})")
    return rank, size


def _distribute_unique_id(rank: int, mpi_comm: Any, torch_group: Any, torch_store: Any, store_key: str) -> bytes:
    """Rank 0 creates the id; the others receive it through what the caller already has."""
    unique_id: Union[bytes, None] = create_unique_id() if rank == 0 else None
    if mpi_comm is not None:
        return mpi_comm.bcast(unique_id, root=0)
    if torch_group is not None:
        import torch.distributed as dist  # noqa: PLC0415 - optional dependency

        holder = [unique_id]
        group = None if torch_group is True else torch_group
        dist.broadcast_object_list(holder, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)
        return holder[0]
    if rank == 0:
        torch_store.set(store_key, unique_id)
        return unique_id
    return bytes(torch_store.get(store_key))
