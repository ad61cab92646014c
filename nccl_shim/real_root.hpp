// The root thread the real ncclGetUniqueId starts: it waits for every
// rank of the id, with no deadline, and ends only when all came or its
// listening socket is shut down. A twin that cannot be built on every
// rank never completes it, so rank 0 shuts it down: nothing the shim
// makes outlives its communicator.
#ifndef MSCCLPP_NCCL_SHIM_REAL_ROOT_HPP_
#define MSCCLPP_NCCL_SHIM_REAL_ROOT_HPP_

#include <nccl.h>
#include <sys/types.h>

namespace mscclpp::shim {

// The root's listening socket: among the sockets the call opened,
// the one listening on the id's port. None when it cannot be told
// (another NCCL's id layout, or NCCL_COMM_ID, which starts no root).
struct RealRoot {
  int fd = -1;
  ino_t inode = 0;
};

// The real ncclGetUniqueId, noting the root it started.
ncclResult_t realGetUniqueId(ncclUniqueId* id, RealRoot* root);

// Ends the root if it still waits: shuts its socket down, after
// checking it is the same socket, so its thread exits and closes it.
void releaseRealRoot(RealRoot* root);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_REAL_ROOT_HPP_
