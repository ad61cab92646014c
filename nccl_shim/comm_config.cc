#include "comm_config.hpp"

#include <strings.h>

#include <algorithm>
#include <cstring>

#include "core/enforce.hpp"
#include "core/params.hpp"

namespace mscclpp::shim {

namespace {

constexpr unsigned kConfigMagic = 0xcafebeef;
constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS bounds nChannelsPerNetPeer
constexpr int kUndef = NCCL_CONFIG_UNDEF_INT;

bool unsetOr(int v, bool ok) { return v == kUndef || ok; }

void checkAttr(bool ok, const char* attr, int value) {
  MSCCLPP_ENFORCE(ok, ErrorCode::InvalidArgument, "Invalid config %s attribute value %d", attr, value);
}

}  // namespace

CommConfig::CommConfig() {
  ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  fields_ = defaults;
}

CommConfig CommConfig::parse(const ncclConfig_t* config) {
  CommConfig out;
  if (config == nullptr) return out;

  // Read only what the caller's struct holds: an older one is shorter.
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.magic = 0;
  size_t callerSize = 0;
  std::memcpy(&callerSize, config, sizeof(callerSize));
  std::memcpy(&c, config, std::min(callerSize, sizeof(ncclConfig_t)));
  MSCCLPP_ENFORCE(c.magic == kConfigMagic, ErrorCode::InvalidArgument,
                  "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu; expected "
                  "magic 0x%x)",
                  c.magic, callerSize, kConfigMagic);

  // Fields the caller's NCCL version lacked are garbage: make them unset.
  const ncclConfig_t d = NCCL_CONFIG_INITIALIZER;
  if (c.version < NCCL_VERSION(2, 14, 0)) c.blocking = d.blocking;
  if (c.version < NCCL_VERSION(2, 17, 0)) {
    c.cgaClusterSize = d.cgaClusterSize;
    c.minCTAs = d.minCTAs;
    c.maxCTAs = d.maxCTAs;
    c.netName = d.netName;
  }
  if (c.version < NCCL_VERSION(2, 25, 0)) c.trafficClass = d.trafficClass;
  if (c.version < NCCL_VERSION(2, 27, 0)) {
    c.collnetEnable = d.collnetEnable;
    c.CTAPolicy = d.CTAPolicy;
    c.shrinkShare = d.shrinkShare;
    c.nvlsCTAs = d.nvlsCTAs;
  }
  if (c.version < NCCL_VERSION(2, 28, 0)) {
    c.nChannelsPerNetPeer = d.nChannelsPerNetPeer;
    c.nvlinkCentricSched = d.nvlinkCentricSched;
  }

  checkAttr(unsetOr(c.blocking, c.blocking == 0 || c.blocking == 1), "blocking", c.blocking);
  checkAttr(unsetOr(c.cgaClusterSize, c.cgaClusterSize >= 0), "cgaClusterSize", c.cgaClusterSize);
  bool ctasOk = unsetOr(c.minCTAs, c.minCTAs > 0) && unsetOr(c.maxCTAs, c.maxCTAs > 0) &&
                !(c.minCTAs != kUndef && c.maxCTAs != kUndef && c.minCTAs > c.maxCTAs);
  MSCCLPP_ENFORCE(ctasOk, ErrorCode::InvalidArgument, "Invalid config min/max channels attribute value %d/%d",
                  c.minCTAs, c.maxCTAs);
  checkAttr(unsetOr(c.splitShare, c.splitShare == 0 || c.splitShare == 1), "splitShare", c.splitShare);
  checkAttr(unsetOr(c.collnetEnable, c.collnetEnable == 0 || c.collnetEnable == 1), "collnetEnable", c.collnetEnable);
  checkAttr(unsetOr(c.CTAPolicy,
                    c.CTAPolicy >= 0 && (c.CTAPolicy & ~(NCCL_CTA_POLICY_EFFICIENCY | NCCL_CTA_POLICY_ZERO)) == 0),
            "policy", c.CTAPolicy);
  checkAttr(unsetOr(c.shrinkShare, c.shrinkShare == 0 || c.shrinkShare == 1), "shrinkShare", c.shrinkShare);
  checkAttr(unsetOr(c.nvlsCTAs, c.nvlsCTAs > 0), "nvlsCTAs", c.nvlsCTAs);
  checkAttr(unsetOr(c.nChannelsPerNetPeer, c.nChannelsPerNetPeer > 0 && c.nChannelsPerNetPeer <= kMaxChannels),
            "nChannelsPerNetPeer", c.nChannelsPerNetPeer);
  checkAttr(unsetOr(c.nvlinkCentricSched, c.nvlinkCentricSched == 0 || c.nvlinkCentricSched == 1), "nvlinkCentricSched",
            c.nvlinkCentricSched);

  out.fields_ = c;
  out.blocking_ = c.blocking != 0;  // unset means blocking, as in NCCL
  if (c.netName != nullptr) {
    out.netName_ = c.netName;
    out.hasNetName_ = true;
  }
  if (c.commName != nullptr) {
    out.commName_ = c.commName;
    out.hasCommName_ = true;
  }
  out.fields_.netName = nullptr;
  out.fields_.commName = nullptr;
  return out;
}

ncclConfig_t CommConfig::toNccl() const {
  ncclConfig_t c = fields_;
  c.size = sizeof(ncclConfig_t);
  c.magic = kConfigMagic;
  c.version = NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  c.netName = hasNetName_ ? netName_.c_str() : nullptr;
  c.commName = hasCommName_ ? commName_.c_str() : nullptr;
  return c;
}

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
