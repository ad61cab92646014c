#include "comm.hpp"

#include <cstring>
#include <functional>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "cuda_glue.hpp"
#include "guard.hpp"
#include "real_nccl.hpp"

namespace mscclpp::shim {

namespace {
uint32_t saltFor(const void* p) {
  // A value per object, so another communicator's user op is rejected.
  uint64_t h = reinterpret_cast<uintptr_t>(p);
  h ^= h >> 29;
  h *= 0x9e3779b97f4a7c15ull;
  return static_cast<uint32_t>(h >> 40);
}
}  // namespace

Comm::Comm(int nRanks, int rank, int cudaDev, CommConfig config)
    : nRanks_(nRanks), rank_(rank), cudaDev_(cudaDev), config_(std::move(config)), redOps_(saltFor(this)) {
  routes_.loadFromEnvironment();
}

Comm::~Comm() {
  joinBackgroundInit();
  killMagic();
}

void Comm::ensureReady(const char* opName, bool allowRevoked) const {
  MSCCLPP_ENFORCE(!aborted(), ErrorCode::Aborted, "%s : communicator (rank %d of %d) was aborted", opName, rank_,
                  nRanks_);
  MSCCLPP_ENFORCE(allowRevoked || !revoked(), ErrorCode::Aborted,
                  "%s : communicator (rank %d of %d) was revoked; only ncclCommDestroy, ncclCommSplit and "
                  "ncclCommShrink may use it now",
                  opName, rank_, nRanks_);
  MSCCLPP_ENFORCE(!finalized_, ErrorCode::InvalidUsage,
                  "%s : communicator (rank %d of %d) was finalized; only ncclCommDestroy may use it now", opName, rank_,
                  nRanks_);
  ncclResult_t r = asyncResult();
  if (r == ncclSuccess) {
    // A communicator that failed as a whole fails every later
    // call at once with that error: a dead peer, mismatched
    // calls, a deadlock. Split, shrink and finalize stay
    // allowed: shrinking away dead ranks is how a job goes on.
    ErrorCode code;
    std::string why;
    if (!allowRevoked && link_ && link_->failed(&code, &why)) {
      throw NcclResultError(toNcclResult(code), strFormat("%s : communicator (rank %d of %d) failed: %s", opName, rank_,
                                                          nRanks_, why.c_str()));
    }
    return;
  }
  if (r == ncclInProgress) {
    MSCCLPP_THROW(ErrorCode::InvalidArgument,
                  "%s : Attempt to use communicator before the previous operation returned ncclSuccess (rank %d of "
                  "%d is still initializing)",
                  opName, rank_, nRanks_);
  }
  throw NcclResultError(r, strFormat("%s : communicator (rank %d of %d) is in an error state: %s", opName, rank_,
                                     nRanks_, lastWarning().c_str()));
}

ncclResult_t Comm::asyncError() const {
  ncclResult_t r = asyncResult();
  if (r != ncclSuccess) return r;
  // link_ is set before the release store of ncclSuccess and stays
  // until destroy, so the acquire load above makes it safe to read.
  ErrorCode code;
  if (link_ && link_->failed(&code, nullptr)) return toNcclResult(code);
  return fallback_.asyncError();
}

void Comm::markReady() {
  MSCCLPP_INFO(LogShim, "comm %p rank %d of %d (%d per node, device %d) ready; NCCL fallback %s%s",
               static_cast<const void*>(this), rank_, nRanks_, nRanksPerNode(), cudaDev_,
               fallback_.available() ? "ready" : "unavailable: ",
               fallback_.available() ? "" : fallback_.unavailableReason().c_str());
  setAsyncResult(ncclSuccess);
}

void Comm::markFailed(ncclResult_t result) { setAsyncResult(result == ncclSuccess ? ncclInternalError : result); }

void Comm::adoptLink(std::unique_ptr<RankLink> link) {
  std::lock_guard<std::mutex> lock(connectorMutex_);
  link_ = std::move(link);
}

void Comm::initialize(const ncclUniqueId& id) {
  ScopedLogRank logRank(rank_);
  try {
    setCudaDevice(cudaDev_);
    LinkConnector* connector;
    {
      std::lock_guard<std::mutex> lock(connectorMutex_);
      MSCCLPP_ENFORCE(!aborted(), ErrorCode::Aborted,
                      "communicator rank %d of %d was aborted during its initialization", rank_, nRanks_);
      connector_ = makeLinkConnector(nRanks_, rank_);
      connector = connector_.get();
    }
    std::unique_ptr<RankLink> link = connector->connect(id);
    {
      std::lock_guard<std::mutex> lock(connectorMutex_);
      link_ = std::move(link);
      MSCCLPP_ENFORCE(!aborted(), ErrorCode::Aborted,
                      "communicator rank %d of %d was aborted during its initialization", rank_, nRanks_);
    }
    fallback_.createWithLink(*link_, config_);
    markReady();
  } catch (const NcclResultError& e) {
    markFailed(e.result());
    throw;
  } catch (const Error& e) {
    // A peer died meanwhile and its death aborted our
    // exchanges. Report the death, not the abort it caused.
    ErrorCode code;
    std::string why;
    if (link_ && link_->failed(&code, &why) && code != e.code()) {
      markFailed(toNcclResult(code));
      throw Error(code, why + "; " + e.what());
    }
    markFailed(toNcclResult(e.code()));
    throw;
  } catch (...) {
    markFailed(ncclInternalError);
    throw;
  }
}

void Comm::abortNetwork() {
  std::lock_guard<std::mutex> lock(connectorMutex_);
  if (connector_) connector_->abort();
  if (link_) link_->abort();
}

void Comm::startBackgroundInit(const ncclUniqueId& id) {
  setAsyncResult(ncclInProgress);
  initThread_ = std::thread([this, id] {
    // The error is recorded for ncclGetLastError and
    // kept as the async result the caller polls.
    (void)guarded([&] {
      initialize(id);
      return ncclSuccess;
    });
  });
}

void Comm::joinBackgroundInit() {
  if (initThread_.joinable()) initThread_.join();
}

LocalRegistration* LocalRegistrations::add(void* buff, size_t size, bool window, int winFlags) {
  auto r = std::make_unique<LocalRegistration>();
  r->buff = buff;
  r->size = size;
  r->window = window;
  r->winFlags = winFlags;
  records_.push_back(std::move(r));
  return records_.back().get();
}

bool LocalRegistrations::remove(const void* handle, bool window) {
  for (size_t i = 0; i < records_.size(); ++i) {
    if (records_[i].get() == handle && records_[i]->window == window) {
      records_.erase(records_.begin() + static_cast<long>(i));
      return true;
    }
  }
  return false;
}

bool LocalRegistrations::contains(const void* handle) const {
  for (const auto& r : records_) {
    if (r.get() == handle) return true;
  }
  return false;
}

bool isRealNcclComm(ncclComm_t handle) {
  if (handle == nullptr) return false;
  uint64_t magic = 0;
  std::memcpy(&magic, reinterpret_cast<const void*>(handle), sizeof(magic));
  return magic == kRealNcclCommMagic;
}

Comm* checkComm(ncclComm_t handle, const char* opName, const char* argName) {
  MSCCLPP_ENFORCE(handle != nullptr, ErrorCode::InvalidArgument, "%s : %s argument is NULL", opName, argName);
  Comm* c = reinterpret_cast<Comm*>(handle);
  MSCCLPP_ENFORCE(c->hasValidMagic(), ErrorCode::InvalidArgument,
                  "%s : %s %p is not a valid communicator (destroyed or corrupted)", opName, argName,
                  static_cast<void*>(handle));
  return c;
}

}  // namespace mscclpp::shim
