// victim.cc's own definition (a separate translation unit, so the call stays an interposable call).
#include <cstdint>

namespace mscclpp::params {
int64_t planMaxBytes() { return 268435456; }
}  // namespace mscclpp::params
