// The real libnccl.so.2 behind the fallback: loaded once
// per process, its symbols resolved lazily, each once.
//
// The real library calls some of its own public names.
// RTLD_DEEPBIND keeps those inside it. When the application
// loaded NCCL first, they reach the shim instead, so entry
// points pass them through while insideRealNccl() holds
// (docs/nccl-shim.md "Loading the real NCCL").
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

// True while this thread is inside a call into
// the real library: an entry point reached now
// is the real library calling its own name.
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
  // The process's instance. Never destroyed: the
  // fallback may be used during static destruction.
  static RealNccl& instance();

  // Loads the library on the first call; true when usable. Never throws.
  bool ensureLoaded();
  // Why the library is not usable; empty when it is, or before loading.
  std::string unavailableReason();
  std::string path();
  int versionCode();  // the loaded library's ncclGetVersion(), or 0
  // True when the process loaded the library before we
  // opened it. Its internal calls may then reach the shim.
  bool wasPreloaded();

  // The real function. Throws when the library is
  // not loaded, or is an older NCCL without the
  // symbol, naming the symbol, path and version.
  template <NcclFn F>
  typename NcclFnTraits<F>::Type fn() {
    void* f = symbols_[static_cast<int>(F)].load(std::memory_order_acquire);
    if (f == nullptr) f = resolve(static_cast<int>(F), NcclFnTraits<F>::kName);
    return reinterpret_cast<typename NcclFnTraits<F>::Type>(f);
  }

  // The real function or nullptr, for pass-through; never throws.
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
  std::mutex mutex_;  // guards the plain members below; load() writes them once
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

// The version code of the NCCL headers the shim was built with.
constexpr int kEmulatedNcclVersion = NCCL_VERSION_CODE;

}  // namespace mscclpp::shim

#endif  // MSCCLPP_NCCL_SHIM_REAL_NCCL_HPP_
