// Per-communicator routing rules that do not depend on the call's buffers: which collectives the user forced to
// the real NCCL (MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION, read once when the communicator is created so the hot
// path only tests a bit).
#ifndef MSCCLPP_NCCL_SHIM_ROUTE_TABLE_HPP_
#define MSCCLPP_NCCL_SHIM_ROUTE_TABLE_HPP_

#include <cstdint>
#include <string>

#include "nccl_types.hpp"

namespace mscclpp::shim {

class RouteTable {
 public:
  // Parses a comma list of collective names or "all" (case-insensitive, blanks ignored); throws
  // Error(InvalidArgument) naming the variable and the unknown name.
  static uint32_t parseForcedList(const std::string& list);

  // Reads MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION.
  void loadFromEnvironment();
  void setForcedMask(uint32_t mask) { forcedMask_ = mask; }
  uint32_t forcedMask() const { return forcedMask_; }
  bool forced(CollKind kind) const { return (forcedMask_ >> static_cast<int>(kind)) & 1u; }

 private:
  uint32_t forcedMask_ = 0;
};

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_ROUTE_TABLE_HPP_
