#include "comm_stats.hpp"

#include "core/format.hpp"

namespace mscclpp::shim {

CommStats::Counts CommStats::get(CollKind kind) const {
  const Slot& s = slots_[static_cast<int>(kind)];
  Counts c;
  c.calls = s.calls.load(std::memory_order_relaxed);
  c.bytes = s.bytes.load(std::memory_order_relaxed);
  c.viaPlan = s.viaPlan.load(std::memory_order_relaxed);
  c.viaNative = s.viaNative.load(std::memory_order_relaxed);
  c.viaNccl = s.viaNccl.load(std::memory_order_relaxed);
  c.failed = s.failed.load(std::memory_order_relaxed);
  return c;
}

std::string CommStats::summary() const {
  std::string out;
  for (int k = 0; k < kNumCollKinds; ++k) {
    Counts c = get(static_cast<CollKind>(k));
    if (c.calls == 0 && c.failed == 0) continue;
    if (!out.empty()) out += "; ";
    out += strFormat("%s: %llu calls, %s, %llu via plans", collPlanName(static_cast<CollKind>(k)),
                     static_cast<unsigned long long>(c.calls), formatBytes(c.bytes).c_str(),
                     static_cast<unsigned long long>(c.viaPlan));
    if (c.viaNative > 0) out += strFormat(", %llu via native algorithms", static_cast<unsigned long long>(c.viaNative));
    out += strFormat(", %llu via NCCL", static_cast<unsigned long long>(c.viaNccl));
    if (c.failed > 0) out += strFormat(", %llu failed", static_cast<unsigned long long>(c.failed));
  }
  return out;
}

}  // namespace mscclpp::shim
