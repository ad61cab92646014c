// Helpers shared by the shim's tests: the test-double libnccl's inspection API
// (reached in the copy the shim loaded), one-rank communicators, and last-error
// access.
#ifndef MSCCLPP_TESTS_SHIM_TEST_UTIL_HPP_
#define MSCCLPP_TESTS_SHIM_TEST_UTIL_HPP_

#include <nccl.h>
#include <nccl_device.h>

#include <string>
#include <vector>

// Sanitized builds (ASan, TSan, MSan) cannot use RTLD_DEEPBIND (their dlopen
// interceptor aborts): the shim then keeps the real library's internal calls
// inside it with its re-entry guard alone.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHIMTEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SHIMTEST_SANITIZED 1
#endif
#endif
#ifndef SHIMTEST_SANITIZED
#define SHIMTEST_SANITIZED 0
#endif

namespace shimtest {

// The double as loaded in this process (dlopen RTLD_NOLOAD of its path; fails the test when absent).
class Double {
 public:
  explicit Double(const char* path);
  bool loaded() const { return handle_ != nullptr; }
  int count() const;
  std::string record(int i) const;
  void* comm(int i) const;
  int depth(int i) const;
  void reset() const;
  void setRecording(bool on) const;
  long long calls() const;
  void failInit(int rank, ncclResult_t result) const;
  int bcastBoundInside() const;
  bool isComm(const void* comm) const;
  // Every record from index `from` on, for failure messages.
  std::string dump(int from = 0) const;
  // Index of the first record at or after `from` whose text starts with prefix, or -1.
  int find(const std::string& prefix, int from = 0) const;

 private:
  void* handle_ = nullptr;
  void* sym(const char* name) const;
};

// nccl.h-free printing of a pointer the way the double records it ("%p").
std::string ptr(const void* p);

// A one-rank communicator through the shim (fails the test on error).
ncclComm_t soloComm(ncclConfig_t* config = nullptr);

// ncclGetLastError(NULL) as a string.
std::string lastError();

// The text of a log file, which is then removed ("" when it does not exist).
std::string takeLog(const std::string& path);

// Sets or unsets an environment variable for the scope. The shim reads
// MSCCLPP_* variables once: both ends call ncclResetDebugInit, which makes it
// read them again.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();

 private:
  std::string name_;
  std::string old_;
  bool hadOld_;
};

}  // namespace shimtest

#endif  // MSCCLPP_TESTS_SHIM_TEST_UTIL_HPP_
