#include "user_red_ops.hpp"

#include "core/enforce.hpp"
#include "nccl_types.hpp"

namespace mscclpp::shim {

namespace {
// Handle layout: ncclNumOps + (salt << kSlotBits | slot). 12 salt bits
// keep handles well below ncclMaxRedOp, 2^31 - 1, and make another
// communicator's handle unlikely to validate here.
constexpr int kSlotBits = 16;
constexpr uint32_t kSlotMask = (1u << kSlotBits) - 1;
constexpr uint32_t kSaltMask = 0xfff;
}  // namespace

UserRedOps::UserRedOps(uint32_t salt) : salt_(salt & kSaltMask) {}

ncclRedOp_t UserRedOps::add(const UserRedOp& op) {
  size_t slot = 0;
  while (slot < slots_.size() && slots_[slot].inUse) ++slot;
  MSCCLPP_ENFORCE(slot <= kSlotMask, ErrorCode::InvalidUsage,
                  "ncclRedOpCreatePreMulSum : %zu user reduction operations are alive on this communicator (the limit)",
                  slot);
  if (slot == slots_.size()) slots_.emplace_back();
  slots_[slot] = op;
  slots_[slot].inUse = true;
  uint32_t raw = (salt_ << kSlotBits) | static_cast<uint32_t>(slot);
  return toEnum<ncclRedOp_t>(static_cast<int>(ncclNumOps) + static_cast<int>(raw));
}

int UserRedOps::slotOf(int handle) const {
  int64_t raw = static_cast<int64_t>(handle) - static_cast<int64_t>(ncclNumOps);
  if (raw < 0) return -1;
  if ((static_cast<uint32_t>(raw) >> kSlotBits) != salt_) return -1;
  uint32_t slot = static_cast<uint32_t>(raw) & kSlotMask;
  if (slot >= slots_.size() || !slots_[slot].inUse) return -1;
  return static_cast<int>(slot);
}

const UserRedOp* UserRedOps::find(int handle) const {
  int slot = slotOf(handle);
  return slot < 0 ? nullptr : &slots_[slot];
}

bool UserRedOps::remove(int handle, UserRedOp* removed) {
  int slot = slotOf(handle);
  if (slot < 0) return false;
  if (removed) *removed = slots_[slot];
  slots_[slot].inUse = false;
  return true;
}

std::vector<UserRedOp> UserRedOps::live() const {
  std::vector<UserRedOp> out;
  for (const UserRedOp& op : slots_) {
    if (op.inUse) out.push_back(op);
  }
  return out;
}

}  // namespace mscclpp::shim
