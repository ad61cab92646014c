/* The one status code of MSCCL++'s C APIs, mscclpp_c.h and plan_api.h, and the last error. Every C
 * entry point runs inside one guard, so a C++ exception never leaves it. A failing call returns a
 * negative mscclppStatus, writes its message to the caller's errBuf where it takes one, and
 * records it as this thread's mscclppGetLastError(). Counts and yes/no answers are never negative.
 * The numbering is stable: bindings such as the Python package map values to exception classes,
 * so a value is never reused and a new status gets a new negative value. */
#ifndef MSCCLPP_STATUS_H_
#define MSCCLPP_STATUS_H_

#include "mscclpp/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One status per mscclpp::ErrorCode (mscclpp/errors.hpp), plus the registry's two outcomes that
 * are not errors of the runtime: NotFound and AlreadyExists. */
typedef enum mscclppStatus {
  mscclppSuccess = 0,
  mscclppInvalidUsage = -1,    /* the API was used in the wrong order or state */
  mscclppInvalidArgument = -2, /* a bad value: argument, environment variable, size, dtype; a NULL pointer */
  mscclppSystemError = -3,     /* an OS call failed, or memory ran out */
  mscclppInternalError = -4,   /* a bug of ours */
  mscclppRemoteError = -5,     /* a peer misbehaved or went away */
  mscclppTimeout = -6,         /* a wait passed its deadline (MSCCLPP_TIMEOUT_S) */
  mscclppCudaError = -7,       /* the CUDA runtime or driver reported an error */
  mscclppInvalidPlan = -8,     /* a plan failed to load or validate */
  mscclppNotSupported = -9,    /* a request deliberately not served (e.g. a plan that cannot serve the call) */
  mscclppAborted = -10,        /* the communicator was aborted during the call */
  mscclppNotFound = -11,       /* no object of that name (mscclppPlanUnregister of an unknown plan) */
  mscclppAlreadyExists = -12   /* an object of that name exists (a plan name registered twice) */
} mscclppStatus;

/* "mscclppInvalidArgument" for mscclppInvalidArgument, ...; "unknown status" for any other value.
 * Never NULL; static storage. */
MSCCLPP_API const char* mscclppStatusName(int status);

/* The message of this thread's latest failed call, "" when none failed. A call that succeeds
 * leaves it as it was, as errno. Valid until the thread's next failing call. */
MSCCLPP_API const char* mscclppGetLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* MSCCLPP_STATUS_H_ */
