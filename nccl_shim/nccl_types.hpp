// What the shim knows of NCCL's datatypes, reduce ops and collectives:
// sizes, names for messages and logs, and the names plans use.
#ifndef MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_
#define MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mscclpp::shim {

// An enum argument's bits as the caller passed them.
// Callers may pass values outside the enum, which NCCL's
// checks catch. Reading those as the enum is undefined
// behaviour, so the shim keeps them as int, and toEnum
// turns them back only once they are known to be valid.
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

// Bytes per element; 0 outside ncclDataType_t.
inline size_t dtypeSize(int dtype) {
  static constexpr unsigned char kSizes[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype >= 0 && dtype < 12 ? kSizes[dtype] : 0;
}
// The short name of logs and plan requests,
// such as "bf16"; "invalid" outside the enum.
const char* dtypeName(int dtype);
// "sum", "prod", "max", "min", "avg",
// "premulsum" for user ops, or "invalid".
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
  // Not an NCCL call: a grouped send and recv the shim recognised
  // as a two-rank exchange, which "sendrecv" plans serve.
  SendRecv,
};
constexpr int kNumCollKinds = 11;

// The name NCCL uses in its messages, such as
// "AllReduce". Inline, since every call computes it.
inline const char* collApiName(CollKind kind) {
  static constexpr const char* kNames[kNumCollKinds] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                        "Reduce",    "AlltoAll",  "Gather",        "Scatter",
                                                        "Send",      "Recv",      "SendRecv"};
  int k = static_cast<int>(kind);
  return k >= 0 && k < kNumCollKinds ? kNames[k] : "Unknown";
}
// The name plans and
// MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION use: "allreduce".
const char* collPlanName(CollKind kind);
inline bool isReduction(CollKind kind) {
  return kind == CollKind::AllReduce || kind == CollKind::ReduceScatter || kind == CollKind::Reduce;
}
inline bool hasRoot(CollKind kind) {
  return kind == CollKind::Broadcast || kind == CollKind::Reduce || kind == CollKind::Gather ||
         kind == CollKind::Scatter;
}
inline bool isP2p(CollKind kind) { return kind == CollKind::Send || kind == CollKind::Recv; }
// Parses a collective name in either spelling,
// in any case. False for an unknown name.
bool collKindFromName(const char* name, CollKind* kind);

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_NCCL_TYPES_HPP_
