#include "allocation_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

// The replacements below are malloc/free on
// both sides; GCC cannot see that they pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<bool> gCounting{false};
std::atomic<bool> gThisThreadOnly{false};
std::atomic<uint64_t> gAllocations{0};
std::atomic<int (*)()> gExcluded{nullptr};
thread_local bool tCountingThread = false;
}  // namespace

void* operator new(std::size_t n) {
  const bool counted = tCountingThread || !gThisThreadOnly.load(std::memory_order_relaxed);
  if (gCounting.load(std::memory_order_relaxed) && counted) {
    int (*excluded)() = gExcluded.load(std::memory_order_relaxed);
    if (excluded == nullptr || excluded() == 0) gAllocations.fetch_add(1, std::memory_order_relaxed);
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return std::malloc(n == 0 ? 1 : n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace mscclpp::support {

AllocationCounter::AllocationCounter(Scope scope) {
  gAllocations.store(0, std::memory_order_relaxed);
  gThisThreadOnly.store(scope == Scope::ThisThread, std::memory_order_relaxed);
  tCountingThread = true;
  gCounting.store(true, std::memory_order_seq_cst);
}

AllocationCounter::~AllocationCounter() { stop(); }

void AllocationCounter::excludeWhile(int (*inside)()) { gExcluded.store(inside, std::memory_order_relaxed); }

uint64_t AllocationCounter::stop() {
  if (!stopped_) {
    gCounting.store(false, std::memory_order_seq_cst);
    tCountingThread = false;
    count_ = gAllocations.load(std::memory_order_relaxed);
    stopped_ = true;
  }
  return count_;
}

}  // namespace mscclpp::support
