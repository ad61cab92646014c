// Random bits from the kernel for secrets, nonces, tokens and unique names.
// One source keeps every random identifier unpredictable: never libc's rand or a clock.
#ifndef MSCCLPP_CORE_RANDOM_HPP_
#define MSCCLPP_CORE_RANDOM_HPP_

#include <cstddef>
#include <cstdint>

namespace mscclpp {

// Fills bytes bytes with getrandom(2);
// throws SystemError naming what on failure.
void randomBytes(void* out, size_t bytes, const char* what);

// 64 random bits from randomBytes.
uint64_t randomU64(const char* what);

}  // namespace mscclpp

#endif  // MSCCLPP_CORE_RANDOM_HPP_
