// mscclpp_c.h: executors and execute().
#include <memory>

#include "capi/guard.hpp"
#include "capi/handles.hpp"
#include "capi/plan_handle.hpp"
#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"

namespace {

using mscclpp::ErrorCode;

mscclpp::ReduceOp reduceOpOf(int rank, int redOp) {
  if (redOp == -1) return mscclpp::ReduceOp::Sum;  // a collective that does not reduce
  MSCCLPP_ENFORCE(redOp != static_cast<int>(mscclpp::ReduceOp::PreMulSum), ErrorCode::InvalidArgument,
                  "mscclppExecute: rank %d: redOp %d (premulsum) needs a scalar, which this API does not take", rank,
                  redOp);
  MSCCLPP_ENFORCE(redOp >= 0 && redOp < static_cast<int>(mscclpp::ReduceOp::PreMulSum), ErrorCode::InvalidArgument,
                  "mscclppExecute: rank %d: redOp %d is not a reduce op (NCCL numbering: 0 sum, 1 prod, 2 max, 3 min, "
                  "4 avg; -1 for collectives that do not reduce)",
                  rank, redOp);
  return static_cast<mscclpp::ReduceOp>(redOp);
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

int mscclppExecutorCreate(mscclppComm_t comm, mscclppExecutor_t* executor, char* errBuf, size_t errLen) {
  if (executor != nullptr) *executor = nullptr;
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecutorCreate: the output pointer is NULL");
    MSCCLPP_ENFORCE(comm != nullptr && comm->comm != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecutorCreate: the communicator handle is NULL");
    auto handle = std::make_unique<mscclppExecutorHandle>();
    handle->comm = comm->comm;
    handle->executor = std::make_unique<mscclpp::Executor>(comm->comm);
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

int mscclppExecute(mscclppExecutor_t executor, int rank, const void* sendBuff, void* recvBuff, size_t sendBytes,
                   size_t recvBytes, int dtype, mscclppPlan_t plan, void* stream, int redOp, char* errBuf,
                   size_t errLen) {
  return mscclpp::capi::guarded(errBuf, errLen, [&] {
    MSCCLPP_ENFORCE(executor != nullptr && executor->executor != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecute: the executor handle is NULL");
    MSCCLPP_ENFORCE(plan != nullptr, ErrorCode::InvalidArgument,
                    "mscclppExecute: rank %d: the plan handle is NULL (no plan was selected for this call)", rank);
    const mscclpp::Communicator& comm = *executor->comm;
    MSCCLPP_ENFORCE(rank == comm.rank(), ErrorCode::InvalidArgument,
                    "mscclppExecute: rank %d was given, but this executor's communicator is rank %d of %d", rank,
                    comm.rank(), comm.size());
    MSCCLPP_ENFORCE(dtype >= 0 && dtype < mscclpp::kNumDataTypes, ErrorCode::InvalidArgument,
                    "mscclppExecute: rank %d: dtype %d is not a datatype (NCCL numbering: 0 int8, 1 uint8, 2 int32, "
                    "3 uint32, 4 int64, 5 uint64, 6 float16, 7 float32, 8 float64, 9 bfloat16, 10 float8e4m3, "
                    "11 float8e5m2)",
                    rank, dtype);
    const mscclpp::ReduceOp op = reduceOpOf(rank, redOp);
    const mscclpp::plan::PlanPtr loaded = plan->planFor(rank);
    checkMessageSize(loaded->header, rank, sendBytes, recvBytes);
    mscclpp::ScopedLogRank logRank(rank);
    executor->executor->execute(rank, sendBuff, recvBuff, sendBytes, recvBytes, static_cast<mscclpp::DataType>(dtype),
                                loaded, stream, mscclpp::PacketType::LL16, op);
    return static_cast<int>(mscclppSuccess);
  });
}
