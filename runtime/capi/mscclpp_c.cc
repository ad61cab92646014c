// mscclpp_c.h over the runtime: unique ids, communicators, executors and plan handles, for the
// Python package's ctypes bindings. Every entry point runs in the one guard of capi/guard.hpp, so
// no exception crosses the C boundary. A handle holds the C++ objects it stands for.
#include "mscclpp/mscclpp_c.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/net/net_interface.hpp"
#include "core/net/socket.hpp"
#include "core/params.hpp"
#include "executor/executor_internal.hpp"
#include "mscclpp/communicator.hpp"
#include "plan/c_request.hpp"
#include "plan/registry.hpp"
#include "plan/variable_sizes.hpp"

static_assert(MSCCLPP_C_UNIQUE_ID_BYTES == MSCCLPP_UNIQUE_ID_BYTES, "the C header's id size must match bootstrap.hpp");
static_assert(MSCCLPP_C_DEVICE_AUTO == mscclpp::kDeviceAuto && MSCCLPP_C_DEVICE_HOST == mscclpp::kHostDevice,
              "the C header's device constants must match communicator.hpp");

// ---- the handles

// A communicator shared with the executors built on it, which keep it alive.
struct mscclppCommHandle {
  std::shared_ptr<mscclpp::Communicator> comm;
  // The barrier's own view of the bootstrap, so it never mixes with the communicator's or the
  // executor's traffic.
  std::shared_ptr<mscclpp::Bootstrap> control;
};

struct mscclppExecutorHandle {
  std::shared_ptr<mscclpp::Communicator> comm;  // whose rank execute() checks against
  std::unique_ptr<mscclpp::exec::RuntimeExecutor> executor;
};

// The request a plan was chosen for and, per rank, the plan loaded for that rank. Selection
// without a rank, as MSCCL++'s registry.select does, only chooses; the first execute() of a rank
// selects again for that rank, which loads its part of the plan and must give the same plan.
struct mscclppPlanHandle {
  // Copies request, strings included, and records the chosen plan's name.
  mscclppPlanHandle(const mscclpp::plan::SelectRequest& request, std::string chosenName);
  mscclppPlanHandle(const mscclppPlanHandle&) = delete;
  mscclppPlanHandle& operator=(const mscclppPlanHandle&) = delete;

  // The plan loaded for rank. Throws Error(InvalidUsage) naming both plans when the registry
  // now chooses another plan, or none, for this request. Thread-safe.
  mscclpp::plan::PlanPtr planFor(int rank);

  const std::string name;

 private:
  mscclpp::plan::SelectRequest request_;  // rank -1; tags_ point into tagStorage_
  std::vector<std::string> tagStorage_;
  std::vector<const char*> tags_;
  std::mutex mutex_;
  std::map<int, mscclpp::plan::PlanPtr> loaded_;
};

mscclppPlanHandle::mscclppPlanHandle(const mscclpp::plan::SelectRequest& request, std::string chosenName)
    : name(std::move(chosenName)), request_(request) {
  for (int i = 0; i < request.nTags; ++i) tagStorage_.emplace_back(request.tags[i]);
  for (const auto& t : tagStorage_) tags_.push_back(t.c_str());
  request_.tags = tags_.empty() ? nullptr : tags_.data();
  request_.nTags = static_cast<int>(tags_.size());
  request_.rank = -1;
}

mscclpp::plan::PlanPtr mscclppPlanHandle::planFor(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loaded_.find(rank);
  if (it != loaded_.end()) return it->second;
  mscclpp::plan::SelectRequest r = request_;
  r.rank = rank;
  const mscclpp::plan::SelectionPtr selection = mscclpp::plan::Registry::instance().select(r);
  MSCCLPP_ENFORCE(selection->plan != nullptr && selection->name == name, mscclpp::ErrorCode::InvalidUsage,
                  "rank %d: plan '%s' was selected for this call, but the registry now %s (%s); the registrations or "
                  "the selector changed since: select the plan again",
                  rank, name.c_str(),
                  selection->name.empty() ? "chooses no plan" : ("chooses '" + selection->name + "'").c_str(),
                  selection->reason.c_str());
  loaded_.emplace(rank, selection->plan);
  return selection->plan;
}

