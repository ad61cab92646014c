#include "route_table.hpp"

#include <strings.h>

#include "core/enforce.hpp"
#include "core/params.hpp"

namespace mscclpp::shim {

uint32_t RouteTable::parseForcedList(const std::string& list) {
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(pos, comma - pos);
    size_t b = name.find_first_not_of(" \t");
    size_t e = name.find_last_not_of(" \t");
    name = b == std::string::npos ? "" : name.substr(b, e - b + 1);
    if (!name.empty()) {
      CollKind kind;
      if (strcasecmp(name.c_str(), "all") == 0) {
        mask = (1u << kNumCollKinds) - 1;
      } else {
        MSCCLPP_ENFORCE(collKindFromName(name.c_str(), &kind), ErrorCode::InvalidArgument,
                        "MSCCLPP_FORCE_NCCL_FALLBACK_OPERATION='%s' is not valid: unknown collective '%s' (expected "
                        "a comma list of allreduce, allgather, reducescatter, broadcast, reduce, alltoall, gather, "
                        "scatter, send, recv, sendrecv, or all; default none)",
                        list.c_str(), name.c_str());
        mask |= 1u << static_cast<int>(kind);
        // A forced send or recv also forces the exchanges built from them.
        if (kind == CollKind::Send || kind == CollKind::Recv) mask |= 1u << static_cast<int>(CollKind::SendRecv);
      }
    }
    pos = comma + 1;
  }
  return mask;
}

void RouteTable::loadFromEnvironment() { forcedMask_ = parseForcedList(params::forceNcclFallback()); }

}  // namespace mscclpp::shim
