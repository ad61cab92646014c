// Who we are: the host identity, which decides which ranks share
// a host for shared memory and CUDA IPC; and this process's
// identity, which tells an imported registration of our own.
#ifndef MSCCLPP_COMM_HOST_IDENTITY_HPP_
#define MSCCLPP_COMM_HOST_IDENTITY_HPP_

#include <cstdint>
#include <string>

namespace mscclpp::comm {

// MSCCLPP_HOSTID when set, else "<host name>:<boot id>" from
// /proc/sys/kernel/random/boot_id: two containers on one machine
// share it, two machines never do. At most kMaxHostIdBytes bytes.
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
