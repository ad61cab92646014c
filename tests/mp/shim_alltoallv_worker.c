/* One rank of an all-to-all-v written as a C program against the NCCL API, as MoE
 * dispatch issues it: a group of ncclSend/ncclRecv, calls with a zero count left out.
 * Usage: shim_alltoallv_worker <scenario> <rank> <nranks>, launched by shim_mp_launch
 * (rank 0 prints "ID <hex>", the others read it on stdin). Scenarios:
 *   splits    random uneven counts with zeros and empty rows (rank 0 sends to every
 *             rank), 6 datatypes, in and out of place, then ncclAlltoAll: every byte checked
 *   mismatch  rank 1 expects one element more from rank 0 than rank 0 sends: every rank's
 *             group end must fail with ncclInvalidUsage naming both ranks and counts
 *   ring      a send to the next rank and a receive from the previous: not an all-to-all
 * Prints "RESULT OK" and exits 0 when every check passed. */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int gRank = -1;
static int gFailures = 0;

static void finish(void) {
  printf(gFailures == 0 ? "RESULT OK\n" : "RESULT FAIL (%d checks)\n", gFailures);
  fflush(stdout);
  exit(gFailures == 0 ? 0 : 1);
}

#define CHECK(cond, ...)                 \
  do {                                   \
    if (!(cond)) {                       \
      printf("rank %d FAILED: ", gRank); \
      printf(__VA_ARGS__);               \
      printf(" (line %d)\n", __LINE__);  \
      fflush(stdout);                    \
      ++gFailures;                       \
    }                                    \
  } while (0)

#define NCCL_OK(call)                                                         \
  do {                                                                        \
    ncclResult_t r_ = (call);                                                 \
    if (r_ != ncclSuccess) {                                                  \
      CHECK(0, "%s returned %d: %s", #call, (int)r_, ncclGetLastError(NULL)); \
      finish();                                                               \
    }                                                                         \
  } while (0)

static ncclUniqueId exchangeId(int rank) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    printf("ID ");
    for (size_t i = 0; i < sizeof(id.internal); ++i) printf("%02x", (unsigned char)id.internal[i]);
    printf("\n");
    fflush(stdout);
    return id;
  }
  char line[512];
  if (fgets(line, sizeof(line), stdin) == NULL || strncmp(line, "ID ", 3) != 0) {
    CHECK(0, "no unique id on stdin");
    finish();
  }
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    unsigned v = 0;
    sscanf(line + 3 + 2 * i, "%2x", &v);
    id.internal[i] = (char)v;
  }
  return id;
}

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Elements rank s sends to rank d in call k: a quarter empty, some large, most small. */
static uint64_t countOf(int call, int s, int d, uint64_t large) {
  uint64_t h = mix((uint64_t)call * 1000003u + (uint64_t)s * 1009u + (uint64_t)d);
  switch (h % 8) {
    case 0:
    case 1:
      return 0;
    case 2:
      return large;
    default:
      return 1 + (h >> 8) % 97;
  }
}

/* Byte b of element i of what s sends to d: every byte of every segment tells where it came from. */
static unsigned char byteOf(int s, int d, uint64_t i, size_t b) {
  return (unsigned char)(s * 31 + d * 17 + i * 7 + b * 3 + 1);
}

/* One all-to-all-v, grouped as PyTorch issues it; returns the group end's result. */
static ncclResult_t allToAllV(ncclComm_t comm, int n, const uint64_t* S, size_t elem, ncclDataType_t dtype,
                              const char* send, char* recv) {
  uint64_t sendAt = 0, recvAt = 0;
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    const uint64_t out = S[gRank * n + p], in = S[p * n + gRank];
    if (out > 0) ncclSend(send + sendAt * elem, out, dtype, p, comm, NULL);
    if (in > 0) ncclRecv(recv + recvAt * elem, in, dtype, p, comm, NULL);
    sendAt += out;
    recvAt += in;
  }
  return ncclGroupEnd();
}

