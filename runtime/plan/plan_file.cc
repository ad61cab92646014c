#include "plan/plan_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/params.hpp"

namespace mscclpp::plan {
namespace {

// Closes the descriptor on every path out of readPlanFile.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const char* fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

uint64_t planMaxBytes() {
  const int64_t v = params::planMaxBytes();
  MSCCLPP_ENFORCE(v > 0, ErrorCode::InvalidArgument, "MSCCLPP_PLAN_MAX_BYTES=%lld must be positive",
                  static_cast<long long>(v));
  return static_cast<uint64_t>(v);
}

uint64_t planDirMaxBytes() {
  const int64_t v = params::planDirMaxBytes();
  MSCCLPP_ENFORCE(v > 0, ErrorCode::InvalidArgument, "MSCCLPP_PLAN_DIR_MAX_BYTES=%lld must be positive",
                  static_cast<long long>(v));
  return static_cast<uint64_t>(v);
}

std::string readPlanFile(const std::string& path) {
  // O_NONBLOCK keeps a FIFO's open from waiting for a writer;
  // regular files ignore it.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw SystemError(strFormat("%s: cannot open plan file", path.c_str()), errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw SystemError(strFormat("%s: cannot stat plan file", path.c_str()), errno);
  if (!S_ISREG(st.st_mode)) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: is %s, not a plan file", path.c_str(), fileKind(st.st_mode));
  }
  const uint64_t limit = planMaxBytes();
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > limit) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan,
                  "%s: %s (%llu bytes) is larger than MSCCLPP_PLAN_MAX_BYTES=%llu (%s); raise the limit to load it",
                  path.c_str(), formatBytes(size).c_str(), static_cast<unsigned long long>(size),
                  static_cast<unsigned long long>(limit), formatBytes(limit).c_str());
  }
  std::string text;
  text.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), &text[done], text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError(strFormat("%s: cannot read plan file", path.c_str()), errno);
    if (n == 0) {
      MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: file shrank from %llu to %zu bytes while being read", path.c_str(),
                    static_cast<unsigned long long>(size), done);
    }
    done += static_cast<size_t>(n);
  }
  char extra;
  ssize_t n;
  do {
    n = ::read(fd.get(), &extra, 1);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    MSCCLPP_THROW(ErrorCode::InvalidPlan, "%s: file grew beyond %llu bytes while being read", path.c_str(),
                  static_cast<unsigned long long>(size));
  }
  return text;
}

}  // namespace mscclpp::plan