namespace mscclpp::capi {
namespace {

// ---- the bootstrap root's address, MSCCL++'s "interfaceIpPortTrio"

struct RootAddress {
  std::string text;           // as given, for messages
  std::string interfaceName;  // "" when the text names no interface
  std::string hostPort;       // "ip:port" or "[v6]:port": what TcpBootstrap::initialize takes
};

constexpr const char* kForms = "interface:ip:port, interface:[ipv6]:port, ip:port or [ipv6]:port";

// "eth0 10.0.0.1, lo 127.0.0.1": what a message lists as the interfaces that are up.
std::string describeInterfaces(const std::vector<net::NetInterface>& list) {
  std::string out;
  for (const auto& i : list) {
    net::SocketAddress a = i.address;
    a.setPort(0);
    std::string host = a.toString();
    host = host.substr(0, host.rfind(':'));  // drop the ":0"
    out += (out.empty() ? "" : ", ") + i.name + " " + host;
  }
  return out.empty() ? "none" : out;
}

// Splits "interface:ip:port", "interface:[v6]:port", "ip:port" or "[v6]:port". Throws
// Error(InvalidArgument) naming the text and the accepted forms; the bootstrap checks the host
// and port themselves when it parses hostPort.
RootAddress parseRootAddress(const std::string& text) {
  RootAddress r;
  r.text = text;
  MSCCLPP_ENFORCE(!text.empty(), ErrorCode::InvalidArgument, "bootstrap address is empty: expected %s", kForms);
  const size_t bracket = text.find('[');
  if (bracket != std::string::npos) {
    // IPv6: everything from '[' on is the host:port; before it, nothing or "interface:".
    if (bracket > 0) {
      MSCCLPP_ENFORCE(bracket >= 2 && text[bracket - 1] == ':' && text.find(':') == bracket - 1,
                      ErrorCode::InvalidArgument, "bootstrap address '%s': expected %s", text.c_str(), kForms);
      r.interfaceName = text.substr(0, bracket - 1);
    }
    r.hostPort = text.substr(bracket);
  } else {
    size_t colons = 0;
    for (char c : text) colons += c == ':';
    MSCCLPP_ENFORCE(colons == 1 || colons == 2, ErrorCode::InvalidArgument,
                    "bootstrap address '%s' has %zu ':'; expected %s (write IPv6 addresses in brackets)", text.c_str(),
                    colons, kForms);
    if (colons == 2) {
      const size_t first = text.find(':');
      MSCCLPP_ENFORCE(first > 0, ErrorCode::InvalidArgument, "bootstrap address '%s': the interface name is empty",
                      text.c_str());
      r.interfaceName = text.substr(0, first);
      r.hostPort = text.substr(first + 1);
    } else {
      r.hostPort = text;
    }
  }
  return r;
}

// The bootstrap chooses its listening interface itself (MSCCLPP_SOCKET_IFNAME, or loopback for a
// loopback root), so an interface named in the address can only be checked, not imposed. Throws
// Error(InvalidArgument), naming both interfaces, when the named one is not up or when the
// bootstrap's own "host:port" is not one of its addresses.
void checkListenInterface(const RootAddress& root, const std::string& listenHostPort, int rank, int nRanks) {
  if (root.interfaceName.empty()) return;
  const std::vector<net::NetInterface> up = net::listInterfaces();
  bool named = false;
  for (const auto& i : up) named = named || i.name == root.interfaceName;
  MSCCLPP_ENFORCE(named, ErrorCode::InvalidArgument,
                  "rank %d/%d: bootstrap address '%s' names interface %s, which is not up or has no usable address "
                  "(up: %s)",
                  rank, nRanks, root.text.c_str(), root.interfaceName.c_str(), describeInterfaces(up).c_str());
  net::SocketAddress listening = net::SocketAddress::parse(listenHostPort);
  listening.setPort(0);
  std::string usedName = "an unknown interface";
  for (const auto& i : up) {
    net::SocketAddress a = i.address;
    a.setPort(0);
    if (a == listening) {
      if (i.name == root.interfaceName) return;
      usedName = "interface " + i.name;
    }
  }
  const std::string spec = params::socketIfname();
  MSCCLPP_THROW(ErrorCode::InvalidArgument,
                "rank %d/%d: bootstrap address '%s' names interface %s, but this rank's bootstrap listens on %s (%s, "
                "chosen by %s); set MSCCLPP_SOCKET_IFNAME==%s for the job, or leave the interface out of the address",
                rank, nRanks, root.text.c_str(), root.interfaceName.c_str(), listenHostPort.c_str(), usedName.c_str(),
                spec.empty() ? "the default rule: a loopback root keeps the job on loopback, else the first "
                               "non-loopback interface"
                             : ("MSCCLPP_SOCKET_IFNAME=" + spec).c_str(),
                root.interfaceName.c_str());
}

}  // namespace
}  // namespace mscclpp::capi