static void scenarioSplits(ncclComm_t comm, int n) {
  static const ncclDataType_t types[] = {ncclInt8, ncclFloat16, ncclInt32, ncclFloat32, ncclFloat64, ncclBfloat16};
  static const size_t sizes[] = {1, 2, 4, 4, 8, 2};
  uint64_t* S = calloc((size_t)n * n, sizeof(uint64_t));
  for (int call = 0; call < 12; ++call) {
    const int t = call % 6;
    const size_t elem = sizes[t];
    /* Segments up to 4 KiB run staged through scratch, larger ones (every third call) direct. */
    const uint64_t large = (call % 3 == 2 ? 96 * 1024 : 4096) / elem;
    uint64_t sendTotal = 0, recvTotal = 0;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) S[s * n + d] = countOf(call, s, d, large);
    /* Rank 0 sends to every rank, so it hears every rank's counts; other ranks may
     * skip any call, even all of them (a rank talking to no one is NCCL's). */
    for (int d = 0; d < n; ++d) S[d] += S[d] == 0 ? 1 : 0;
    for (int p = 0; p < n; ++p) {
      sendTotal += S[gRank * n + p];
      recvTotal += S[p * n + gRank];
    }
    const int inPlace = call % 4 == 3;
    const size_t bytes = (size_t)((sendTotal > recvTotal ? sendTotal : recvTotal) + 1) * elem;
    char* send = malloc(bytes);
    char* recv = inPlace ? send : malloc(bytes);
    uint64_t at = 0;
    for (int p = 0; p < n; ++p)
      for (uint64_t i = 0; i < S[gRank * n + p]; ++i, ++at)
        for (size_t b = 0; b < elem; ++b) send[at * elem + b] = (char)byteOf(gRank, p, i, b);
    if (!inPlace) memset(recv, 0xA5, bytes);
    NCCL_OK(allToAllV(comm, n, S, elem, types[t], send, recv));
    at = 0;
    int wrong = 0;
    for (int p = 0; p < n; ++p)
      for (uint64_t i = 0; i < S[p * n + gRank]; ++i, ++at)
        for (size_t b = 0; b < elem; ++b)
          if ((unsigned char)recv[at * elem + b] != byteOf(p, gRank, i, b) && wrong++ < 4)
            CHECK(0, "call %d: byte %zu of element %llu from rank %d is %u, expected %u", call, b,
                  (unsigned long long)i, p, (unsigned char)recv[at * elem + b], byteOf(p, gRank, i, b));
    if (!inPlace)
      for (size_t b = recvTotal * elem; b < bytes; ++b)
        if ((unsigned char)recv[b] != 0xA5 && wrong++ < 4)
          CHECK(0, "call %d: byte %zu past the segments written", call, b);
    if (recv != send) free(recv);
    free(send);
  }
  /* ncclAlltoAll: equal counts, on the same plans. */
  const size_t count = 1000;
  int32_t* send = malloc(count * n * sizeof(int32_t));
  int32_t* recv = malloc(count * n * sizeof(int32_t));
  for (size_t i = 0; i < count * n; ++i) send[i] = (int32_t)(gRank * 1000003 + i);
  NCCL_OK(ncclAlltoAll(send, recv, count, ncclInt32, comm, NULL));
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < count; ++i)
      if (recv[p * count + i] != (int32_t)(p * 1000003 + gRank * count + i)) {
        CHECK(0, "ncclAlltoAll: element %zu from rank %d is %d", i, p, recv[p * count + i]);
        break;
      }
  free(send);
  free(recv);
  free(S);
}

static void scenarioMismatch(ncclComm_t comm, int n) {
  uint64_t* S = calloc((size_t)n * n, sizeof(uint64_t));
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) S[s * n + d] = 3;
  char* send = calloc(1024, 1);
  char* recv = calloc(1024, 1);
  /* Rank 1 receives 4 elements from rank 0, which sends 3. */
  uint64_t sendAt = 0, recvAt = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ncclGroupStart();
  for (int p = 0; p < n; ++p) {
    const uint64_t in = (gRank == 1 && p == 0) ? 4 : S[p * n + gRank];
    ncclSend(send + sendAt * 4, S[gRank * n + p], ncclInt32, p, comm, NULL);
    ncclRecv(recv + recvAt * 4, in, ncclInt32, p, comm, NULL);
    sendAt += S[gRank * n + p];
    recvAt += in;
  }
  ncclResult_t r = ncclGroupEnd();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  const char* text = ncclGetLastError(comm);
  CHECK(r == ncclInvalidUsage, "group end returned %d, expected ncclInvalidUsage", (int)r);
  CHECK(strstr(text, "rank 1 receives 4 x i32 from rank 0, but rank 0 sends it 3 x i32") != NULL,
        "the error does not name both ranks and counts: %s", text);
  CHECK(seconds < 5, "the mismatch took %.1f s to report", seconds);
  printf("rank %d: mismatch reported in %.3f s: %s\n", gRank, seconds, text);
  free(send);
  free(recv);
  free(S);
}

static void scenarioRing(ncclComm_t comm, int n) {
  int32_t send[64], recv[64];
  for (int i = 0; i < 64; ++i) send[i] = gRank;
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send, 64, ncclInt32, (gRank + 1) % n, comm, NULL));
  NCCL_OK(ncclRecv(recv, 64, ncclInt32, (gRank + n - 1) % n, comm, NULL));
  NCCL_OK(ncclGroupEnd());
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s splits|mismatch|ring <rank> <nranks>\n", argv[0]);
    return 2;
  }
  gRank = atoi(argv[2]);
  const int n = atoi(argv[3]);
  ncclUniqueId id = exchangeId(gRank);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, n, id, gRank));
  if (strcmp(argv[1], "splits") == 0) {
    scenarioSplits(comm, n);
  } else if (strcmp(argv[1], "mismatch") == 0) {
    scenarioMismatch(comm, n);
  } else if (strcmp(argv[1], "ring") == 0) {
    scenarioRing(comm, n);
  } else {
    CHECK(0, "unknown scenario %s", argv[1]);
  }
  NCCL_OK(ncclCommDestroy(comm));
  finish();
  return 0;
}
