#include "comm_init.hpp"

#include <memory>
#include <vector>

#include "comm.hpp"
#include "core/enforce.hpp"
#include "core/env_check.hpp"
#include "core/logger.hpp"
#include "cuda_glue.hpp"
#include "group.hpp"
#include "rank_link.hpp"

namespace mscclpp::shim {

void getUniqueId(ncclUniqueId* out) {
  checkEnvironment();
  MSCCLPP_ENFORCE(out != nullptr, ErrorCode::InvalidArgument, "GetUniqueId : out argument is NULL");
  *out = createLinkUniqueId();
}

ncclResult_t initRank(ncclComm_t* newcomm, int nRanks, const ncclUniqueId* ids, int nIds, int rank,
                      const ncclConfig_t* config, const char* opName) {
  checkEnvironment();  // a bad value fails init with ncclInvalidArgument, never a later call
  MSCCLPP_ENFORCE(newcomm != nullptr, ErrorCode::InvalidArgument, "%s : newcomm argument is NULL", opName);
  *newcomm = nullptr;
  MSCCLPP_ENFORCE(ids != nullptr, ErrorCode::InvalidArgument, "%s : commId argument is NULL", opName);
  MSCCLPP_ENFORCE(nIds > 0 && nIds <= nRanks, ErrorCode::InvalidArgument,
                  "improper usage of ncclCommInitRank: nId = %d, nranks=%d", nIds, nRanks);
  CommConfig cfg = CommConfig::parse(config);
  MSCCLPP_ENFORCE(nRanks >= 1 && rank >= 0 && rank < nRanks, ErrorCode::InvalidArgument,
                  "Invalid rank requested : %d/%d", rank, nRanks);

  // NCCL binds a rank to the device current at this call (also for inits deferred to the group end).
  auto comm = std::make_unique<Comm>(nRanks, rank, currentCudaDevice(), std::move(cfg));
  const ncclUniqueId id = ids[0];
  GroupState& group = threadGroup();
  if (group.active()) {
    Comm* c = comm.release();
    *newcomm = toHandle(c);
    c->setInitDeferred(true);
    group.addJob([c, id] {
      c->setInitDeferred(false);
      c->initialize(id);
    });
    return ncclSuccess;
  }
  if (!comm->config().blocking()) {
    Comm* c = comm.release();
    *newcomm = toHandle(c);
    c->startBackgroundInit(id);
    return ncclInProgress;
  }
  comm->initialize(id);  // on failure the object is freed here and *newcomm stays NULL
  *newcomm = toHandle(comm.release());
  return ncclSuccess;
}

void initAll(ncclComm_t* comms, int ndev, const int* devlist) {
  MSCCLPP_ENFORCE(comms != nullptr, ErrorCode::InvalidArgument, "CommInitAll : comms argument is NULL");
  MSCCLPP_ENFORCE(ndev >= 0, ErrorCode::InvalidArgument, "Invalid device count requested : %d", ndev);
  if (devlist != nullptr) {
    for (int i = 0; i < ndev; ++i) {
      // Several ranks may share a device here: plans serve them even where the real NCCL refuses.
      MSCCLPP_ENFORCE(devlist[i] >= 0, ErrorCode::InvalidArgument, "Invalid device %d (devlist[%d])", devlist[i], i);
    }
  }
  for (int i = 0; i < ndev; ++i) comms[i] = nullptr;
  if (ndev == 0) return;
  ncclUniqueId id = createLinkUniqueId();
  const int oldDev = currentCudaDevice();
  GroupState& group = threadGroup();
  group.start();
  try {
    for (int i = 0; i < ndev; ++i) {
      int dev = devlist ? devlist[i] : (oldDev >= 0 ? i : -1);
      setCudaDevice(dev);
      initRank(&comms[i], ndev, &id, 1, i, nullptr, "CommInitAll");
    }
  } catch (...) {
    group.reset();
    setCudaDevice(oldDev);
    throw;
  }
  setCudaDevice(oldDev);
  // The outermost end runs the deferred inits together (the caller's enclosing group, if any, does).
  if (group.end()) {
    std::vector<std::function<void()>> jobs = group.takeJobs();
    ncclResult_t latched = group.takeLatched();
    MSCCLPP_ENFORCE(latched == ncclSuccess, ErrorCode::InternalError, "CommInitAll : an earlier call failed (%d)",
                    static_cast<int>(latched));
    try {
      runConcurrently(jobs);
    } catch (...) {
      // All or nothing, as NCCL: a clique with a failed rank is unusable.
      for (int i = 0; i < ndev; ++i) {
        delete reinterpret_cast<Comm*>(comms[i]);
        comms[i] = nullptr;
      }
      throw;
    }
  }
}

}  // namespace mscclpp::shim
