#include "real_nccl.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"

namespace mscclpp::shim {

namespace detail {
__attribute__((tls_model("initial-exec"))) thread_local int tlsRealCallDepth = 0;
}

namespace {

// The sanitizers' dlopen interceptor kills the process on RTLD_DEEPBIND.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MSCCLPP_SHIM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MSCCLPP_SHIM_SANITIZED 1
#endif
#endif

#ifdef MSCCLPP_SHIM_SANITIZED
// Without RTLD_DEEPBIND, the re-entry guard alone
// keeps the real library's internal calls inside it.
constexpr int kOpenFlags = RTLD_LAZY | RTLD_LOCAL;
#else
constexpr int kOpenFlags = RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// The object file holding this code: the shim, or a test binary.
struct SelfIdentity {
  const void* base = nullptr;
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  bool haveInode = false;
};

const SelfIdentity& self() {
  static const SelfIdentity id = [] {
    SelfIdentity s;
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&self), &info) != 0) {
      s.base = info.dli_fbase;
      if (info.dli_fname) s.path = info.dli_fname;
    }
    struct stat st {};
    if (!s.path.empty() && stat(s.path.c_str(), &st) == 0) {
      s.dev = st.st_dev;
      s.ino = st.st_ino;
      s.haveInode = true;
    }
    return s;
  }();
  return id;
}

bool isSelfFile(const std::string& path) {
  const SelfIdentity& s = self();
  struct stat st {};
  return s.haveInode && stat(path.c_str(), &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino;
}

// The directories the dynamic linker searches for this process.
std::vector<std::string> librarySearchDirs() {
  std::vector<std::string> dirs;
  void* main = dlopen(nullptr, RTLD_LAZY);
  if (main == nullptr) return dirs;
  Dl_serinfo sizeInfo;
  if (dlinfo(main, RTLD_DI_SERINFOSIZE, &sizeInfo) == 0 && sizeInfo.dls_size > 0) {
    std::vector<char> storage(sizeInfo.dls_size);
    auto* info = reinterpret_cast<Dl_serinfo*>(storage.data());
    if (dlinfo(main, RTLD_DI_SERINFOSIZE, info) == 0 && dlinfo(main, RTLD_DI_SERINFO, info) == 0) {
      for (unsigned i = 0; i < info->dls_cnt; ++i) dirs.emplace_back(info->dls_serpath[i].dls_name);
    }
  }
  dlclose(main);
  return dirs;
}

}  // namespace

RealNccl& RealNccl::instance() {
  static RealNccl* r = new RealNccl();  // never destroyed, see header
  return *r;
}

bool RealNccl::ensureLoaded() {
  std::call_once(loadOnce_, [this] {
    try {
      load();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      reason_ = e.what();
    }
  });
  return loaded_.load(std::memory_order_acquire);
}