namespace {

using mscclpp::ErrorCode;

// ---- arguments

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

// redOp in NCCL's numbering, or -1 for a collective that does not reduce. Premulsum (5) needs the
// scalar, which only the *WithScalar entry points take; a scalar goes with premulsum only.
mscclpp::ReduceOp reduceOpOf(const char* function, int rank, int redOp, bool takesScalar, const void* scalar) {
  MSCCLPP_ENFORCE(redOp == -1 || (redOp >= 0 && redOp <= static_cast<int>(mscclpp::ReduceOp::PreMulSum)),
                  ErrorCode::InvalidArgument,
                  "%s: rank %d: redOp %d is not a reduce op (NCCL numbering: 0 sum, 1 prod, 2 max, 3 min, 4 avg, "
                  "5 premulsum; -1 for collectives that do not reduce)",
                  function, rank, redOp);
  const bool premul = redOp == static_cast<int>(mscclpp::ReduceOp::PreMulSum);
  MSCCLPP_ENFORCE(!premul || takesScalar, ErrorCode::InvalidArgument,
                  "%s: rank %d: redOp %d (premulsum) needs a scalar, which this API does not take; call %sWithScalar",
                  function, rank, redOp, function);
  MSCCLPP_ENFORCE(!premul || scalar != nullptr, ErrorCode::InvalidArgument,
                  "%s: rank %d: redOp %d (premulsum) needs a scalar: one element of the call's dtype in host memory, "
                  "got NULL",
                  function, rank, redOp);
  MSCCLPP_ENFORCE(premul || scalar == nullptr, ErrorCode::InvalidArgument,
                  "%s: rank %d: a scalar was given with redOp %d; only premulsum (5) takes one", function, rank, redOp);
  return redOp == -1 ? mscclpp::ReduceOp::Sum : static_cast<mscclpp::ReduceOp>(redOp);
}

// The plan's size range is part of what it promises to serve (a selection checks it too).
void checkMessageSize(const mscclpp::plan::PlanHeader& h, int rank, size_t sendBytes, size_t recvBytes) {
  const bool byOutput = h.collective == mscclpp::plan::Collective::AllGather;
  const uint64_t message = byOutput ? recvBytes : sendBytes;
  MSCCLPP_ENFORCE(message >= h.minMessageSize && message <= h.maxMessageSize, ErrorCode::NotSupported,
                  "plan '%s' (%s) serves messages of %llu to %llu bytes; rank %d's call has a %s size of %llu bytes "
                  "(sendBytes=%zu, recvBytes=%zu)",
                  h.name.c_str(), h.source.c_str(), static_cast<unsigned long long>(h.minMessageSize),
                  static_cast<unsigned long long>(h.maxMessageSize), rank, byOutput ? "receive" : "send",
                  static_cast<unsigned long long>(message), sendBytes, recvBytes);
}

}  // namespace

// ---- unique ids and communicators

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

// ---- executors

