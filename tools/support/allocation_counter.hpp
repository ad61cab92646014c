// Counts heap allocations of this program while a scope asks for it: linking
// allocation_counter.cc replaces the global operator new/delete (all forms, so allocation and
// release always pair) with malloc/free plus a relaxed counter. Used to show a hot path (the plan
// registry's cached lookup) allocates nothing, in its test and in its benchmark.
#ifndef MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_
#define MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_

#include <cstdint>

namespace mscclpp::support {

// Counts the allocations of every thread (or of the constructing thread only) from construction
// to stop() (or destruction). One counting scope at a time.
class AllocationCounter {
 public:
  enum class Scope { AllThreads, ThisThread };
  explicit AllocationCounter(Scope scope = Scope::AllThreads);
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  // Stops counting and returns the count (later calls return the same number).
  uint64_t stop();

 private:
  bool stopped_ = false;
  uint64_t count_ = 0;
};

}  // namespace mscclpp::support

#endif  // MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_