std::string RealNccl::unavailableReason() {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

std::string RealNccl::path() {
  std::lock_guard<std::mutex> lock(mutex_);
  return path_;
}

int RealNccl::versionCode() {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

bool RealNccl::wasPreloaded() {
  std::lock_guard<std::mutex> lock(mutex_);
  return preloaded_;
}

bool RealNccl::openCandidate(const std::string& path, int flags, std::string* why) {
  void* already = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  void* h = dlopen(path.c_str(), flags);
  if (h == nullptr) {
    const char* err = dlerror();
    *why = strFormat("dlopen(%s) failed: %s", path.c_str(), err ? err : "unknown error");
    if (already) dlclose(already);
    return false;
  }
  void* probe = dlsym(h, "ncclGetVersion");
  Dl_info info{};
  if (probe == nullptr) {
    *why = strFormat("%s does not export ncclGetVersion: not an NCCL library", path.c_str());
  } else if (dladdr(probe, &info) != 0 && info.dli_fbase == self().base) {
    *why = strFormat(
        "%s is the MSCCL++ shim itself, not the real NCCL (point MSCCLPP_NCCL_LIB_PATH at NCCL's own "
        "libnccl.so.2)",
        path.c_str());
    probe = nullptr;
  } else if (dlsym(h, "mscclppPlanApiVersion") != nullptr) {
    // Another copy of the shim, such as another
    // installation's. dlsym through its handle searches what
    // it links, and the real NCCL never links libmscclpp.
    // Using it would send the calls back into MSCCL++.
    *why = strFormat(
        "%s is a copy of the MSCCL++ shim (it links libmscclpp), not the real NCCL (point "
        "MSCCLPP_NCCL_LIB_PATH at NCCL's own libnccl.so.2)",
        path.c_str());
    probe = nullptr;
  }
  if (probe == nullptr) {
    dlclose(h);
    if (already) dlclose(already);
    return false;
  }
  int version = 0;
  ncclResult_t rc;
  {
    RealCallScope scope;
    rc = reinterpret_cast<ncclResult_t (*)(int*)>(probe)(&version);
  }
  if (rc != ncclSuccess) {
    *why = strFormat("%s: ncclGetVersion returned %d", path.c_str(), static_cast<int>(rc));
    dlclose(h);
    if (already) dlclose(already);
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  handle_ = h;
  path_ = (dladdr(probe, &info) != 0 && info.dli_fname) ? info.dli_fname : path;
  version_ = version;
  preloaded_ = already != nullptr;
  reason_.clear();
  if (already) dlclose(already);  // drop the RTLD_NOLOAD probe's reference
  return true;
}

void RealNccl::load() {
  std::string configured = params::ncclLibPath();
  std::string why;
  bool ok = false;
  if (!configured.empty()) {
    ok = openCandidate(configured, kOpenFlags, &why);
    if (!ok) {
      why = "MSCCLPP_NCCL_LIB_PATH: " + why;
      MSCCLPP_WARN(LogShim, "the NCCL fallback is unavailable: %s", why.c_str());
    }
  } else {
    // The soname first, which covers ld.so.cache, then every
    // directory. In replace mode the soname is the shim
    // itself, and the real library sits further down the path.
    std::vector<std::string> tried;
    ok = openCandidate("libnccl.so.2", kOpenFlags, &why);
    if (!ok) tried.push_back(why);
    for (const std::string& dir : ok ? std::vector<std::string>{} : librarySearchDirs()) {
      std::string candidate = dir + "/libnccl.so.2";
      struct stat st {};
      if (stat(candidate.c_str(), &st) != 0 || isSelfFile(candidate)) continue;
      if (openCandidate(candidate, kOpenFlags, &why)) {
        ok = true;
        break;
      }
      tried.push_back(why);
    }
    if (!ok) {
      why = "no real libnccl.so.2 found on the library search path (set MSCCLPP_NCCL_LIB_PATH)";
      for (const std::string& t : tried) why += "; " + t;
    }
  }
  if (!ok) {
    std::lock_guard<std::mutex> lock(mutex_);
    reason_ = why;
    MSCCLPP_INFO(LogShim, "NCCL fallback unavailable: %s", why.c_str());
    return;
  }
  loaded_.store(true, std::memory_order_release);
  MSCCLPP_INFO(LogShim, "NCCL fallback: loaded %s (version %d)%s", path().c_str(), versionCode(),
               wasPreloaded() ? ", already loaded by the application: its internal calls are passed through" : "");
}

void* RealNccl::tryResolve(int index, const char* name) noexcept {
  if (!loaded_.load(std::memory_order_acquire)) return nullptr;
  void* f = dlsym(handle_, name);
  if (f != nullptr) symbols_[index].store(f, std::memory_order_release);
  return f;
}

void* RealNccl::resolve(int index, const char* name) {
  if (!ensureLoaded()) {
    MSCCLPP_THROW(ErrorCode::NotSupported, "the real NCCL is not available for %s: %s", name,
                  unavailableReason().c_str());
  }
  void* f = tryResolve(index, name);
  MSCCLPP_ENFORCE(f != nullptr, ErrorCode::InvalidUsage,
                  "the real NCCL at %s (version %d) has no symbol %s: it is older than the NCCL 2.28 API this call "
                  "needs",
                  path().c_str(), versionCode(), name);
  return f;
}

}  // namespace mscclpp::shim
