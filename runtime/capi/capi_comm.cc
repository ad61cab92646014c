// mscclpp_c.h: unique ids, communicators and their queries.
#include <cstring>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/root_address.hpp"
#include "core/enforce.hpp"
#include "core/logger.hpp"

static_assert(MSCCLPP_C_UNIQUE_ID_BYTES == MSCCLPP_UNIQUE_ID_BYTES, "the C header's id size must match bootstrap.hpp");
static_assert(MSCCLPP_C_DEVICE_AUTO == mscclpp::kDeviceAuto && MSCCLPP_C_DEVICE_HOST == mscclpp::kHostDevice,
              "the C header's device constants must match communicator.hpp");

namespace {

using mscclpp::ErrorCode;

void checkRankArgs(const char* function, int rank, int nRanks, const mscclppComm_t* comm) {
  MSCCLPP_ENFORCE(comm != nullptr, ErrorCode::InvalidArgument, "%s: the output pointer comm is NULL", function);
  MSCCLPP_ENFORCE(nRanks >= 1, ErrorCode::InvalidArgument, "%s: nRanks=%d must be at least 1", function, nRanks);
  MSCCLPP_ENFORCE(rank >= 0 && rank < nRanks, ErrorCode::InvalidArgument, "%s: rank %d is not in 0..%d (nRanks=%d)",
                  function, rank, nRanks - 1, nRanks);
}

mscclppComm_t wrap(std::shared_ptr<mscclpp::Bootstrap> bootstrap, int device) {
  auto handle = std::make_unique<mscclppCommHandle>();
  handle->control = bootstrap->withNamespace("mscclpp.capi");
  handle->comm = std::make_shared<mscclpp::Communicator>(std::move(bootstrap), device);
  MSCCLPP_INFO(mscclpp::LogInit, "C API: communicator rank %d/%d ready (%d rank(s) on this host)", handle->comm->rank(),
               handle->comm->size(), handle->comm->nRanksPerNode());
  return handle.release();
}

mscclpp::Communicator& communicatorOf(const char* function, mscclppComm_t comm) {
  MSCCLPP_ENFORCE(comm != nullptr && comm->comm != nullptr, ErrorCode::InvalidArgument,
                  "%s: the communicator handle is NULL", function);
  return *comm->comm;
}

}  // namespace

int mscclppCApiVersion(void) { return MSCCLPP_C_API_VERSION; }

int mscclppUniqueIdCreate(uint8_t* id, size_t idLen, char* errBuf, size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(id != nullptr, ErrorCode::InvalidArgument, "mscclppUniqueIdCreate: id is NULL");
    MSCCLPP_ENFORCE(idLen == MSCCLPP_C_UNIQUE_ID_BYTES, ErrorCode::InvalidArgument,
                    "mscclppUniqueIdCreate: idLen=%zu, a unique id has %d bytes", idLen, MSCCLPP_C_UNIQUE_ID_BYTES);
    const mscclpp::UniqueId created = mscclpp::TcpBootstrap::createUniqueId();
    std::memcpy(id, created.data(), created.size());
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppCommInitUniqueId(const uint8_t* id, size_t idLen, int rank, int nRanks, int device, double timeoutSec,
                            mscclppComm_t* comm, char* errBuf, size_t errLen) {
  if (comm != nullptr) *comm = nullptr;
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    checkRankArgs("mscclppCommInitUniqueId", rank, nRanks, comm);
    MSCCLPP_ENFORCE(id != nullptr, ErrorCode::InvalidArgument, "mscclppCommInitUniqueId: id is NULL");
    MSCCLPP_ENFORCE(idLen == MSCCLPP_C_UNIQUE_ID_BYTES, ErrorCode::InvalidArgument,
                    "mscclppCommInitUniqueId: rank %d: idLen=%zu, a unique id has %d bytes", rank, idLen,
                    MSCCLPP_C_UNIQUE_ID_BYTES);
    mscclpp::UniqueId uid;
    std::memcpy(uid.data(), id, uid.size());
    auto bootstrap = std::make_shared<mscclpp::TcpBootstrap>(rank, nRanks);
    bootstrap->initialize(uid, timeoutSec);
    *comm = wrap(std::move(bootstrap), device);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppCommInitAddress(const char* address, int rank, int nRanks, int device, double timeoutSec,
                           mscclppComm_t* comm, char* errBuf, size_t errLen) {
  if (comm != nullptr) *comm = nullptr;
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    checkRankArgs("mscclppCommInitAddress", rank, nRanks, comm);
    MSCCLPP_ENFORCE(address != nullptr, ErrorCode::InvalidArgument, "mscclppCommInitAddress: address is NULL");
    const mscclpp::capi::RootAddress root = mscclpp::capi::parseRootAddress(address);
    auto bootstrap = std::make_shared<mscclpp::TcpBootstrap>(rank, nRanks);
    bootstrap->initialize(root.hostPort, timeoutSec);
    mscclpp::capi::checkListenInterface(root, bootstrap->listenAddress(), rank, nRanks);
    *comm = wrap(std::move(bootstrap), device);
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppCommGetInfo(mscclppComm_t comm, mscclppCommInfo* info, char* errBuf, size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    mscclpp::Communicator& c = communicatorOf("mscclppCommGetInfo", comm);
    MSCCLPP_ENFORCE(info != nullptr, ErrorCode::InvalidArgument, "mscclppCommGetInfo: info is NULL");
    info->rank = c.rank();
    info->nRanks = c.size();
    info->nRanksPerNode = c.nRanksPerNode();
    info->localRank = c.localRank();
    info->device = c.device();
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppCommBarrier(mscclppComm_t comm, char* errBuf, size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    communicatorOf("mscclppCommBarrier", comm);
    comm->control->barrier();
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppCommDestroy(mscclppComm_t comm) {
  return mscclpp::capi::guarded(nullptr, 0, [&] {
    delete comm;
    return static_cast<int>(mscclppSuccess);
  });
}
