// ncclConfig_t as the caller gave it, read the way NCCL 2.28 reads it: only min(config->size, ours) bytes,
// magic checked, fields newer than the caller's config->version treated as unset, NULL meaning "all defaults".
#ifndef MSCCLPP_NCCL_SHIM_COMM_CONFIG_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_CONFIG_HPP_

#include <nccl.h>

#include <cstdint>
#include <string>

#include "nccl_types.hpp"

namespace mscclpp::shim {

class CommConfig {
 public:
  // Defaults (NULL config).
  CommConfig();

  // Reads and checks the caller's config; throws Error(InvalidArgument) with NCCL's wording for a bad magic
  // or a bad attribute value. opName prefixes nothing: NCCL's config messages carry no op name.
  static CommConfig parse(const ncclConfig_t* config);

  bool blocking() const { return blocking_; }
  bool splitShare() const { return fields_.splitShare == 1; }
  const std::string& commName() const { return commName_; }

  // The configuration to hand to the real NCCL (string fields point into this object, so it must outlive the
  // call that uses the result).
  ncclConfig_t toNccl() const;

 private:
  ncclConfig_t fields_;  // every field as NCCL would store it (unset = NCCL_CONFIG_UNDEF_*)
  bool blocking_ = true;
  std::string netName_;
  std::string commName_;
  bool hasNetName_ = false;
  bool hasCommName_ = false;
};

// Which collectives the user forced to the real NCCL (MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION). Read once when the
// communicator is created, so the hot path only tests a bit.
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

#endif  // MSCCLPP_NCCL_SHIM_COMM_CONFIG_HPP_
