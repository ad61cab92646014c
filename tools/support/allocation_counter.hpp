// Counts this program's heap allocations while a scope
// asks for it. Linking allocation_counter.cc replaces
// every form of the global operator new and delete with
// malloc and free plus a relaxed counter. Tests and
// benchmarks use it to show a hot path allocates nothing.
#ifndef MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_
#define MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_

#include <cstdint>

namespace mscclpp::support {

// Counts the allocations of every thread, or of
// the constructing one, from construction to
// stop() or destruction. One scope at a time.
class AllocationCounter {
 public:
  enum class Scope { AllThreads, ThisThread };
  explicit AllocationCounter(Scope scope = Scope::AllThreads);
  ~AllocationCounter();
  AllocationCounter(const AllocationCounter&) = delete;
  AllocationCounter& operator=(const AllocationCounter&) = delete;
  // Stops counting and returns the count; later calls return it again.
  uint64_t stop();
  // Allocations made while inside() returns non-zero on the allocating
  // thread are not counted: another library's own, such as a test double's
  // inside its API calls. Null counts every allocation again.
  static void excludeWhile(int (*inside)());

 private:
  bool stopped_ = false;
  uint64_t count_ = 0;
};

}  // namespace mscclpp::support

#endif  // MSCCLPP_TOOLS_SUPPORT_ALLOCATION_COUNTER_HPP_
