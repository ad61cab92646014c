// TCP sockets with deadlines, the one user of the socket API.
// The bootstrap and the TCP transport share it.
// Every blocking call takes a Deadline and a description of what it does,
// so a timeout or failure names the peer and the operation.
// Thread-safety: one thread at a time, but any thread may call shutdown().
// That wakes a blocked thread without closing an fd another thread polls: abort() relies on it.
#ifndef MSCCLPP_CORE_NET_SOCKET_HPP_
#define MSCCLPP_CORE_NET_SOCKET_HPP_

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/deadline.hpp"

namespace mscclpp::net {

// An IPv4 or IPv6 address with a port.
class SocketAddress {
 public:
  static constexpr size_t kEncodedBytes = 24;

  SocketAddress();
  SocketAddress(const sockaddr* addr, socklen_t len);

  // "host:port" or "[v6]:port"; a host name
  // resolves through getaddrinfo, IPv4 first.
  static SocketAddress parse(const std::string& hostPort);

  bool valid() const { return len_ != 0; }
  int family() const;
  uint16_t port() const;
  void setPort(uint16_t port);
  bool isLoopback() const;
  const sockaddr* raw() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t rawLength() const { return len_; }
  // "1.2.3.4:5", "[::1]:5".
  std::string toString() const;

  // 24-byte wire form: family 4 or 6 u16, port u16, scope id u32,
  // 16 address bytes.
  void encode(uint8_t* out) const;
  // Throws InvalidArgument naming what when
  // the bytes are not a valid address.
  static SocketAddress decode(const uint8_t* in, const char* what);

  bool operator==(const SocketAddress& other) const;

 private:
  sockaddr_storage storage_;
  socklen_t len_;
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // A non-blocking listening socket bound to addr; port 0 picks a free port.
  static Socket listenOn(const SocketAddress& addr, int backlog = 1024);
  // Connects before the deadline with a non-blocking connect and poll.
  // retryRefused retries a refused connection until the deadline:
  // the root may not listen yet.
  // Errors name peer, such as "rank 3", and the address.
  // A set *cancel, checked between attempts and poll slices,
  // ends it with Aborted.
  static Socket connectTo(const SocketAddress& addr, const Deadline& deadline, const std::string& peer,
                          bool retryRefused, const std::atomic<bool>* cancel = nullptr);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  SocketAddress localAddress() const;
  SocketAddress peerAddress() const;

  // Accepts one pending connection without blocking;
  // an invalid Socket when none waits.
  Socket accept();

  // Blocking writes and reads of exactly size bytes before the deadline.
  // Errors are Timeout, or RemoteError when the peer closed or reset;
  // messages start with what.
  void sendAll(const void* data, size_t size, const Deadline& deadline, const std::string& what);
  void sendAllv(iovec* iov, int iovCount, const Deadline& deadline, const std::string& what);
  void recvAll(void* data, size_t size, const Deadline& deadline, const std::string& what);

  // Non-blocking read: the bytes read, or 0 when none are available.
  // Throws RemoteError, starting with what, at EOF or a connection error.
  size_t recvSome(void* data, size_t size, const std::string& what);

  // Fails the calls blocked on this socket; the fd stays open until close().
  void shutdown();
  void close();

 private:
  int fd_ = -1;
};

// Sets close-on-exec and TCP_NODELAY,
// which keeps small control frames fast.
void setLowLatency(int fd);

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_SOCKET_HPP_
