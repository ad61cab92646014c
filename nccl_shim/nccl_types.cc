#include "nccl_types.hpp"

#include <strings.h>

namespace mscclpp::shim {

const char* dtypeName(int dtype) {
  switch (toEnum<ncclDataType_t>(dtype)) {
    case ncclInt8:
      return "i8";
    case ncclUint8:
      return "u8";
    case ncclInt32:
      return "i32";
    case ncclUint32:
      return "u32";
    case ncclInt64:
      return "i64";
    case ncclUint64:
      return "u64";
    case ncclFloat16:
      return "f16";
    case ncclFloat32:
      return "f32";
    case ncclFloat64:
      return "f64";
    case ncclBfloat16:
      return "bf16";
    case ncclFloat8e4m3:
      return "f8e4m3";
    case ncclFloat8e5m2:
      return "f8e5m2";
    default:
      return "invalid";
  }
}

const char* redOpName(int op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return op >= static_cast<int>(ncclNumOps) ? "premulsum" : "invalid";
  }
}

const char* collPlanName(CollKind kind) {
  switch (kind) {
    case CollKind::AllReduce:
      return "allreduce";
    case CollKind::AllGather:
      return "allgather";
    case CollKind::ReduceScatter:
      return "reducescatter";
    case CollKind::Broadcast:
      return "broadcast";
    case CollKind::Reduce:
      return "reduce";
    case CollKind::AllToAll:
      return "alltoall";
    case CollKind::Gather:
      return "gather";
    case CollKind::Scatter:
      return "scatter";
    case CollKind::Send:
      return "send";
    case CollKind::Recv:
      return "recv";
    case CollKind::SendRecv:
      return "sendrecv";
  }
  return "unknown";
}

bool collKindFromName(const char* name, CollKind* kind) {
  for (int k = 0; k < kNumCollKinds; ++k) {
    CollKind c = static_cast<CollKind>(k);
    if (strcasecmp(name, collPlanName(c)) == 0 || strcasecmp(name, collApiName(c)) == 0) {
      *kind = c;
      return true;
    }
  }
  return false;
}

}  // namespace mscclpp::shim
