// How a communicator is configured: the caller's ncclConfig_t,
// and the collectives the user forced to the real NCCL.
//
// The config is read the way NCCL 2.28 reads it: no
// more bytes than the caller's config->size, magic
// checked, and fields newer than the caller's
// config->version left unset. NULL means all defaults.
#ifndef MSCCLPP_NCCL_SHIM_COMM_CONFIG_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_CONFIG_HPP_

#include <nccl.h>

#include <cstdint>
#include <string>

#include "nccl_types.hpp"

namespace mscclpp::shim {

class CommConfig {
 public:
  // The defaults of a NULL config.
  CommConfig();

  // Reads and checks the caller's config. A bad magic or
  // attribute throws Error(InvalidArgument) with NCCL's wording.
  static CommConfig parse(const ncclConfig_t* config);

  bool blocking() const { return blocking_; }
  bool splitShare() const { return fields_.splitShare == 1; }
  const std::string& commName() const { return commName_; }

  // The config to hand to the real NCCL. Its strings point into
  // this object, which must outlive the call that uses them.
  ncclConfig_t toNccl() const;

 private:
  ncclConfig_t fields_;  // as NCCL stores them; unset is NCCL_CONFIG_UNDEF_*
  bool blocking_ = true;
  std::string netName_;
  std::string commName_;
  bool hasNetName_ = false;
  bool hasCommName_ = false;
};

// The collectives MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION
// sends to the real NCCL. Read once at creation, so the
// hot path only tests a bit.
class RouteTable {
 public:
  // Parses a comma list of collective names, or "all", in any
  // case. An unknown name throws Error(InvalidArgument) naming it.
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