int mscclppExecutorCreate(mscclppComm_t comm, mscclppExecutor_t* executor, char* errBuf, size_t errLen) {
  if (executor != nullptr) *executor = nullptr;
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecutorCreate: the output pointer is NULL");
    MSCCLPP_ENFORCE(comm != nullptr && comm->comm != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecutorCreate: the communicator handle is NULL");
    auto handle = std::make_unique<mscclppExecutorHandle>();
    handle->comm = comm->comm;
    handle->executor = std::make_unique<mscclpp::exec::RuntimeExecutor>(comm->comm);
    MSCCLPP_INFO(mscclpp::LogExec, "C API: executor for rank %d/%d on the %s backend", handle->comm->rank(),
                 handle->comm->size(), mscclpp::backendName(handle->executor->backend()));
    *executor = handle.release();
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppExecutorBackend(mscclppExecutor_t executor, char* nameBuf, size_t nameLen) {
  return mscclpp::capi::guarded(nameBuf, nameLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr && executor->executor != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecutorBackend: the executor handle is NULL");
    mscclpp::capi::writeText(nameBuf, nameLen, mscclpp::backendName(executor->executor->backend()));
    return static_cast<int>(mscclppSuccess);
  });
}

int mscclppExecutorDestroy(mscclppExecutor_t executor) {
  return mscclpp::capi::guarded(nullptr, 0, [&] {
    delete executor;
    return static_cast<int>(mscclppSuccess);
  });
}

namespace {

// mscclppExecute and mscclppExecuteWithScalar (function names the caller in messages).
int executeFixed(const char* function, mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                 size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream, int redOp,
                 bool takesScalar, const void* scalar, char* errBuf, size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr && executor->executor != nullptr, ErrorCode::InvalidArgument,
                    "%s: the executor handle is NULL", function);
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument,
                    "%s: rank %d: the plan handle is NULL (no plan was selected for this call)", function, rank);
    const mscclpp::Communicator& comm = *executor->comm;
    MSCCLPP_ENFORCE(rank == comm.rank(), ErrorCode::InvalidArgument,
                    "%s: rank %d was given, but this executor's communicator is rank %d of %d", function, rank,
                    comm.rank(), comm.size());
    MSCCLPP_ENFORCE(dtype >= 0 && dtype < mscclpp::kNumDataTypes, ErrorCode::InvalidArgument,
                    "%s: rank %d: dtype %d is not a datatype (NCCL numbering: 0 int8, 1 uint8, 2 int32, "
                    "3 uint32, 4 int64, 5 uint64, 6 float16, 7 float32, 8 float64, 9 bfloat16, 10 float8e4m3, "
                    "11 float8e5m2)",
                    function, rank, dtype);
    const mscclpp::ReduceOp op = reduceOpOf(function, rank, redOp, takesScalar, scalar);
    const mscclpp::plan::PlanPtr loaded = plan->planFor(rank);
    checkMessageSize(loaded->header, rank, sendBytes, recvBytes);
    mscclpp::ScopedLogRank logRank(rank);
    executor->executor->execute(rank, sendBuff, recvBuff, sendBytes, recvBytes, static_cast<mscclpp::DataType>(dtype),
                                loaded, stream, mscclpp::PacketType::LL16, op, scalar);
    return static_cast<int>(mscclppSuccess);
  });
}

// mscclppExecuteSplits and mscclppExecuteSplitsWithScalar.
int executeSplits(const char* function, mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                  size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan, const uint64_t* counts,
                  int countsOnDevice, void* stream, int redOp, bool takesScalar, const void* scalar, char* errBuf,
                  size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr && executor->executor != nullptr, ErrorCode::InvalidArgument,
                    "%s: the executor handle is NULL", function);
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument,
                    "%s: rank %d: the plan handle is NULL (no plan was selected for this call)", function, rank);
    MSCCLPP_ENFORCE(counts != nullptr, ErrorCode::InvalidArgument, "%s: rank %d: counts is NULL", function, rank);
    const mscclpp::Communicator& comm = *executor->comm;
    MSCCLPP_ENFORCE(rank == comm.rank(), ErrorCode::InvalidArgument,
                    "%s: rank %d was given, but this executor's communicator is rank %d of %d", function, rank,
                    comm.rank(), comm.size());
    MSCCLPP_ENFORCE(dtype >= 0 && dtype < mscclpp::kNumDataTypes, ErrorCode::InvalidArgument,
                    "%s: rank %d: dtype %d is not a datatype (NCCL numbering)", function, rank, dtype);
    const mscclpp::ReduceOp op = reduceOpOf(function, rank, redOp, takesScalar, scalar);
    const mscclpp::plan::PlanPtr loaded = plan->planFor(rank);
    const mscclpp::plan::PlanHeader& h = loaded->header;
    MSCCLPP_ENFORCE(h.variableSizes, ErrorCode::InvalidArgument,
                    "%s: plan '%s' (%s) has fixed sizes; run it with mscclppExecute", function, h.name.c_str(),
                    h.source.c_str());
    if (!countsOnDevice) {
      // The size range holds the largest segment; device counts are checked when the kernel reads them.
      uint64_t message = 0;
      MSCCLPP_ENFORCE(
          mscclpp::plan::variableMessageBytes(h.worldSize, counts,
                                              mscclpp::dataTypeSize(static_cast<mscclpp::DataType>(dtype)), &message) &&
              message >= h.minMessageSize && message <= h.maxMessageSize,
          ErrorCode::NotSupported,
          "plan '%s' (%s) serves segments of %llu to %llu bytes; rank %d's counts have a largest segment "
          "of %llu bytes",
          h.name.c_str(), h.source.c_str(), static_cast<unsigned long long>(h.minMessageSize),
          static_cast<unsigned long long>(h.maxMessageSize), rank, static_cast<unsigned long long>(message));
    }
    mscclpp::ScopedLogRank logRank(rank);
    mscclpp::SplitSizes splits;
    splits.counts = counts;
    splits.onDevice = countsOnDevice != 0;
    if (std::optional<std::string> refusal = executor->executor->tryExecuteVariable(
            rank, sendBuff, recvBuff, sendBytes, recvBytes, static_cast<mscclpp::DataType>(dtype), loaded, splits,
            stream, mscclpp::PacketType::LL16, op, scalar))
      throw mscclpp::Error(ErrorCode::NotSupported, *refusal);
    return static_cast<int>(mscclppSuccess);
  });
}

}  // namespace

