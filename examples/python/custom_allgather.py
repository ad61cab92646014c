#!/usr/bin/env python3
"""A user's own kernel from Python: registers the port-channel all-gather of
examples/custom_allgather (its library registers it when loaded), then runs ncclAllGather through
the NCCL API of the preloaded shim on N ranks (threads) and checks every rank's result.

    LD_PRELOAD=$BUILD/nccl_shim/libmscclpp_nccl.so PYTHONPATH=$REPO/dsl_compiler MSCCLPP_BACKEND=cpu \\
        python3 examples/python/custom_allgather.py $BUILD/examples/libcustom_allgather.so [ranks] [count]

The shim runs it for the call (no DSL plan fits, and a registered native algorithm comes before the
built-in ones): NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=SHIM shows "native algorithm custom_allgather ran".
Prints one JSON line; exit status 0 when every rank's result is right.
"""
import ctypes
import json
import sys
import threading

import mscclpp.algorithm

NCCL_FLOAT32 = 7


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def main(library, nranks=3, count=1001):
    nccl = ctypes.CDLL(None)  # the preloaded shim's NCCL API
    if not hasattr(nccl, "mscclppAlgorithmRegister"):
        print(json.dumps({"ok": False, "why": "preload the NCCL shim (LD_PRELOAD=libmscclpp_nccl.so)"}))
        return 2
    registered = mscclpp.algorithm.load(library)
    uid = UniqueId()
    nccl.ncclGetUniqueId(ctypes.byref(uid))
    comms = [ctypes.c_void_p() for _ in range(nranks)]
    send = [(ctypes.c_float * count)(*[float(r * 1000 + i % 997) for i in range(count)]) for r in range(nranks)]
    recv = [(ctypes.c_float * (count * nranks))() for _ in range(nranks)]
    rc = [None] * nranks

    def rank_main(rank):  # ctypes releases the GIL around each call: the ranks run concurrently
        rc[rank] = nccl.ncclCommInitRank(ctypes.byref(comms[rank]), nranks, uid, rank)
        if rc[rank] == 0:
            rc[rank] = nccl.ncclAllGather(send[rank], recv[rank], ctypes.c_size_t(count), NCCL_FLOAT32,
                                          comms[rank], None)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    want = [float(r * 1000 + i % 997) for r in range(nranks) for i in range(count)]
    correct = all(list(out) == want for out in recv)
    for c in comms:
        if c.value:
            nccl.ncclCommDestroy(c)
    print(json.dumps({"ok": correct and rc == [0] * nranks, "registered": registered, "rc": rc}))
    return 0 if correct and rc == [0] * nranks else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *(int(a) for a in sys.argv[2:4])))
