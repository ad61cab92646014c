#include "comm/host_identity.hpp"

#include <unistd.h>

#include <cstring>
#include <fstream>
#include <mutex>

#include "core/enforce.hpp"
#include "core/hash.hpp"
#include "core/params.hpp"
#include "core/random.hpp"

namespace mscclpp::comm {

std::string computeHostId() {
  std::string id = params::hostId();
  if (id.empty()) {
    char name[256] = {0};
    if (gethostname(name, sizeof(name) - 1) != 0) throw SystemError("gethostname", errno);
    std::string bootId;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, bootId);
    id = std::string(name) + ":" + (bootId.empty() ? "no-boot-id" : bootId);
  }
  MSCCLPP_ENFORCE(id.size() <= kMaxHostIdBytes, ErrorCode::InvalidArgument,
                  "host id '%s' has %zu bytes, more than %zu (MSCCLPP_HOSTID)", id.c_str(), id.size(), kMaxHostIdBytes);
  return id;
}

uint64_t hostIdHash(const std::string& hostId) { return hashString("host:" + hostId); }

ProcessIdentity thisProcess() {
  // A process-wide fact like the pid itself,
  // recomputed after fork so parent and child differ.
  static std::mutex mutex;
  static ProcessIdentity identity{0, -1};
  std::lock_guard<std::mutex> lock(mutex);
  int32_t pid = static_cast<int32_t>(getpid());
  if (identity.pid != pid) {
    identity = ProcessIdentity{randomU64("the process token"), pid};
  }
  return identity;
}

}  // namespace mscclpp::comm