int mscclppExecute(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                   size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream, int redOp, char* errBuf,
                   size_t errLen) {
  return executeFixed("mscclppExecute", executor, rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan, stream,
                      redOp, false, nullptr, errBuf, errLen);
}

int mscclppExecuteWithScalar(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                             size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream, int redOp,
                             const void* scalar, char* errBuf, size_t errLen) {
  return executeFixed("mscclppExecuteWithScalar", executor, rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan,
                      stream, redOp, true, scalar, errBuf, errLen);
}

int mscclppExecuteSplits(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                         size_t recvBytes, int dtype, mscclppPlan_t plan, const uint64_t* counts, int countsOnDevice,
                         void* stream, int redOp, char* errBuf, size_t errLen) {
  return executeSplits("mscclppExecuteSplits", executor, rank, sendBuff, recvBuff, sendBytes, recvBytes, dtype, plan,
                       counts, countsOnDevice, stream, redOp, false, nullptr, errBuf, errLen);
}

int mscclppExecuteSplitsWithScalar(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff,
                                   size_t sendBytes, size_t recvBytes, int dtype, mscclppPlan_t plan,
                                   const uint64_t* counts, int countsOnDevice, void* stream, int redOp,
                                   const void* scalar, char* errBuf, size_t errLen) {
  return executeSplits("mscclppExecuteSplitsWithScalar", executor, rank, sendBuff, recvBuff, sendBytes, recvBytes,
                       dtype, plan, counts, countsOnDevice, stream, redOp, true, scalar, errBuf, errLen);
}

// ---- plan handles

int mscclppPlanSelectHandle(const mscclppPlanRequest* request, mscclppPlan_t* plan, char* nameBuf, size_t nameLen,
                            char* reasonBuf, size_t reasonLen) {
  using mscclpp::ErrorCode;
  if (plan != nullptr) *plan = nullptr;
  mscclpp::capi::writeText(nameBuf, nameLen, "");
  return mscclpp::capi::guarded(reasonBuf, reasonLen, [&] {
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument,
                    "mscclppPlanSelectHandle: the output pointer plan is NULL");
    mscclpp::plan::SelectRequest r = mscclpp::plan::selectRequestFromC(request, "mscclppPlanSelectHandle");
    r.rank = -1;  // choose only: each rank loads its part at its first execute
    const mscclpp::plan::SelectionPtr selection = mscclpp::plan::Registry::instance().select(r);
    mscclpp::capi::writeText(reasonBuf, reasonLen, selection->reason);
    if (selection->name.empty()) return 0;
    *plan = new mscclppPlanHandle(r, selection->name);
    mscclpp::capi::writeText(nameBuf, nameLen, selection->name);
    return 1;
  });
}

int mscclppPlanHandleDestroy(mscclppPlan_t plan) {
  return mscclpp::capi::guarded(nullptr, 0, [&] {
    delete plan;
    return static_cast<int>(mscclppSuccess);
  });
}
