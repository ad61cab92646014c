#include "core/net/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/enforce.hpp"
#include "core/format.hpp"

namespace mscclpp::net {

namespace {

// Poll slices keep blocked calls checking
// deadlines when nothing wakes poll.
constexpr int kPollSliceMs = 200;

int pollSlice(const Deadline& deadline) {
  int left = deadline.remainingMs();
  if (left < 0) return kPollSliceMs;
  return std::min(left, kPollSliceMs);
}

// Waits until fd is ready for `events`; false when the deadline passed.
bool waitReady(int fd, short events, const Deadline& deadline, const std::string& what) {
  while (true) {
    if (deadline.expired()) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, pollSlice(deadline));
    if (rc < 0) {
      if (errno == EINTR) continue;
      throw SystemError(what + ": poll", errno);
    }
    if (rc > 0) return true;  // ready or in error: the next call tells which
  }
}

bool isPeerGoneErrno(int e) { return e == ECONNRESET || e == EPIPE || e == ENOTCONN || e == ESHUTDOWN; }

}  // namespace

// ---- SocketAddress --------------------------------------------------------------------------

SocketAddress::SocketAddress() : len_(0) { std::memset(&storage_, 0, sizeof(storage_)); }

SocketAddress::SocketAddress(const sockaddr* addr, socklen_t len) : SocketAddress() {
  MSCCLPP_ENFORCE(len <= sizeof(storage_), ErrorCode::InternalError, "socket address of %u bytes", unsigned(len));
  std::memcpy(&storage_, addr, len);
  len_ = len;
}

SocketAddress SocketAddress::parse(const std::string& hostPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    MSCCLPP_ENFORCE(close != std::string::npos && close + 1 < hostPort.size() && hostPort[close + 1] == ':',
                    ErrorCode::InvalidArgument, "address '%s': expected [ipv6]:port", hostPort.c_str());
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    MSCCLPP_ENFORCE(colon != std::string::npos && colon > 0, ErrorCode::InvalidArgument,
                    "address '%s': expected host:port", hostPort.c_str());
    MSCCLPP_ENFORCE(hostPort.find(':') == colon, ErrorCode::InvalidArgument,
                    "address '%s': write IPv6 addresses as [addr]:port", hostPort.c_str());
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  char* end = nullptr;
  long portValue = std::strtol(port.c_str(), &end, 10);
  MSCCLPP_ENFORCE(!port.empty() && end && *end == '\0' && portValue > 0 && portValue <= 65535,
                  ErrorCode::InvalidArgument, "address '%s': port '%s' is not in 1..65535", hostPort.c_str(),
                  port.c_str());
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  MSCCLPP_ENFORCE(rc == 0 && result != nullptr, ErrorCode::InvalidArgument, "address '%s': cannot resolve '%s': %s",
                  hostPort.c_str(), host.c_str(), gai_strerror(rc));
  const addrinfo* chosen = result;
  for (const addrinfo* a = result; a; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  }
  SocketAddress out(chosen->ai_addr, chosen->ai_addrlen);
  ::freeaddrinfo(result);
  out.setPort(static_cast<uint16_t>(portValue));
  return out;
}

int SocketAddress::family() const { return len_ ? storage_.ss_family : AF_UNSPEC; }

uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

void SocketAddress::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
}

bool SocketAddress::isLoopback() const {
  if (family() == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr) >> 24) == 127;
  }
  if (family() == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  return false;
}

std::string SocketAddress::toString() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, host, sizeof(host));
    return strFormat("%s:%u", host, unsigned(port()));
  }
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, host, sizeof(host));
    return strFormat("[%s]:%u", host, unsigned(port()));
  }
  return "(no address)";
}

void SocketAddress::encode(uint8_t* out) const {
  std::memset(out, 0, kEncodedBytes);
  uint16_t tag = family() == AF_INET ? 4 : family() == AF_INET6 ? 6 : 0;
  uint16_t p = port();
  uint32_t scope = 0;
  std::memcpy(out, &tag, 2);
  std::memcpy(out + 2, &p, 2);
  if (family() == AF_INET) {
    std::memcpy(out + 8, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, 4);
  } else if (family() == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    scope = a6->sin6_scope_id;
    std::memcpy(out + 8, &a6->sin6_addr, 16);
  }
  std::memcpy(out + 4, &scope, 4);
}

SocketAddress SocketAddress::decode(const uint8_t* in, const char* what) {
  uint16_t tag, p;
  uint32_t scope;
  std::memcpy(&tag, in, 2);
  std::memcpy(&p, in + 2, 2);
  std::memcpy(&scope, in + 4, 4);
  MSCCLPP_ENFORCE(tag == 4 || tag == 6, ErrorCode::InvalidArgument,
                  "%s: address family tag %u is neither 4 (IPv4) nor 6 (IPv6)", what, unsigned(tag));
  MSCCLPP_ENFORCE(p != 0, ErrorCode::InvalidArgument, "%s: port is 0", what);
  if (tag == 4) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(p);
    std::memcpy(&a.sin_addr, in + 8, 4);
    return SocketAddress(reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(p);
  a.sin6_scope_id = scope;
  std::memcpy(&a.sin6_addr, in + 8, 16);
  return SocketAddress(reinterpret_cast<sockaddr*>(&a), sizeof(a));
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  return len_ == other.len_ && std::memcmp(&storage_, &other.storage_, len_) == 0;
}

// ---- Socket ---------------------------------------------------------------------------------

Socket::~Socket() { close(); }

Socket::Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void setLowLatency(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Socket Socket::listenOn(const SocketAddress& addr, int backlog) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw SystemError("socket() for a listener on " + addr.toString(), errno);
  Socket s(fd);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, addr.raw(), addr.rawLength()) != 0) throw SystemError("bind to " + addr.toString(), errno);
  if (::listen(fd, backlog) != 0) throw SystemError("listen on " + addr.toString(), errno);
  return s;
}

