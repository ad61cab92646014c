/* The C API of the plan registry: the one registry that the NCCL shim, the executor and the
 * Python package share inside a process. The registry copies what it is given; pointers handed to a
 * selector are valid during that call only. Any function from any thread: registration is
 * serialised, and a lookup never waits longer than one registration. Functions return 0
 * (mscclppSuccess) or a negative mscclppStatus, with the message in errBuf where they take one
 * and as the thread's mscclppGetLastError(); no C++ exception leaves them. */
#ifndef MSCCLPP_PLAN_API_H_
#define MSCCLPP_PLAN_API_H_

#include <stddef.h>
#include <stdint.h>

#include "mscclpp/export.h"
#include "mscclpp/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 has tags and nTags at the end of mscclppPlanRequest. Version 3 returns mscclppStatus,
 * the status of every C API of MSCCL++; version 2's status names are aliases of it below. */
#define MSCCLPP_PLAN_API_VERSION 3

/* Version 2's status names, for source compatibility. */
typedef mscclppStatus mscclppPlanStatus;
#define mscclppPlanOk mscclppSuccess
#define mscclppPlanInvalid mscclppInvalidPlan
#define mscclppPlanNotFound mscclppNotFound
#define mscclppPlanDuplicate mscclppAlreadyExists
#define mscclppPlanBadArgument mscclppInvalidArgument
#define mscclppPlanInternalError mscclppInternalError

/* What a collective call asks for. dtype and redOp are numbered as NCCL's; redOp is -1 for
 * collectives that do not reduce. messageBytes is the input size, except for allgather, where it
 * is the output size, and gather and scatter, where it is the part per rank, as plans'
 * min_message_size and max_message_size are. */
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

/* A user selector: gets every registered plan of the request's collective and world size, in the
 * registry's deterministic order, and returns the index of the one to use, -1 for no plan, which
 * sends the call to NCCL, or -2 for the registry's default choice. The choice is cached per
 * request key, so a selector is called once per distinct key, not once per call. */
typedef int (*mscclppPlanSelectorFn)(const mscclppPlanInfo* candidates, int nCandidates,
                                     const mscclppPlanRequest* request, void* userData);

/* Registers the plan in the file at path; tags may be NULL when nTags is 0. Fails with
 * mscclppInvalidPlan when it does not load or validate, mscclppSystemError when the file cannot
 * be read, mscclppAlreadyExists when a plan of its name is registered. */
MSCCLPP_API int mscclppPlanRegisterFile(const char* path, const char* const* tags, int nTags, char* errBuf,
                                        size_t errLen);

/* Registers a plan given as JSON text of len bytes; sourceName is used in error messages. */
MSCCLPP_API int mscclppPlanRegisterJson(const char* json, size_t len, const char* sourceName, const char* const* tags,
                                        int nTags, char* errBuf, size_t errLen);

/* Removes the named plan, or fails with mscclppNotFound. Contexts already built from it stay
 * valid until their communicator ends. */
MSCCLPP_API int mscclppPlanUnregister(const char* name, char* errBuf, size_t errLen);

/* Installs the user selector, or removes it when fn is NULL, and clears the selection cache. */
MSCCLPP_API int mscclppPlanSetSelector(mscclppPlanSelectorFn fn, void* userData);

/* The number of registered plans, the plan directories scanned, or a negative status. */
MSCCLPP_API int mscclppPlanCount(void);

/* Fills *info for the i-th plan in registry order: the plans registered at run time in call
 * order, then the directory plans. The strings stay valid until the plan is unregistered. Fails
 * with mscclppInvalidArgument when info is NULL or i is out of range. */
MSCCLPP_API int mscclppPlanGetInfo(int i, mscclppPlanInfo* info);

/* Runs selection for request without executing anything: writes the chosen plan's name, or "",
 * to nameBuf and the reason to reasonBuf. Returns 1 when a plan was chosen, 0 when none, and a
 * negative status for a bad request, with the message in reasonBuf. Selection judges plans by
 * their summary; a plan whose full load later fails is skipped from then on. */
MSCCLPP_API int mscclppPlanSelect(const mscclppPlanRequest* request, char* nameBuf, size_t nameLen, char* reasonBuf,
                                  size_t reasonLen);

/* Verifies a plan without running it (docs/plan-verifier.md): the file at path or, when json is
 * not NULL, the JSON text of jsonLen bytes, which path, possibly NULL, names in messages. Returns
 * 1 when the plan is proven race-free, deadlock-free, without leftover counts and correct for
 * every message size it accepts; 0 when it is not; a negative status when it does not load.
 * reportBuf receives the report mscclpp-plan verify prints. Some version 3 libraries lack this
 * function: look the symbol up first. */
MSCCLPP_API int mscclppPlanVerify(const char* path, const char* json, size_t jsonLen, char* reportBuf, size_t reportLen,
                                  char* errBuf, size_t errLen);

/* MSCCLPP_PLAN_API_VERSION of the library, so a binding can check that it matches. */
MSCCLPP_API int mscclppPlanApiVersion(void);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_PLAN_API_H_ */
