/* C API of the plan registry: the one registry the NCCL shim, the executor and the Python package
 * (through ctypes) share inside a process.
 *
 * Ownership: the registry copies everything it is given; pointers handed to a selector callback are
 * valid only during that call. Thread-safety: every function may be called from any thread; the
 * registry serialises registration internally, and lookups never block on registration for longer
 * than one registration takes.
 *
 * Errors: functions return 0 (mscclppSuccess) on success and a negative mscclppStatus
 * (mscclpp/status.h) otherwise; the message (naming file, rank, threadblock, op and field where it
 * applies) is written to errBuf, always NUL-terminated and truncated to errLen, when errBuf is not
 * NULL, and is the thread's mscclppGetLastError() (the one way to read it for the functions that
 * take no errBuf). No C++ exception ever leaves these functions. */
#ifndef MSCCLPP_PLAN_API_H_
#define MSCCLPP_PLAN_API_H_

#include <stddef.h>
#include <stdint.h>

#include "mscclpp/export.h"
#include "mscclpp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: mscclppPlanRequest gained tags/nTags at its end.
 * 3: functions return mscclppStatus (mscclpp/status.h), the status of every C API of MSCCL++; the
 *    registry's own status enum is gone (its names remain below as aliases, with the new values). */
#define MSCCLPP_PLAN_API_VERSION 3

/* Version 2's status names, for source compatibility. */
typedef mscclppStatus mscclppPlanStatus;
#define mscclppPlanOk mscclppSuccess
#define mscclppPlanInvalid mscclppInvalidPlan
#define mscclppPlanNotFound mscclppNotFound
#define mscclppPlanDuplicate mscclppAlreadyExists
#define mscclppPlanBadArgument mscclppInvalidArgument
#define mscclppPlanInternalError mscclppInternalError

/* What a collective call asks for. dtype and redOp use NCCL's numbering (ncclDataType_t,
 * ncclRedOp_t); redOp is -1 for collectives that do not reduce. messageBytes is the input size,
 * except for allgather where it is the output size and gather/scatter where it is the per-rank part
 * (count x element size), as plans' min/max_message_size are. */
typedef struct mscclppPlanRequest {
  const char* collective; /* "allreduce", "allgather", ... */
  int worldSize;
  int nRanksPerNode;
  uint64_t messageBytes;
  int inPlace;
  int dtype;
  int redOp;
  int root; /* broadcast/reduce/gather/scatter root rank; -1 for collectives without a root */
  const void* sendBuffer;
  const void* recvBuffer;
  const char* const* tags; /* tags the plan must all carry (NULL when nTags is 0) */
  int nTags;
} mscclppPlanRequest;

/* A registered plan as a selector sees it. */
typedef struct mscclppPlanInfo {
  const char* name;
  const char* collective;
  const char* protocol; /* "Simple" or "LL" */
  int worldSize;
  int inPlace;
  /* the optional top-level "root" key (broadcast/reduce/gather/scatter; default 0), -1 for other collectives */
  int root;
  uint64_t minMessageBytes;
  uint64_t maxMessageBytes;
  const char* const* tags;
  int nTags;
  const char* source; /* file path, or "<memory>" for plans registered from a string */
} mscclppPlanInfo;

/* A user selector: gets every registered plan of the request's collective and world size (in the
 * registry's deterministic order) and returns the index of the one to use, or -1 for "no plan"
 * (the call then goes to NCCL). Returning -2 asks for the registry's default choice. The choice is
 * cached per request key (collective, world size, ranks per node, bytes, in-place, dtype, op), so
 * a selector is called once per distinct key, not once per collective call. */
typedef int (*mscclppPlanSelectorFn)(const mscclppPlanInfo* candidates, int nCandidates,
                                     const mscclppPlanRequest* request, void* userData);

/* Registers the plan in the file at path (tags may be NULL when nTags is 0). mscclppInvalidPlan
 * when it does not load or validate, mscclppSystemError when the file cannot be read,
 * mscclppAlreadyExists when a plan of its name is registered. */
MSCCLPP_API int mscclppPlanRegisterFile(const char* path, const char* const* tags, int nTags, char* errBuf,
                                        size_t errLen);

/* Registers a plan given as JSON text of len bytes; sourceName is used in error messages. */
MSCCLPP_API int mscclppPlanRegisterJson(const char* json, size_t len, const char* sourceName, const char* const* tags,
                                        int nTags, char* errBuf, size_t errLen);

/* Removes the named plan (mscclppNotFound when none has that name). Contexts already built from it
 * stay valid until their communicator ends. */
MSCCLPP_API int mscclppPlanUnregister(const char* name, char* errBuf, size_t errLen);

/* Installs (or, with fn == NULL, removes) the user selector and clears the selection cache. */
MSCCLPP_API int mscclppPlanSetSelector(mscclppPlanSelectorFn fn, void* userData);

/* Number of registered plans (after the plan directories have been scanned), or a negative status. */
MSCCLPP_API int mscclppPlanCount(void);

/* Fills *info for the i-th plan in registry order (the plans registered at run time in call order,
 * then the directory plans); the strings stay valid until the plan is unregistered.
 * mscclppInvalidArgument when info is NULL or i is out of range. */
MSCCLPP_API int mscclppPlanGetInfo(int i, mscclppPlanInfo* info);

/* Runs selection for request without executing anything: writes the chosen plan's name (or "" when
 * none) to nameBuf and the reason to reasonBuf. Returns 1 when a plan was chosen, 0 when none, and a
 * negative status for a bad request (the message then goes to reasonBuf). Selection here judges plans by
 * their summary; a plan whose full load later fails is skipped from then on. */
MSCCLPP_API int mscclppPlanSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* reasonBuf,
                                  size_t reasonLen);

/* Verifies a plan without running it (docs/plan-verifier.md): the file at path, or, when json is not
 * NULL, the JSON text of jsonLen bytes (path, which may be NULL, then names it in messages). Returns 1
 * when the plan is proven (race-free, deadlock-free, no leftover counts, correct result for every message
 * size it accepts), 0 when it is not, and a negative status when it does not load (errBuf says why).
 * reportBuf receives the report mscclpp-plan verify prints: the verdict and one paragraph per finding.
 * Added with the verifier during version 3: callers of older libraries look the symbol up first. */
MSCCLPP_API int mscclppPlanVerify(const char* path, const char* json, size_t jsonLen, char* reportBuf, size_t reportLen,
                                  char* errBuf, size_t errLen);

/* The C API version, MSCCLPP_PLAN_API_VERSION, so Python can check it is talking to a matching library. */
MSCCLPP_API int mscclppPlanApiVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_PLAN_API_H_ */
