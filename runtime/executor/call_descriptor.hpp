// What one collective call is, as every rank must agree on it: collective,
// plan name and fingerprint, byte counts, datatype, reduce op and root.
// Ranks compare descriptors when a context is built and when a stuck call
// asks its peers what they do (call_monitor.hpp). A mismatch names both
// ranks' values in NCCL's terms, element counts.
#ifndef MSCCLPP_EXECUTOR_CALL_DESCRIPTOR_HPP_
#define MSCCLPP_EXECUTOR_CALL_DESCRIPTOR_HPP_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "core/serial.hpp"
#include "mscclpp/datatype.hpp"
#include "plan/plan.hpp"

namespace mscclpp::exec {

struct CallDescriptor {
  int32_t collective = -1;  // plan::Collective
  std::string plan;         // "" while the plan is not chosen yet (the NCCL shim agreeing on one)
  uint64_t planFingerprint = 0;
  uint64_t sendBytes = 0;
  uint64_t recvBytes = 0;
  int32_t dtype = -1;  // DataType
  int32_t op = -1;     // ReduceOp; -1 when the collective does not reduce
  int32_t root = -1;   // -1 when the collective has no root

  // "allreduce of 1024 x float32 (4 KiB sent, 4 KiB received), sum, on plan allreduce_ll_n2_ip"
  std::string describe() const;
  void write(ByteWriter& w) const;
  static CallDescriptor read(ByteReader& r);
};

// True when the two are the same call (plans compared only when both chose one).
bool sameCall(const CallDescriptor& a, const CallDescriptor& b);

// The descriptor of an executor call.
CallDescriptor describeCall(const plan::Plan& plan, uint64_t fingerprint, uint64_t sendBytes, uint64_t recvBytes,
                            DataType dtype, ReduceOp op);
// The same, written into *into (no allocation once its plan name's capacity suffices: the hot path).
void describeCall(CallDescriptor* into, const plan::Plan& plan, uint64_t fingerprint, uint64_t sendBytes,
                  uint64_t recvBytes, DataType dtype, ReduceOp op);

// The same value on every rank that loaded the same file: the header and
// every rank's declarations, not the ops a rank keeps only for itself.
uint64_t planFingerprint(const plan::Plan& plan);

// A backend's plan fingerprints, each computed once; an entry keeps its
// immutable plan alive. One thread at a time.
class PlanFingerprints {
 public:
  uint64_t of(const plan::PlanPtr& plan);

 private:
  std::map<const plan::Plan*, std::pair<plan::PlanPtr, uint64_t>> fingerprints_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CALL_DESCRIPTOR_HPP_
