/* A small C API over the communicator, the executor and plan selection, which the Python package
 * binds with ctypes for MSCCL++'s "customized communicator" path. Plans registered through
 * plan_api.h are seen here: there is one registry per process. Functions return 0 (mscclppSuccess)
 * or a negative mscclppStatus, with the message in errBuf and as the thread's
 * mscclppGetLastError(); no C++ exception leaves them. Each handle is released by its *Destroy,
 * once, in any order: an executor keeps its communicator, a plan handle its plans.
 * Thread-safety: distinct handles freely; collective calls (barrier, executor creation, execute)
 * in the same order on every rank, as NCCL requires; an executor serialises its calls. */
#ifndef MSCCLPP_MSCCLPP_C_H_
#define MSCCLPP_MSCCLPP_C_H_

#include <stddef.h>
#include <stdint.h>

#include "mscclpp/export.h"
#include "mscclpp/plan_api.h"
#include "mscclpp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSCCLPP_C_API_VERSION 3
#define MSCCLPP_C_UNIQUE_ID_BYTES 128

/* Opaque handles. */
typedef struct mscclppCommHandle* mscclppComm_t;
typedef struct mscclppExecutorHandle* mscclppExecutor_t;
typedef struct mscclppPlanHandle* mscclppPlan_t;

/* Device choice for a communicator: mscclpp::kDeviceAuto and kHostDevice. */
#define MSCCLPP_C_DEVICE_AUTO (-2)
#define MSCCLPP_C_DEVICE_HOST (-1)

typedef struct mscclppCommInfo {
  int rank;
  int nRanks;
  int nRanksPerNode; /* ranks sharing this host (host identity: MSCCLPP_HOSTID or host name + boot id) */
  int localRank;     /* position among them */
  int device;        /* CUDA device ordinal, or MSCCLPP_C_DEVICE_HOST */
} mscclppCommInfo;

/* MSCCLPP_C_API_VERSION of the library, so a binding can check it talks to a matching one. */
MSCCLPP_API int mscclppCApiVersion(void);

/* Writes a fresh unique id of MSCCLPP_C_UNIQUE_ID_BYTES and starts the bootstrap root in this
 * process, as ncclGetUniqueId; pass the bytes to every rank. */
MSCCLPP_API int mscclppUniqueIdCreate(uint8_t* id, size_t idLen, char* errBuf, size_t errLen);

/* Joins the job of a unique id as `rank` of `nRanks` and builds the communicator; collective.
 * timeoutSec 0 or less is MSCCLPP_TIMEOUT_S. device: MSCCLPP_C_DEVICE_AUTO, _HOST or an ordinal. */
MSCCLPP_API int mscclppCommInitUniqueId(const uint8_t* id, size_t idLen, int rank, int nRanks, int device,
                                        double timeoutSec, mscclppComm_t* comm, char* errBuf, size_t errLen);

/* The same from a fixed root address where rank 0 runs the root, MSCCL++'s interfaceIpPortTrio:
 * "interface:ip:port", "interface:[v6]:port", "ip:port" or "[v6]:port". A named interface must be
 * up and be the one this rank's bootstrap listens on, which MSCCLPP_SOCKET_IFNAME picks, else the
 * call fails naming both. The secret is derived from the address: trusted networks only. */
MSCCLPP_API int mscclppCommInitAddress(const char* address, int rank, int nRanks, int device, double timeoutSec,
                                       mscclppComm_t* comm, char* errBuf, size_t errLen);

MSCCLPP_API int mscclppCommGetInfo(mscclppComm_t comm, mscclppCommInfo* info, char* errBuf, size_t errLen);

/* A barrier over the communicator's bootstrap, bounded by its deadline; collective. */
MSCCLPP_API int mscclppCommBarrier(mscclppComm_t comm, char* errBuf, size_t errLen);

/* Releases the handle. NULL is accepted. The connections close when the executors built on this
 * communicator are destroyed too. */
MSCCLPP_API int mscclppCommDestroy(mscclppComm_t comm);

/* An executor for the communicator's ranks, on the backend MSCCLPP_BACKEND picks. */
MSCCLPP_API int mscclppExecutorCreate(mscclppComm_t comm, mscclppExecutor_t* executor, char* errBuf, size_t errLen);

/* Writes the backend's name, "cpu" or "cuda", to nameBuf. */
MSCCLPP_API int mscclppExecutorBackend(mscclppExecutor_t executor, char* nameBuf, size_t nameLen);

MSCCLPP_API int mscclppExecutorDestroy(mscclppExecutor_t executor);

/* Chooses a plan for the request as mscclppPlanSelect does, and returns a handle that loads the
 * plan for a rank the first time that rank executes it. Returns 1 and sets *plan, with the name
 * in nameBuf, when a plan was chosen; 0 and *plan = NULL when none, the reason saying why; or a
 * negative status for a bad request, with the message in reasonBuf. */
MSCCLPP_API int mscclppPlanSelectHandle(const mscclppPlanRequest* request, mscclppPlan_t* plan, char* nameBuf,
                                        size_t nameLen, char* reasonBuf, size_t reasonLen);

MSCCLPP_API int mscclppPlanHandleDestroy(mscclppPlan_t plan);

/* Runs the plan for `rank`, the executor's communicator rank. dtype and redOp are numbered as
 * NCCL's: sum, prod, max, min, avg; plans that do not reduce ignore redOp. stream is a cudaStream_t
 * for the CUDA backend; the CPU backend ignores it and has completed the call when this returns.
 * The message size, the receive size for allgather and the send size otherwise, must be within
 * the plan's range, and the plan must accept the sizes and dtype; the error says why not. Premulsum
 * (redOp 5) needs a scalar: use mscclppExecuteWithScalar. */
MSCCLPP_API int mscclppExecute(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                               size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream,
                               int redOp, char* errBuf, size_t errLen);

/* mscclppExecute with premulsum's scalar: one element of dtype in host memory, read during the call
 * (as ncclRedOpCreatePreMulSum's ncclScalarHostImmediate). scalar is required with redOp 5 and
 * refused with any other op. Added in version 3. */
MSCCLPP_API int mscclppExecuteWithScalar(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                                         size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan,
                                         void* stream, int redOp, const void* scalar, char* errBuf, size_t errLen);

/* mscclppExecute for a variable-size plan (alltoallv, allgatherv, reducescatterv): counts holds
 * nRanks x nRanks element counts, counts[s * nRanks + d] from rank s to rank d, the same on every
 * rank; countsOnDevice says they are in device memory, which the CUDA backend's kernel reads when
 * it runs (a captured call replays with the counts written there since; the CPU backend refuses
 * them). sendBytes and recvBytes are the buffers' sizes, which the segments must fit; sendBuff may
 * equal recvBuff on the CPU backend (the CUDA backend refuses in-place calls). Added in version 2. */
MSCCLPP_API int mscclppExecuteSplits(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                                     size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan,
                                     const uint64_t* counts, int countsOnDevice, void* stream, int redOp, char* errBuf,
                                     size_t errLen);

/* mscclppExecuteSplits with premulsum's scalar, as mscclppExecuteWithScalar. Added in version 3. */
MSCCLPP_API int mscclppExecuteSplitsWithScalar(mscclppExecutor_t executor, int rank, const void* sendBuff,
                                               void* recvBuff, size_t sendBytes, size_t recvBytes, int dtype,
                                               mscclppPlan_t plan, const uint64_t* counts, int countsOnDevice,
                                               void* stream, int redOp, const void* scalar, char* errBuf,
                                               size_t errLen);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_MSCCLPP_C_H_ */
