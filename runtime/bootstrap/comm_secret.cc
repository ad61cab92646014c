#include "bootstrap/comm_secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/enforce.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"

namespace mscclpp::bootstrap {

namespace {

constexpr size_t kMaxSecretFileBytes = 4096;

std::string readSecretFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw SystemError("MSCCLPP_COMM_SECRET_FILE=" + path + ": cannot open it", errno);
  struct stat st {};
  std::string text;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular && static_cast<size_t>(st.st_size) <= kMaxSecretFileBytes) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, &text[got], text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  MSCCLPP_ENFORCE(regular, ErrorCode::InvalidArgument, "MSCCLPP_COMM_SECRET_FILE=%s is not a regular file",
                  path.c_str());
  MSCCLPP_ENFORCE(static_cast<size_t>(st.st_size) <= kMaxSecretFileBytes, ErrorCode::InvalidArgument,
                  "MSCCLPP_COMM_SECRET_FILE=%s has %lld bytes; a secret file holds at most %zu", path.c_str(),
                  static_cast<long long>(st.st_size), kMaxSecretFileBytes);
  if ((st.st_mode & 077) != 0) {
    MSCCLPP_WARN(LogBootstrap, "MSCCLPP_COMM_SECRET_FILE=%s can be read by other users (mode %03o): chmod 600 it",
                 path.c_str(), static_cast<unsigned>(st.st_mode & 0777));
  }
  const size_t end = text.find_first_of("\r\n");
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace

std::optional<std::string> configuredCommSecret() {
  const std::string inline_ = params::commSecret();
  const std::string file = params::commSecretFile();
  MSCCLPP_ENFORCE(inline_.empty() || file.empty(), ErrorCode::InvalidArgument,
                  "MSCCLPP_COMM_SECRET and MSCCLPP_COMM_SECRET_FILE are both set: set one of them");
  if (inline_.empty() && file.empty()) return std::nullopt;
  const std::string secret = file.empty() ? inline_ : readSecretFile(file);
  const char* from = file.empty() ? "MSCCLPP_COMM_SECRET" : "the first line of MSCCLPP_COMM_SECRET_FILE";
  MSCCLPP_ENFORCE(secret.size() >= kMinCommSecretBytes, ErrorCode::InvalidArgument,
                  "%s has %zu bytes; a secret needs at least %zu (for example 32 hex digits from `openssl rand -hex "
                  "16`): a short one can be guessed offline from a recorded handshake",
                  from, secret.size(), kMinCommSecretBytes);
  return secret;
}

std::optional<net::Digest> jobKey(const net::Secret& idSecret) {
  const std::optional<std::string> secret = configuredCommSecret();
  if (!secret) return std::nullopt;
  static constexpr char kLabel[] = "mscclpp job key";
  return net::hmacSha256(secret->data(), secret->size(),
                         {{kLabel, sizeof(kLabel)}, {idSecret.data(), idSecret.size()}});
}

}  // namespace mscclpp::bootstrap
