/* The test-double libnccl's inspection API (its NCCL API is nccl.h's). Tests reach it with dlopen(path,
 * RTLD_NOLOAD) + dlsym, so they talk to the very copy the shim loaded.
 *
 * The double records every NCCL call it receives: the function, every argument (pointers as %p, integers in
 * decimal) and the communicator handle, as text like
 *   "ncclAllReduce(sendbuff=0x1000, recvbuff=0x2000, count=8, datatype=7, op=0, comm=0x3000, stream=(nil))"
 * On a one-rank communicator it also moves the data as a one-rank collective would (copy send to recv), so
 * results can be checked end to end. Calls inside another call of the double (ncclBcast calls ncclBroadcast
 * through the dynamic linker, as the real NCCL does) are recorded with depth 1. */
#ifndef NCCL_DOUBLE_H_
#define NCCL_DOUBLE_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*ncclDoubleRecordCountFn)(void);
typedef const char* (*ncclDoubleRecordFn)(int i); /* the i-th call as text ("" out of range) */
typedef void* (*ncclDoubleRecordCommFn)(int i);   /* its communicator argument (NULL when none) */
typedef int (*ncclDoubleRecordDepthFn)(int i);    /* 0: called from outside the double */
typedef void (*ncclDoubleResetFn)(void);          /* forget every record */
typedef void (*ncclDoubleSetRecordingFn)(int on); /* 0: count calls only (benchmarks) */
typedef long long (*ncclDoubleCallCountFn)(void); /* every call, recorded or not */
/* Make ncclCommInitRank* fail with result on rank (-1: every rank) until reset. */
typedef void (*ncclDoubleFailInitFn)(int rank, int result);
/* 1 when the last ncclBcast's internal ncclBroadcast was bound inside the double, 0 when the dynamic linker
 * bound it elsewhere (e.g. to a preloaded shim), -1 before any ncclBcast. */
typedef int (*ncclDoubleBcastBoundInsideFn)(void);
/* The double's communicator structure is opaque but starts with NCCL's magic, like the real one's. */
typedef int (*ncclDoubleIsCommFn)(const void* comm);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_DOUBLE_H_ */
