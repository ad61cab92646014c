#include "transport/host_shm/memory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "core/random.hpp"

namespace mscclpp::transport::host_shm {

namespace {

struct Allocation {
  size_t size;
  std::string name;  // exported name
  int fd;            // memfd kept open for peers; -1 for POSIX
  std::string posixName;
  bool unlinked;
};

struct AllocationTable {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;
};

AllocationTable& allocations() {
  static AllocationTable* t = new AllocationTable();  // never destroyed: deleters may run at exit
  return *t;
}

// ---- POSIX names that outlive nobody (docs/runtime.md, "Shared host memory") ----
// Every process that maps a named segment holds a shared flock on it
// through its mapping, from before the name exists for its creator: the
// kernel drops it when the mapping goes, however the process dies. A
// name nobody holds is left over and may go; the last process to unmap
// it, its creator at exit, and sweeps of /dev/shm remove such names.
constexpr char kPosixPrefix[] = "mscclpp-shm.";
constexpr char kShmDir[] = "/dev/shm";

std::atomic<bool> posixUsed{false};  // this process made or mapped a named segment

// Whether a live process we can see holds a flock on the file of fd.
// /proc/locks names each holder's pid; it leaves out holders whose pid is
// gone (a killed process's locks outlive it by a moment, until the kernel
// closes its files) and those in other PID namespaces.
bool liveHolderVisible(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return true;
  const std::string file =
      strFormat("%02x:%02x:%llu", major(st.st_dev), minor(st.st_dev), static_cast<unsigned long long>(st.st_ino));
  FILE* locks = std::fopen("/proc/locks", "re");
  if (locks == nullptr) return true;
  char line[256];
  bool live = false;
  while (!live && std::fgets(line, sizeof(line), locks) != nullptr) {
    char kind[16], mode[16], access[16], id[64];
    long pid = 0;
    if (std::sscanf(line, "%*[^:]: %15s %15s %15s %ld %63s", kind, mode, access, &pid, id) != 5) continue;
    live = std::strcmp(kind, "FLOCK") == 0 && file == id && (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0);
  }
  std::fclose(locks);
  return live;
}

// Removes `name` ("/mscclpp-shm...") when no process holds it: a
// non-blocking exclusive lock succeeds only when nobody maps it. A lock
// no live process we see holds may be a killed one's on its way out:
// it is tried again for up to waitMs.
bool unlinkIfUnused(const std::string& name, int waitMs = 0) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return false;
  bool unused = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (!unused && waitMs > 0 && !liveHolderVisible(fd)) {
    for (int waited = 0; !unused && waited < waitMs; waited += 5) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      unused = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    }
  }
  if (unused) ::shm_unlink(name.c_str());
  ::close(fd);
  return unused;
}

void unlinkOwnNamesAtExit();

// How long a sweep after a peer's death waits for locks no live process holds.
constexpr int kDeadHolderWaitMs = 200;
std::atomic<int> sweepsRunning{0};

void ensureExitHandler() {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(unlinkOwnNamesAtExit); });
}

// A segment whose name appears only once its creator holds the lock:
// an unnamed file in /dev/shm, locked, then linked under `name`. Where
// that cannot be done, shm_open, then the lock at once. -1 with errno on failure.
int createLockedSegment(const std::string& name, size_t size) {
  int fd = ::open(kShmDir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) {
    const std::string self = strFormat("/proc/self/fd/%d", fd);
    const std::string path = std::string(kShmDir) + name;
    if (::flock(fd, LOCK_SH) == 0 && ::ftruncate(fd, static_cast<off_t>(size)) == 0 &&
        ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      return fd;
    }
    ::close(fd);
  }
  fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  if (::flock(fd, LOCK_SH) != 0 || ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    errno = e;
    return -1;
  }
  return fd;
}

// Removes the allocation at base from the table and returns it, or `absent`.
Allocation forget(void* base, Allocation absent) {
  std::lock_guard<std::mutex> lock(allocations().mutex);
  auto it = allocations().byBase.find(reinterpret_cast<uintptr_t>(base));
  if (it == allocations().byBase.end()) return absent;
  Allocation gone = it->second;
  allocations().byBase.erase(it);
  return gone;
}

struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  std::string posixName;  // a named segment's name: the last to unmap it removes it
  ~Mapping() {
    if (base) ::munmap(base, size);
    if (!posixName.empty()) unlinkIfUnused(posixName);
  }
};

struct ImportCache {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<Mapping>> byName;
};

ImportCache& imports() {
  static ImportCache* c = new ImportCache();
  return *c;
}

size_t pageRound(size_t bytes) {
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

void* mapFd(int fd, size_t size, const std::string& what) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw SystemError(what + ": mmap of " + std::to_string(size) + " bytes", errno);
  return p;
}

std::shared_ptr<void> allocateMemfd(size_t size, int* errOut) {
  int fd = ::memfd_create("mscclpp-shared-host", MFD_CLOEXEC);
  if (fd < 0) {
    *errOut = errno;
    return nullptr;
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int e = errno;
    ::close(fd);
    throw SystemError("allocSharedHost: ftruncate of a memfd to " + std::to_string(size) + " bytes", e);
  }
  void* base;
  try {
    base = mapFd(fd, size, "allocSharedHost");
  } catch (...) {
    ::close(fd);
    throw;
  }
  struct stat st {};
  ::fstat(fd, &st);
  Allocation a{size, strFormat("memfd:%d:%d:%llu", int(getpid()), fd, (unsigned long long)st.st_ino), fd, "", true};
  {
    std::lock_guard<std::mutex> lock(allocations().mutex);
    allocations().byBase[reinterpret_cast<uintptr_t>(base)] = a;
  }
  return std::shared_ptr<void>(base, [size](void* p) {
    Allocation gone = forget(p, Allocation{0, "", -1, "", false});
    ::munmap(p, size);
    if (gone.fd >= 0) ::close(gone.fd);
  });
}

std::shared_ptr<void> allocatePosix(size_t size) {
  static std::atomic<uint64_t> counter{0};
  if (!posixUsed.exchange(true)) {
    sweepUnusedSegments(0);  // what killed jobs left
    ensureExitHandler();
  }
  uint32_t tag = static_cast<uint32_t>(randomU64("a shared memory name"));
  std::string name =
      strFormat("/%s%d.%llu.%08x", kPosixPrefix, int(getpid()), (unsigned long long)counter.fetch_add(1), tag);
  int fd = createLockedSegment(name, size);
  if (fd < 0) throw SystemError("allocSharedHost: creating POSIX shared memory " + name, errno);
  void* base = nullptr;
  try {
    base = mapFd(fd, size, "allocSharedHost");
  } catch (...) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw;
  }
  ::close(fd);  // peers open the name; the mapping keeps our lock
  {
    std::lock_guard<std::mutex> lock(allocations().mutex);
    allocations().byBase[reinterpret_cast<uintptr_t>(base)] = Allocation{size, "posix:" + name, -1, name, false};
  }
  return std::shared_ptr<void>(base, [size](void* p) {
    Allocation gone = forget(p, Allocation{0, "", -1, "", true});
    ::munmap(p, size);
    if (!gone.unlinked && !gone.posixName.empty()) ::shm_unlink(gone.posixName.c_str());
  });
}

// The live allocation containing [ptr, ptr+bytes); caller holds the table lock.
const std::pair<const uintptr_t, Allocation>* findLocked(const void* ptr, size_t bytes) {
  auto& table = allocations().byBase;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = table.upper_bound(p);
  if (it == table.begin()) return nullptr;
  --it;
  if (p < it->first || p + bytes > it->first + it->second.size || p + bytes < p) return nullptr;
  return &*it;
}

}  // namespace

std::shared_ptr<void> allocate(size_t bytes) {
  MSCCLPP_ENFORCE(bytes > 0, ErrorCode::InvalidArgument, "allocSharedHost: 0 bytes requested");
  size_t size = pageRound(bytes);
  std::string mode = params::hostShmMode();
  if (mode != "posix") {
    int err = 0;
    auto p = allocateMemfd(size, &err);
    if (p) return p;
    MSCCLPP_ENFORCE(mode != "memfd", ErrorCode::SystemError,
                    "allocSharedHost: memfd_create failed: %s (MSCCLPP_HOST_SHM=memfd)", std::strerror(err));
    MSCCLPP_INFO(LogTransport, "allocSharedHost: memfd_create failed (%s); using POSIX shared memory",
                 std::strerror(err));
  }
  return allocatePosix(size);
}

