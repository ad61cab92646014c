#include "core/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <string>

#include "mscclpp/errors.hpp"

namespace mscclpp {

void randomBytes(void* out, size_t bytes, const char* what) {
  auto* p = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::getrandom(p + done, bytes - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw SystemError(std::string("getrandom for ") + what, errno);
    }
    done += static_cast<size_t>(n);
  }
}

uint64_t randomU64(const char* what) {
  uint64_t v = 0;
  randomBytes(&v, sizeof(v), what);
  return v;
}

}  // namespace mscclpp
