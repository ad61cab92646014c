"""An NCCL client the way vLLM's pynccl is one: ctypes.CDLL("libnccl.so.2") and every symbol looked up
through that handle (LD_PRELOAD cannot reach these calls; the replace mode, libnccl.so.2 first on
LD_LIBRARY_PATH, does). Prints one JSON line.

usage: nccl_ctypes_client.py allreduce [global]  two ranks (threads) ncclCommInitRank, ncclAllReduce of
                                                 host buffers (the CPU backend), checked
       nccl_ctypes_client.py fallback [global]   a one-rank communicator, whose allreduce needs the real NCCL
With "global" the symbols come from the process's global scope (ctypes.CDLL(None)), as for a program
linked against libnccl.so.2: what LD_PRELOAD of the shim reaches.
"""
import ctypes
import json
import sys
import threading

NCCL_FLOAT32, NCCL_SUM = 7, 0
COUNT = 1024


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def loaded_from(function):
    info = DlInfo()
    ctypes.CDLL("libc.so.6").dladdr(ctypes.cast(function, ctypes.c_void_p), ctypes.byref(info))
    return info.dli_fname.decode()


def main(mode, scope):
    nccl = ctypes.CDLL(None) if scope == "global" else ctypes.CDLL("libnccl.so.2")
    nccl.ncclGetErrorString.restype = ctypes.c_char_p
    nccl.ncclGetLastError.restype = ctypes.c_char_p
    version = ctypes.c_int()
    out = {"library": loaded_from(nccl.ncclGetVersion), "version_rc": nccl.ncclGetVersion(ctypes.byref(version)),
           "version": version.value}
    uid = UniqueId()
    out["uid_rc"] = nccl.ncclGetUniqueId(ctypes.byref(uid))
    nranks = 2 if mode == "allreduce" else 1
    comms = [ctypes.c_void_p() for _ in range(nranks)]
    send = [(ctypes.c_float * COUNT)(*([rank + 1.0] * COUNT)) for rank in range(nranks)]
    recv = [(ctypes.c_float * COUNT)() for _ in range(nranks)]
    init_rc, reduce_rc = [None] * nranks, [None] * nranks

    def rank_main(rank):  # ctypes releases the GIL around each call: the ranks run concurrently
        init_rc[rank] = nccl.ncclCommInitRank(ctypes.byref(comms[rank]), nranks, uid, rank)
        if init_rc[rank] == 0:
            reduce_rc[rank] = nccl.ncclAllReduce(send[rank], recv[rank], ctypes.c_size_t(COUNT), NCCL_FLOAT32,
                                                 NCCL_SUM, comms[rank], None)

    threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    out.update(init_rc=init_rc, reduce_rc=reduce_rc, last_error=nccl.ncclGetLastError(None).decode())
    out["correct"] = all(all(v == nranks * (nranks + 1) / 2 for v in r) for r in recv)
    out["destroy_rc"] = [nccl.ncclCommDestroy(c) for c in comms if c.value]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "handle")
