// Facts about NCCL's datatypes, reduce ops and collective kinds that the shim needs in one place: sizes,
// names for messages and logs, and the names the plan registry uses.
#ifndef MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_
#define MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mscclpp::shim {

// An enum argument exactly as the caller passed it. Callers may pass values outside the enum (that is what
// NCCL's checks are for); reading such a value as the enum type is undefined behaviour, so the shim reads the
// bits as int and only turns them back into the enum (toEnum) once they are known to be valid.
template <class E>
inline int rawEnum(const E& v) {
  static_assert(sizeof(E) == sizeof(int), "NCCL's enums are 4 bytes");
  int r;
  std::memcpy(&r, &v, sizeof(r));
  return r;
}
template <class E>
inline E toEnum(int v) {
  E e;
  std::memcpy(&e, &v, sizeof(e));
  return e;
}

// Bytes per element; 0 for a value outside ncclDataType_t.
inline size_t dtypeSize(int dtype) {
  static constexpr unsigned char kSizes[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype >= 0 && dtype < 12 ? kSizes[dtype] : 0;
}
// Short name used in logs and plan requests ("f32", "bf16", ...); "invalid" outside the enum.
const char* dtypeName(int dtype);
// "sum", "prod", "max", "min", "avg", "premulsum" (user ops), "invalid".
const char* redOpName(int op);

enum class CollKind : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AllToAll,
  Gather,
  Scatter,
  Send,
  Recv,
  // Not an NCCL call: a grouped send+recv pair the shim recognised as a two-rank exchange (a "sendrecv" plan).
  SendRecv,
};
constexpr int kNumCollKinds = 11;

// The name NCCL uses in its messages ("AllReduce", "Broadcast", "Send", ...). Inline: every call computes it.
inline const char* collApiName(CollKind kind) {
  static constexpr const char* kNames[kNumCollKinds] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                        "Reduce",    "AlltoAll",  "Gather",        "Scatter",
                                                        "Send",      "Recv",      "SendRecv"};
  int k = static_cast<int>(kind);
  return k >= 0 && k < kNumCollKinds ? kNames[k] : "Unknown";
}
// The collective name of plans and of MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION ("allreduce", ..., "send", "recv").
const char* collPlanName(CollKind kind);
inline bool isReduction(CollKind kind) {
  return kind == CollKind::AllReduce || kind == CollKind::ReduceScatter || kind == CollKind::Reduce;
}
inline bool hasRoot(CollKind kind) {
  return kind == CollKind::Broadcast || kind == CollKind::Reduce || kind == CollKind::Gather ||
         kind == CollKind::Scatter;
}
inline bool isP2p(CollKind kind) { return kind == CollKind::Send || kind == CollKind::Recv; }
// Parses a collective name as MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION spells it (case-insensitive; NCCL's
// spellings such as "AllReduce" work too); false for an unknown name.
bool collKindFromName(const char* name, CollKind* kind);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_