Socket Socket::connectTo(const SocketAddress& addr, const Deadline& deadline, const std::string& peer,
                         bool retryRefused, const std::atomic<bool>* cancel) {
  unsigned attempt = 0;
  while (true) {
    MSCCLPP_ENFORCE(cancel == nullptr || !cancel->load(), ErrorCode::Aborted, "connecting to %s at %s: aborted",
                    peer.c_str(), addr.toString().c_str());
    int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw SystemError("socket() to connect to " + peer + " at " + addr.toString(), errno);
    Socket s(fd);
    setLowLatency(fd);
    int rc = ::connect(fd, addr.raw(), addr.rawLength());
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      while (true) {
        MSCCLPP_ENFORCE(cancel == nullptr || !cancel->load(), ErrorCode::Aborted, "connecting to %s at %s: aborted",
                        peer.c_str(), addr.toString().c_str());
        if (deadline.expired()) {
          MSCCLPP_THROW(ErrorCode::Timeout, "cannot connect to %s at %s within %.3g s (%s)", peer.c_str(),
                        addr.toString().c_str(), deadline.seconds(), deadline.source());
        }
        pollfd p{fd, POLLOUT, 0};
        int ready = ::poll(&p, 1, pollSlice(deadline));
        if (ready < 0 && errno != EINTR) throw SystemError("connect to " + peer + ": poll", errno);
        if (ready > 0) break;
      }
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) return s;
    bool transient =
        err == ECONNREFUSED || err == ETIMEDOUT || err == EAGAIN || err == ENETUNREACH || err == EHOSTUNREACH;
    if (!retryRefused || !transient) {
      MSCCLPP_THROW(ErrorCode::RemoteError, "cannot connect to %s at %s: %s", peer.c_str(), addr.toString().c_str(),
                    std::strerror(err));
    }
    if (deadline.expired()) {
      MSCCLPP_THROW(ErrorCode::Timeout, "cannot connect to %s at %s within %.3g s (%s): %s", peer.c_str(),
                    addr.toString().c_str(), deadline.seconds(), deadline.source(), std::strerror(err));
    }
    // Back off between attempts: the other side is starting up.
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100u, 1u + attempt * 5)));
    ++attempt;
  }
}

SocketAddress Socket::localAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw SystemError("getsockname", errno);
  return SocketAddress(reinterpret_cast<sockaddr*>(&ss), len);
}

SocketAddress Socket::peerAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return SocketAddress();
  return SocketAddress(reinterpret_cast<sockaddr*>(&ss), len);
}

Socket Socket::accept() {
  while (true) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      setLowLatency(fd);
      return Socket(fd);
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) return Socket();
    throw SystemError("accept", errno);
  }
}

void Socket::sendAll(const void* data, size_t size, const Deadline& deadline, const std::string& what) {
  iovec iov{const_cast<void*>(data), size};
  sendAllv(&iov, 1, deadline, what);
}

void Socket::sendAllv(iovec* iov, int iovCount, const Deadline& deadline, const std::string& what) {
  int first = 0;
  while (first < iovCount && iov[first].iov_len == 0) ++first;
  while (first < iovCount) {
    msghdr msg{};
    msg.msg_iov = iov + first;
    msg.msg_iovlen = static_cast<size_t>(iovCount - first);
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!waitReady(fd_, POLLOUT, deadline, what)) throwTimeout(deadline, what);
        continue;
      }
      if (isPeerGoneErrno(errno) || errno == EBADF) {
        MSCCLPP_THROW(ErrorCode::RemoteError, "%s: connection lost (%s)", what.c_str(), std::strerror(errno));
      }
      throw SystemError(what, errno);
    }
    size_t done = static_cast<size_t>(n);
    while (first < iovCount && done >= iov[first].iov_len) {
      done -= iov[first].iov_len;
      iov[first].iov_len = 0;
      ++first;
    }
    if (first < iovCount) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + done;
      iov[first].iov_len -= done;
    }
  }
}

void Socket::recvAll(void* data, size_t size, const Deadline& deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < size) {
    size_t n = recvSome(p + done, size - done, what);
    if (n == 0) {
      if (!waitReady(fd_, POLLIN, deadline, what)) throwTimeout(deadline, what);
      continue;
    }
    done += n;
  }
}

size_t Socket::recvSome(void* data, size_t size, const std::string& what) {
  while (true) {
    ssize_t n = ::recv(fd_, data, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) {
      if (size == 0) return 0;
      MSCCLPP_THROW(ErrorCode::RemoteError, "%s: connection closed by the peer", what.c_str());
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (isPeerGoneErrno(errno) || errno == EBADF) {
      MSCCLPP_THROW(ErrorCode::RemoteError, "%s: connection lost (%s)", what.c_str(), std::strerror(errno));
    }
    throw SystemError(what, errno);
  }
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace mscclpp::net
