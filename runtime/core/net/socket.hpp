// TCP sockets with deadlines: the one place that talks to the socket API, shared by the bootstrap
// and the TCP transport. Every blocking operation takes a Deadline and a description of what it is
// doing, so a timeout or a failure names the peer and the operation.
//
// Thread-safety: a Socket is used by one thread at a time, except shutdown(), which any thread may
// call to wake a thread blocked in it (that is how abort() interrupts I/O without closing an fd
// another thread is polling).
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

  // "host:port", "[v6]:port"; host may be a name (resolved with getaddrinfo, IPv4 preferred).
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

  // Fixed 24-byte wire form: family tag (4 or 6) u16, port u16, scope id u32, address 16 bytes.
  void encode(uint8_t* out) const;
  // Throws Error(InvalidArgument) naming `what` when the bytes are not a valid address.
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

  // A non-blocking listening socket bound to addr (port 0 picks a free port).
  static Socket listenOn(const SocketAddress& addr, int backlog = 1024);
  // Connects (non-blocking connect + poll) before the deadline. With retryRefused, a refused
  // connection is retried until the deadline (the root may not listen yet); otherwise it fails at
  // once. Errors name `peer` (e.g. "rank 3") and the address.
  // A set *cancel (checked between attempts and poll slices) ends the attempt with Aborted.
  static Socket connectTo(const SocketAddress& addr, const Deadline& deadline, const std::string& peer,
                          bool retryRefused, const std::atomic<bool>* cancel = nullptr);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  SocketAddress localAddress() const;
  SocketAddress peerAddress() const;

  // Accepts one pending connection (non-blocking); returns an invalid Socket when none is pending.
  Socket accept();

  // Blocking writes/reads of exactly `size` bytes before the deadline. Errors: Timeout, or
  // RemoteError when the peer closed or reset the connection; the message starts with `what`.
  void sendAll(const void* data, size_t size, const Deadline& deadline, const std::string& what);
  void sendAllv(iovec* iov, int iovCount, const Deadline& deadline, const std::string& what);
  void recvAll(void* data, size_t size, const Deadline& deadline, const std::string& what);

  // Non-blocking read: bytes read (> 0), 0 when nothing is available now; throws RemoteError on EOF
  // or a connection error (message starts with `what`).
  size_t recvSome(void* data, size_t size, const std::string& what);

  // Wakes threads blocked on this socket (their call fails); the fd stays open until close().
  void shutdown();
  void close();

 private:
  int fd_ = -1;
};

// Options every data socket gets: TCP_NODELAY (latency of small control frames), close-on-exec.
void setLowLatency(int fd);

}  // namespace mscclpp::net

#endif  // MSCCLPP_CORE_NET_SOCKET_HPP_
