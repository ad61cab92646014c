// Entry points of group semantics: ncclGroupStart, ncclGroupEnd, ncclGroupSimulateEnd (state in group.cc, the
// issue of the queued calls in dispatch.cc).
#include <algorithm>
#include <cstring>
#include <vector>

#include "api_common.hpp"
#include "core/enforce.hpp"
#include "dispatch.hpp"
#include "group.hpp"

using namespace mscclpp;        // NOLINT: entry points are thin wrappers
using namespace mscclpp::shim;  // NOLINT

namespace {

constexpr unsigned kSimInfoMagic = 0x74685283;  // NCCL_SIM_INFO_INITIALIZER

ncclResult_t endGroup(ncclSimInfo_t* simInfo) {
  GroupState& group = threadGroup();
  return guarded([&] {
    if (simInfo != nullptr) {
      // Read by its own size like NCCL does (an older caller's struct may be shorter).
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      info.magic = 0;
      size_t size = 0;
      std::memcpy(&size, simInfo, sizeof(size));
      std::memcpy(&info, simInfo, std::min(size, sizeof(info)));
      MSCCLPP_ENFORCE(info.magic == kSimInfoMagic, ErrorCode::InvalidArgument,
                      "ncclSimInfo_t argument not initialized via NCCL_SIM_INFO_INITIALIZER (magic 0x%x)", info.magic);
    }
    if (!group.end()) return ncclSuccess;
    // The outermost end: take everything out first, so that any failure below leaves this thread clean.
    std::vector<std::function<void()>> jobs = group.takeJobs();
    thread_local std::vector<CollCall> ops;
    group.takeOps(&ops);
    ncclResult_t latched = group.takeLatched();
    struct ClearOps {
      std::vector<CollCall>& v;
      ~ClearOps() { v.clear(); }
    } clearOps{ops};
    runConcurrently(jobs);  // deferred inits and splits: several ranks of this thread rendezvous together
    if (latched != ncclSuccess) return latched;  // its message was recorded by the call that failed
    if (simInfo != nullptr) {
      simulateGroupOps(ops, simInfo);
    } else {
      runGroupOps(ops);
    }
    return ncclSuccess;
  });
}

}  // namespace

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupStart);
ncclResult_t pncclGroupStart() {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupStart);
  threadGroup().start();
  return ncclSuccess;
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupEnd);
ncclResult_t pncclGroupEnd() {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupEnd);
  return endGroup(nullptr);
}

MSCCLPP_NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  MSCCLPP_PASS_THROUGH_IF_INSIDE_REAL(ncclGroupSimulateEnd, simInfo);
  return endGroup(simInfo);
}