bool isShared(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(allocations().mutex);
  return findLocked(ptr, bytes) != nullptr;
}

bool unlinkName(const void* ptr) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(allocations().mutex);
    auto* found = findLocked(ptr, 1);
    if (found == nullptr) return false;
    Allocation& a = const_cast<Allocation&>(found->second);
    if (a.unlinked || a.posixName.empty()) return false;
    a.unlinked = true;
    name = a.posixName;
  }
  return ::shm_unlink(name.c_str()) == 0;
}

bool hasName(const void* ptr) {
  std::lock_guard<std::mutex> lock(allocations().mutex);
  auto* found = findLocked(ptr, 1);
  return found != nullptr && !found->second.unlinked && !found->second.posixName.empty();
}

bool exportRange(const void* ptr, size_t bytes, HostShmRecord* out) {
  std::lock_guard<std::mutex> lock(allocations().mutex);
  auto* found = findLocked(ptr, bytes);
  if (found == nullptr) return false;
  out->segmentName = found->second.name;
  out->segmentSize = found->second.size;
  out->offset = reinterpret_cast<uintptr_t>(ptr) - found->first;
  return true;
}

namespace {

int openSegment(const std::string& name, uint64_t* expectInode, const std::string& what) {
  if (name.rfind("memfd:", 0) == 0) {
    int pid = 0, fd = 0;
    unsigned long long ino = 0;
    char tail = 0;
    MSCCLPP_ENFORCE(std::sscanf(name.c_str(), "memfd:%d:%d:%llu%c", &pid, &fd, &ino, &tail) == 3 && pid > 0 && fd >= 0,
                    ErrorCode::InvalidArgument, "%s: malformed shared memory name '%s'", what.c_str(), name.c_str());
    *expectInode = ino;
    std::string path = strFormat("/proc/%d/fd/%d", pid, fd);
    int f = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (f < 0) {
      int e = errno;
      MSCCLPP_THROW(ErrorCode::SystemError,
                    "%s: cannot open %s: %s (the owner process exited or freed the memory, or is on another host "
                    "or PID namespace)",
                    what.c_str(), path.c_str(), std::strerror(e));
    }
    return f;
  }
  if (name.rfind("posix:/", 0) == 0) {
    std::string posix = name.substr(6);
    MSCCLPP_ENFORCE(posix.size() < 255 && posix.find('/', 1) == std::string::npos, ErrorCode::InvalidArgument,
                    "%s: malformed shared memory name '%s'", what.c_str(), name.c_str());
    int f = ::shm_open(posix.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (f < 0) {
      int e = errno;
      MSCCLPP_THROW(ErrorCode::SystemError, "%s: cannot open POSIX shared memory %s: %s (freed or already unlinked?)",
                    what.c_str(), posix.c_str(), std::strerror(e));
    }
    // Held through the mapping: the name stays while this process uses it.
    while (::flock(f, LOCK_SH) != 0 && errno == EINTR) {
    }
    posixUsed.store(true, std::memory_order_relaxed);
    *expectInode = 0;
    return f;
  }
  MSCCLPP_THROW(ErrorCode::InvalidArgument, "%s: unknown shared memory name '%s'", what.c_str(), name.c_str());
}

}  // namespace

std::shared_ptr<void> importRange(const HostShmRecord& e, size_t bytes, void** data, const std::string& what) {
  MSCCLPP_ENFORCE(e.offset <= e.segmentSize && bytes <= e.segmentSize - e.offset, ErrorCode::InvalidArgument,
                  "%s: range [%llu, +%zu) is outside its shared memory segment of %llu bytes", what.c_str(),
                  (unsigned long long)e.offset, bytes, (unsigned long long)e.segmentSize);
  ImportCache& cache = imports();
  std::lock_guard<std::mutex> lock(cache.mutex);
  std::shared_ptr<Mapping> m = cache.byName[e.segmentName].lock();
  if (!m) {
    uint64_t inode = 0;
    int fd = openSegment(e.segmentName, &inode, what);
    struct stat st {};
    ::fstat(fd, &st);
    if ((inode != 0 && static_cast<uint64_t>(st.st_ino) != inode) ||
        static_cast<uint64_t>(st.st_size) < e.segmentSize) {
      ::close(fd);
      MSCCLPP_THROW(ErrorCode::RemoteError,
                    "%s: shared memory '%s' is not the exported allocation any more (inode %llu, %lld bytes)",
                    what.c_str(), e.segmentName.c_str(), (unsigned long long)st.st_ino, (long long)st.st_size);
    }
    m = std::make_shared<Mapping>();
    try {
      m->base = mapFd(fd, e.segmentSize, what);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    m->size = e.segmentSize;
    if (e.segmentName.rfind("posix:/", 0) == 0) m->posixName = e.segmentName.substr(6);
    cache.byName[e.segmentName] = m;
  }
  *data = static_cast<char*>(m->base) + e.offset;
  return m;
}

namespace {

// At a normal exit, names this process made go: whoever still maps them
// keeps the memory, and nobody can join a dead process's memory anyway.
// A sweep still running finishes first, bounded.
void unlinkOwnNamesAtExit() {
  for (int waited = 0; sweepsRunning.load() > 0 && waited < 2 * kDeadHolderWaitMs; waited += 5)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::lock_guard<std::mutex> lock(allocations().mutex);
  for (auto& [base, a] : allocations().byBase) {
    if (!a.unlinked && !a.posixName.empty()) ::shm_unlink(a.posixName.c_str());
    a.unlinked = true;
  }
}

}  // namespace

size_t sweepUnusedSegments(int waitMs) {
  DIR* d = ::opendir(kShmDir);
  if (d == nullptr) return 0;
  std::vector<std::string> names;
  while (struct dirent* ent = ::readdir(d)) {
    if (std::strncmp(ent->d_name, kPosixPrefix, sizeof(kPosixPrefix) - 1) == 0) names.push_back(ent->d_name);
  }
  ::closedir(d);
  size_t removed = 0;
  for (const std::string& n : names) removed += unlinkIfUnused("/" + n, waitMs) ? 1 : 0;
  if (removed > 0) {
    MSCCLPP_INFO(LogTransport, "removed %zu POSIX shared memory segment(s) that no process uses from %s", removed,
                 kShmDir);
  }
  return removed;
}

void sweepIfPosixUsed(bool wait) {
  // Also before this process made any: the dead peer may have.
  if (!posixUsed.load(std::memory_order_relaxed) && params::hostShmMode() != "posix") return;
  if (wait) {
    sweepUnusedSegments(kDeadHolderWaitMs);
    return;
  }
  ensureExitHandler();
  // On a thread of its own: a dead peer's locks may take a moment to go,
  // and the caller (the bootstrap's) must not wait. Exit waits for it.
  sweepsRunning.fetch_add(1);
  std::thread([] {
    sweepUnusedSegments(kDeadHolderWaitMs);
    sweepsRunning.fetch_sub(1);
  }).detach();
}

size_t liveImportCount() {
  ImportCache& cache = imports();
  std::lock_guard<std::mutex> lock(cache.mutex);
  size_t n = 0;
  for (auto it = cache.byName.begin(); it != cache.byName.end();) {
    if (it->second.expired()) {
      it = cache.byName.erase(it);
    } else {
      ++n;
      ++it;
    }
  }
  return n;
}

}  // namespace mscclpp::transport::host_shm

namespace mscclpp {

std::shared_ptr<void> allocSharedHostBytes(size_t bytes) { return transport::host_shm::allocate(bytes); }
bool isSharedHost(const void* ptr, size_t bytes) { return transport::host_shm::isShared(ptr, bytes); }
bool unlinkSharedHostName(const void* ptr) { return transport::host_shm::unlinkName(ptr); }
bool sharedHostHasName(const void* ptr) { return transport::host_shm::hasName(ptr); }

}  // namespace mscclpp
