// Cooperative copies: numThreads threads each copy a strided share of the bytes, 16-byte vectors
// where both pointers allow, narrower words otherwise, and exact byte tails, so any size and
// alignment copies correctly. Plain loads and stores: the data is published to a peer by a later
// release, a semaphore signal or a FIFO push after a block barrier, never by the copy.
#ifndef MSCCLPP_COPY_DEVICE_HPP_
#define MSCCLPP_COPY_DEVICE_HPP_

#include <cstdint>
#include <cstring>

#include "device.hpp"

namespace mscclpp {

// A 16-byte vector for both compilers: uint4 exists only with the CUDA headers.
struct alignas(16) Vec16 {
  uint64_t lo, hi;
};

namespace detail {

template <class Word>
MSCCLPP_HOST_DEVICE_INLINE void copyWords(char* dst, const char* src, uint64_t nWords, uint32_t threadId,
                                          uint32_t numThreads) {
  Word* d = reinterpret_cast<Word*>(dst);
  const Word* s = reinterpret_cast<const Word*>(src);
  for (uint64_t i = threadId; i < nWords; i += numThreads) d[i] = s[i];
}

}  // namespace detail

MSCCLPP_HOST_DEVICE_INLINE void copy(void* dst, const void* src, uint64_t bytes, uint32_t threadId,
                                     uint32_t numThreads) {
  if (bytes == 0) return;
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#if !defined(MSCCLPP_DEVICE_COMPILE)
  // One host thread per block: the C library's copy is the fastest correct loop.
  if (numThreads == 1) {
    std::memmove(d, s, bytes);
    return;
  }
#endif
  uintptr_t misalign = (reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s));
  // Both pointers share a 16-byte phase: bytes up to 16-byte alignment, then vectors.
  if (((reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    uint64_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
    if (head > bytes) head = bytes;
    detail::copyWords<char>(d, s, head, threadId, numThreads);
    uint64_t nVec = (bytes - head) / 16;
    detail::copyWords<Vec16>(d + head, s + head, nVec, threadId, numThreads);
    uint64_t done = head + nVec * 16;
    detail::copyWords<char>(d + done, s + done, bytes - done, threadId, numThreads);
    return;
  }
  uint64_t done = 0;
  if ((misalign & 7) == 0) {
    done = bytes / 8 * 8;
    detail::copyWords<uint64_t>(d, s, bytes / 8, threadId, numThreads);
  } else if ((misalign & 3) == 0) {
    done = bytes / 4 * 4;
    detail::copyWords<uint32_t>(d, s, bytes / 4, threadId, numThreads);
  }
  detail::copyWords<char>(d + done, s + done, bytes - done, threadId, numThreads);
}

}  // namespace mscclpp

#endif  // MSCCLPP_COPY_DEVICE_HPP_
