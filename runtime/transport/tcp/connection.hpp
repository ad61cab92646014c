// The TCP Connection: writes and counter updates become frames on
// this side's outgoing socket. flush sends FLUSH and waits for
// the peer's ACK, which means everything before it was applied.
#ifndef MSCCLPP_TRANSPORT_TCP_CONNECTION_HPP_
#define MSCCLPP_TRANSPORT_TCP_CONNECTION_HPP_

#include <memory>
#include <vector>

#include "mscclpp/connection.hpp"
#include "transport/tcp/engine.hpp"

namespace mscclpp::transport::tcp {

// What a rank sends its peer over the bootstrap to set up a TCP connection.
struct EndpointInfo {
  net::SocketAddress address;
  net::Secret secret{};
  uint64_t engineId = 0;
  uint64_t nonce = 0;
};
std::vector<char> encodeEndpoint(const EndpointInfo& e);
EndpointInfo decodeEndpoint(const std::vector<char>& bytes, const std::string& what);
EndpointInfo localEndpoint(const Engine& engine);

class TcpConnection : public Connection {
 public:
  // Opens our outgoing socket to the peer's engine and
  // claims the one it opened to ours. timeout bounds
  // that handshake and each later operation: a write's
  // or update's send, a flush without its own timeout.
  TcpConnection(std::shared_ptr<Engine> engine, int localRank, int remoteRank, const EndpointInfo& local,
                const EndpointInfo& remote, const TimeoutSetting& timeout);
  ~TcpConnection() override;

  void write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
             uint64_t size) override;
  void updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) override;
  void flush(int64_t timeoutUsec = -1) override;
  Transport transport() const override { return Transport::Ethernet; }
  Transport remoteTransport() const override { return Transport::Ethernet; }

 private:
  uint64_t remoteKey(const RegisteredMemory& dst, const char* op) const;
  Deadline opDeadline() const;

  std::shared_ptr<Engine> engine_;
  std::shared_ptr<Link> link_;
  TimeoutSetting timeout_;
  std::vector<char> staging_;  // device-memory sources
};

}  // namespace mscclpp::transport::tcp

#endif  // MSCCLPP_TRANSPORT_TCP_CONNECTION_HPP_
