#include "group.hpp"

#include <exception>
#include <thread>

#include "core/enforce.hpp"

namespace mscclpp::shim {

bool GroupState::end() {
  MSCCLPP_ENFORCE(depth_ > 0, ErrorCode::InvalidUsage, "ncclGroupEnd: not in a group call.");
  return --depth_ == 0;
}

bool GroupState::hasOpsOf(const void* comm) const {
  for (const CollCall& c : ops_) {
    if (static_cast<const void*>(c.comm) == comm) return true;
  }
  return false;
}

void GroupState::dropOpsOf(const void* comm) {
  std::vector<CollCall> kept;
  for (const CollCall& c : ops_) {
    if (static_cast<const void*>(c.comm) != comm) kept.push_back(c);
  }
  ops_.swap(kept);
}

std::vector<std::function<void()>> GroupState::takeJobs() {
  std::vector<std::function<void()>> out;
  out.swap(jobs_);
  return out;
}

void GroupState::takeOps(std::vector<CollCall>* out) {
  out->clear();
  out->swap(ops_);
}

ncclResult_t GroupState::takeLatched() {
  ncclResult_t r = latched_;
  latched_ = ncclSuccess;
  return r;
}

void GroupState::reset() {
  depth_ = 0;
  latched_ = ncclSuccess;
  jobs_.clear();
  ops_.clear();
}

namespace {
// initial-exec: a plain offset from the thread pointer,
// with no __tls_get_addr call on every NCCL call. The
// shim's thread-local data is two words, well inside
// what glibc reserves for dlopen'ed libraries.
__attribute__((tls_model("initial-exec"))) thread_local GroupState* tlsGroup = nullptr;

// Frees a thread's group state when the thread ends.
struct GroupStateOwner {
  ~GroupStateOwner() { delete tlsGroup; }
};
}  // namespace

GroupState& threadGroup() {
  if (__builtin_expect(tlsGroup == nullptr, 0)) {
    thread_local GroupStateOwner owner;
    (void)owner;
    tlsGroup = new GroupState();
  }
  return *tlsGroup;
}

void runConcurrently(std::vector<std::function<void()>>& jobs) {
  if (jobs.empty()) return;
  if (jobs.size() == 1) {
    jobs[0]();
    return;
  }
  std::vector<std::exception_ptr> errors(jobs.size());
  std::vector<std::thread> threads;
  threads.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    try {
      threads.emplace_back([&jobs, &errors, i] {
        try {
          jobs[i]();
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    } catch (...) {
      // No thread for this job. The started ones wait for it
      // and fail at their deadline; report this error first.
      errors[i] = std::current_exception();
    }
  }
  for (std::thread& t : threads) t.join();
  for (std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace mscclpp::shim
