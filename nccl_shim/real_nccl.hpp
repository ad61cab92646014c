// The real libnccl.so.2 behind the fallback path: found, loaded and checked once per process (the handle is
// process-wide by nature), its symbols resolved lazily, each once.
//
// Where it comes from: MSCCLPP_NCCL_LIB_PATH, else the first libnccl.so.2 on the library search path that is
// not this shim (replace mode installs the shim itself as libnccl.so.2).
//
// How its internal calls stay inside it: the real library calls some of its own public names through the
// dynamic linker (ncclBcast -> ncclBroadcast, ncclCommGetAsyncError from every call on a nonblocking comm,
// ncclGetUniqueId from ncclCommInitAll, ...). We load it with RTLD_LOCAL | RTLD_DEEPBIND so those bind inside
// it. That cannot help when the application itself already loaded libnccl.so.2 (PyTorch links it): its
// relocations were bound to the preloaded shim at startup. So every shim entry point also checks
// insideRealNccl() (a thread-local depth set around each call we make into the real library) and, when set,
// passes the call straight through to the real symbol. The sanitizers (ASan, TSan, MSan) refuse RTLD_DEEPBIND;
// sanitized builds load with RTLD_LOCAL only and rely on that same re-entry guard (docs/nccl-shim.md).
//
// Thread-safety: every member may be called from any thread.
#ifndef MSCCLPP_NCCL_SHIM_REAL_NCCL_HPP_
#define MSCCLPP_NCCL_SHIM_REAL_NCCL_HPP_

#include <nccl.h>
#include <nccl_device.h>

#include <atomic>
#include <mutex>
#include <string>

namespace mscclpp::shim {

enum class NcclFn : int {
#define NCCL_FN(ret, name, params, args) name,
#include "nccl_functions.def"
#undef NCCL_FN
  Count
};

template <NcclFn F>
struct NcclFnTraits;
#define NCCL_FN(ret, name, params, args)        \
  template <>                                   \
  struct NcclFnTraits<NcclFn::name> {           \
    using Type = ret(*) params;                 \
    static constexpr const char* kName = #name; \
  };
#include "nccl_functions.def"
#undef NCCL_FN

namespace detail {
extern __attribute__((tls_model("initial-exec"))) thread_local int tlsRealCallDepth;
}

// True while this thread is inside a call into the real library (so a shim entry point reached now is the
// real library calling one of its own public names).
inline bool insideRealNccl() { return detail::tlsRealCallDepth > 0; }

// Marks the calling thread as inside the real library for its lifetime.
class RealCallScope {
 public:
  RealCallScope() { ++detail::tlsRealCallDepth; }
  ~RealCallScope() { --detail::tlsRealCallDepth; }
  RealCallScope(const RealCallScope&) = delete;
  RealCallScope& operator=(const RealCallScope&) = delete;
};

class RealNccl {
 public:
  // The process's instance (never destroyed: the fallback may be used during static destruction).
  static RealNccl& instance();

  // Finds and loads the library on the first call; true when it is usable. Never throws.
  bool ensureLoaded();
  // Why the library is not usable ("" when it is, or before ensureLoaded()).
  std::string unavailableReason();
  std::string path();
  int versionCode();  // ncclGetVersion() of the loaded library; 0 when not loaded
  // True when the library was already loaded in the process before we opened it (its internal calls may
  // then reach the shim; see the file comment).
  bool wasPreloaded();

  // The real function; throws Error(InvalidUsage) when the library is not loaded or lacks the symbol (an
  // older NCCL), naming the symbol, the path and the version.
  template <NcclFn F>
  typename NcclFnTraits<F>::Type fn() {
    void* f = symbols_[static_cast<int>(F)].load(std::memory_order_acquire);
    if (f == nullptr) f = resolve(static_cast<int>(F), NcclFnTraits<F>::kName);
    return reinterpret_cast<typename NcclFnTraits<F>::Type>(f);
  }

  // The real function or nullptr; never throws (for pass-through from inside the real library).
  template <NcclFn F>
  typename NcclFnTraits<F>::Type fnOrNull() noexcept {
    void* f = symbols_[static_cast<int>(F)].load(std::memory_order_acquire);
    if (f == nullptr) f = tryResolve(static_cast<int>(F), NcclFnTraits<F>::kName);
    return reinterpret_cast<typename NcclFnTraits<F>::Type>(f);
  }

 private:
  RealNccl() = default;
  void load();
  bool openCandidate(const std::string& path, int flags, std::string* why);
  void* resolve(int index, const char* name);
  void* tryResolve(int index, const char* name) noexcept;

  std::once_flag loadOnce_;
  std::mutex mutex_;  // guards the strings below (written once by load())
  void* handle_ = nullptr;
  std::string path_;
  std::string reason_;
  int version_ = 0;
  bool preloaded_ = false;
  std::atomic<bool> loaded_{false};
  std::atomic<void*> symbols_[static_cast<int>(NcclFn::Count)] = {};
};

// Calls the real function F with the re-entry scope set.
template <NcclFn F, class... Args>
auto callReal(Args&&... args) {
  auto f = RealNccl::instance().fn<F>();
  RealCallScope scope;
  return f(std::forward<Args>(args)...);
}

// The NCCL version code of the headers the shim was built with (22809 for 2.28.9).
constexpr int kEmulatedNcclVersion = NCCL_VERSION_CODE;

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_REAL_NCCL_HPP_
