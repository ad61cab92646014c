// Who we are: the host identity that decides which ranks share a host (shared memory, CUDA IPC)
// and this process's identity (which decides whether an imported registration is our own).
#ifndef MSCCLPP_COMM_HOST_IDENTITY_HPP_
#define MSCCLPP_COMM_HOST_IDENTITY_HPP_

#include <cstdint>
#include <string>

namespace mscclpp::comm {

// MSCCLPP_HOSTID when set, else "<host name>:<boot id>" (/proc/sys/kernel/random/boot_id; two
// containers on one machine share it, two machines never do). At most kMaxHostIdBytes bytes.
std::string computeHostId();
constexpr size_t kMaxHostIdBytes = 240;

uint64_t hostIdHash(const std::string& hostId);

struct ProcessIdentity {
  uint64_t token;  // random, regenerated in a forked child
  int32_t pid;
};
// Thread-safe.
ProcessIdentity thisProcess();

}  // namespace mscclpp::comm

#endif  // MSCCLPP_COMM_HOST_IDENTITY_HPP_
