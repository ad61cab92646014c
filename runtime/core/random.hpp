// Random bits from the kernel (getrandom): secrets, nonces, process tokens and unique names. One
// place, so that every random identifier of the runtime is unpredictable (never a libc pseudo-random sequence or a
// clock).
#ifndef MSCCLPP_CORE_RANDOM_HPP_
#define MSCCLPP_CORE_RANDOM_HPP_

#include <cstddef>
#include <cstdint>

namespace mscclpp {

// Fills `bytes` bytes with getrandom(2); throws SystemError naming `what` when the kernel refuses.
void randomBytes(void* out, size_t bytes, const char* what);

// 64 random bits (randomBytes).
uint64_t randomU64(const char* what);

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_RANDOM_HPP_
