// Per-communicator counters of what ran where, logged
// at INFO when the communicator ends: "allreduce: 12
// calls, 48.0 MiB, 10 via plans, 2 via native
// algorithms, 0 via NCCL" (natives only when some ran).
//
// Threads: the counters are relaxed atomics, cheap on
// the hot path and readable by the thread that destroys
// the communicator. A group end driving several ranks
// counts each rank's calls on that rank's counters, so
// no two threads ever write one counter.
#ifndef MSCCLPP_NCCL_SHIM_COMM_STATS_HPP_
#define MSCCLPP_NCCL_SHIM_COMM_STATS_HPP_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "nccl_types.hpp"

namespace mscclpp::shim {

class CommStats {
 public:
  // Where a call ran: a DSL plan, a native algorithm, the real NCCL.
  enum class Via { Plan, Native, Nccl };

  struct Counts {
    uint64_t calls = 0;
    uint64_t bytes = 0;
    uint64_t viaPlan = 0;
    uint64_t viaNative = 0;
    uint64_t viaNccl = 0;
    uint64_t failed = 0;  // calls that returned an error, counted nowhere else
  };

  // Called by the one thread driving the communicator. Plain loads
  // and stores, no read-modify-write: counting takes no bus lock.
  void record(CollKind kind, uint64_t bytes, Via via) {
    Slot& s = slots_[static_cast<int>(kind)];
    bump(s.calls, 1);
    bump(s.bytes, bytes);
    bump(via == Via::Plan ? s.viaPlan : via == Via::Native ? s.viaNative : s.viaNccl, 1);
  }

  // A call that returned an error. Any thread may
  // record one, so this is a relaxed
  // read-modify-write; the failure path is not hot.
  void recordFailure(CollKind kind) { slots_[static_cast<int>(kind)].failed.fetch_add(1, std::memory_order_relaxed); }

  Counts get(CollKind kind) const;
  // One line per collective that was called; "" when none was.
  std::string summary() const;

 private:
  struct Slot {
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> viaPlan{0};
    std::atomic<uint64_t> viaNative{0};
    std::atomic<uint64_t> viaNccl{0};
    std::atomic<uint64_t> failed{0};
  };
  static void bump(std::atomic<uint64_t>& v, uint64_t by) {
    v.store(v.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  std::array<Slot, kNumCollKinds> slots_;
};

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_COMM_STATS_HPP_
