/* A small C API over the communicator, the executor and plan selection, for foreign-function
 * callers (the Python package binds it with ctypes; seed 004's "customized communicator" path).
 * The plan registry itself has its own C API (mscclpp/plan_api.h): both act on the one
 * process-wide registry, so plans registered or a selector installed through either are seen here.
 *
 * Errors: every function returns 0 (mscclppSuccess) on success and a negative mscclppStatus
 * (mscclpp/status.h) on failure, with the runtime's message (naming rank, plan, argument and values)
 * written to errBuf, always NUL-terminated and truncated to errLen, when errBuf is not NULL, and
 * kept as the thread's mscclppGetLastError(). No C++ exception ever leaves these functions.
 * Functions that return a count or a yes/no answer say so.
 *
 * Ownership: every handle is created by one Create, Init or Select function and released by the
 * matching *Destroy, exactly once. Handles keep what they need alive: an executor keeps its
 * communicator, a plan handle keeps the plans it loaded, so they may be destroyed in any order.
 *
 * Thread-safety: distinct handles may be used from different threads freely. One communicator
 * may be queried from any thread; collective calls on it (barrier, executor creation, execute)
 * must be made by every rank in the same order, as NCCL requires. One executor serialises its
 * execute() calls internally. Plan handles may be shared between threads. */
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

#define MSCCLPP_C_API_VERSION 1
#define MSCCLPP_C_UNIQUE_ID_BYTES 128

/* Opaque handles. */
typedef struct mscclppCommHandle* mscclppComm_t;
typedef struct mscclppExecutorHandle* mscclppExecutor_t;
typedef struct mscclppPlanHandle* mscclppPlan_t;

/* Device choice for a communicator (mscclpp::kDeviceAuto / kHostDevice). */
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

/* Writes a fresh unique id (idLen must be MSCCLPP_C_UNIQUE_ID_BYTES) and starts the bootstrap root
 * in this process (like ncclGetUniqueId); pass the bytes to every rank. */
MSCCLPP_API int mscclppUniqueIdCreate(uint8_t* id, size_t idLen, char* errBuf, size_t errLen);

/* Joins the job described by a unique id as `rank` of `nRanks` and builds the communicator
 * (collective). timeoutSec <= 0: MSCCLPP_TIMEOUT_S. device: MSCCLPP_C_DEVICE_AUTO, _HOST or an
 * ordinal. */
MSCCLPP_API int mscclppCommInitUniqueId(const uint8_t* id, size_t idLen, int rank, int nRanks, int device,
                                        double timeoutSec, mscclppComm_t* comm, char* errBuf, size_t errLen);

/* The same from a fixed root address, where rank 0 runs the root (MSCCL++'s interfaceIpPortTrio):
 * "interface:ip:port" ("interface:[v6]:port"), or "ip:port" ("[v6]:port"). With an interface, it
 * must be up and be the one this rank's bootstrap listens on (MSCCLPP_SOCKET_IFNAME; a loopback
 * root keeps the job on loopback), else the call fails naming both. The bootstrap secret is
 * derived from the address: use this form on trusted networks only. */
MSCCLPP_API int mscclppCommInitAddress(const char* address, int rank, int nRanks, int device, double timeoutSec,
                                       mscclppComm_t* comm, char* errBuf, size_t errLen);

MSCCLPP_API int mscclppCommGetInfo(mscclppComm_t comm, mscclppCommInfo* info, char* errBuf, size_t errLen);

/* A barrier over the communicator's bootstrap (collective), bounded by its deadline. */
MSCCLPP_API int mscclppCommBarrier(mscclppComm_t comm, char* errBuf, size_t errLen);

/* Releases the handle. NULL is accepted. The connections close when the executors built on this
 * communicator are destroyed too. */
MSCCLPP_API int mscclppCommDestroy(mscclppComm_t comm);

/* An executor for the communicator's ranks (MSCCLPP_BACKEND decides the backend). */
MSCCLPP_API int mscclppExecutorCreate(mscclppComm_t comm, mscclppExecutor_t* executor, char* errBuf, size_t errLen);

/* Writes the backend's name ("cpu" or "cuda") to nameBuf. */
MSCCLPP_API int mscclppExecutorBackend(mscclppExecutor_t executor, char* nameBuf, size_t nameLen);

MSCCLPP_API int mscclppExecutorDestroy(mscclppExecutor_t executor);

/* Chooses a plan for the request as mscclppPlanSelect does (user selector included), and returns a
 * handle that loads the plan for a rank the first time that rank executes it. Returns 1 and sets
 * *plan when a plan was chosen (its name in nameBuf), 0 with *plan = NULL when none (the reason
 * says why), or a negative status for a bad request (message in reasonBuf). */
MSCCLPP_API int mscclppPlanSelectHandle(const mscclppPlanRequest* request, mscclppPlan_t* plan, char* nameBuf,
                                        size_t nameLen, char* reasonBuf, size_t reasonLen);

MSCCLPP_API int mscclppPlanHandleDestroy(mscclppPlan_t plan);

/* Runs the plan for `rank` (the executor's communicator rank). dtype and redOp use NCCL's
 * numbering (ncclDataType_t; ncclRedOp_t sum, prod, max, min, avg; redOp is ignored by plans that
 * do not reduce). stream is a cudaStream_t for the CUDA backend and ignored by the CPU backend,
 * which has completed the collective when this returns. The call's message size (allgather: the
 * receive size; otherwise the send size) must be within the plan's size range, and the plan must
 * accept the sizes and dtype (the error says why not). */
MSCCLPP_API int mscclppExecute(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                               size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream,
                               int redOp, char* errBuf, size_t errLen);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_MSCCLPP_C_H_ */
