#include "transport/tcp/connection.hpp"

#include <cstring>

#include "core/enforce.hpp"
#include "core/hash.hpp"
#include "core/logger.hpp"
#include "core/random.hpp"
#include "core/serial.hpp"
#include "transport/device_memory.hpp"
#include "transport/registration.hpp"

namespace mscclpp::transport::tcp {

namespace {
constexpr uint32_t kEndpointMagic = 0x5045544d;  // "MTEP"
}  // namespace

std::vector<char> encodeEndpoint(const EndpointInfo& e) {
  ByteWriter w;
  w.put(kEndpointMagic);
  uint8_t addr[net::SocketAddress::kEncodedBytes];
  e.address.encode(addr);
  w.putBytes(addr, sizeof(addr));
  w.putBytes(e.secret.data(), e.secret.size());
  w.put(e.engineId);
  w.put(e.nonce);
  return std::move(w.bytes());
}

EndpointInfo decodeEndpoint(const std::vector<char>& bytes, const std::string& what) {
  ByteReader r(bytes, what.c_str());
  MSCCLPP_ENFORCE(r.get<uint32_t>("magic") == kEndpointMagic, ErrorCode::RemoteError,
                  "%s: not a TCP endpoint (bad magic)", what.c_str());
  EndpointInfo e;
  uint8_t addr[net::SocketAddress::kEncodedBytes];
  r.getBytes(addr, sizeof(addr), "address");
  e.address = net::SocketAddress::decode(addr, (what + " address").c_str());
  r.getBytes(e.secret.data(), e.secret.size(), "secret");
  e.engineId = r.get<uint64_t>("engineId");
  e.nonce = r.get<uint64_t>("nonce");
  r.expectEnd();
  return e;
}

EndpointInfo localEndpoint(const Engine& engine) {
  EndpointInfo e;
  e.address = engine.address();
  e.secret = engine.secret();
  e.engineId = engine.id();
  e.nonce = randomU64("a TCP connection nonce");
  return e;
}

TcpConnection::TcpConnection(std::shared_ptr<Engine> engine, int localRank, int remoteRank, const EndpointInfo& local,
                             const EndpointInfo& remote, const TimeoutSetting& timeout)
    : Connection(localRank, remoteRank), engine_(std::move(engine)), timeout_(timeout) {
  const std::string who = describe();
  const Deadline deadline = timeout_.start();
  // Each direction has its own id, so the two sockets
  // of this pair cannot be confused with each other or
  // with another connection between the same ranks.
  uint64_t outId = mix64(local.nonce, remote.nonce);
  uint64_t inId = mix64(remote.nonce, local.nonce);
  net::Socket out =
      net::Socket::connectTo(remote.address, deadline, strFormat("rank %d's TCP transport", remoteRank), false);
  Hello hello{};
  hello.header = net::makeHelloHeader(kHelloMagic, remote.secret);
  hello.connId = outId;
  hello.fromRank = localRank;
  out.sendAll(&hello, sizeof(hello), deadline, who + ": hello");
  char ack[8];
  out.recvAll(ack, sizeof(ack), deadline, who + ": waiting for the hello reply");
  MSCCLPP_ENFORCE(std::memcmp(ack, kHelloAckMagic, 8) == 0, ErrorCode::RemoteError, "%s: bad hello reply", who.c_str());
  net::Socket in = engine_->claim(
      inId, deadline, who + ": waiting for rank " + std::to_string(remoteRank) + " to open its side of the connection");
  link_ = std::make_shared<Link>(who, remoteRank, remote.engineId, std::move(out), std::move(in));
  engine_->attach(link_);
  MSCCLPP_INFO(LogTransport, "%s: connected", who.c_str());
}

TcpConnection::~TcpConnection() {
  if (link_) engine_->release(link_);
}

Deadline TcpConnection::opDeadline() const { return timeout_.start(); }

uint64_t TcpConnection::remoteKey(const RegisteredMemory& dst, const char* op) const {
  const auto& m = *RegisteredMemoryAccess::impl(dst);
  const TcpRecord* record = m.record<TcpRecord>(Transport::Ethernet);
  MSCCLPP_ENFORCE(record != nullptr, ErrorCode::InvalidArgument,
                  "%s: %s: the destination memory (rank %d, %llu bytes) is not registered for TCP (transports %s)",
                  describe().c_str(), op, m.ownerRank, (unsigned long long)m.size, m.transports.toString().c_str());
  MSCCLPP_ENFORCE(record->engineId == link_->remoteEngineId(), ErrorCode::InvalidArgument,
                  "%s: %s: the destination memory belongs to rank %d's communicator, not to this connection's peer",
                  describe().c_str(), op, m.ownerRank);
  return record->key;
}

void TcpConnection::write(RegisteredMemory dst, uint64_t dstOffset, RegisteredMemory src, uint64_t srcOffset,
                          uint64_t size) {
  checkWrite(dst, dstOffset, src, srcOffset, size);
  uint64_t key = remoteKey(dst, "write");
  const std::string what = describe() + strFormat(": write of %llu bytes", (unsigned long long)size);
  Deadline deadline = opDeadline();
  const char* from = static_cast<const char*>(src.data()) + srcOffset;
  WireFrame frame{kWireMagic, kFrameWrite, key, dstOffset, size};
  std::lock_guard<std::mutex> lock(link_->sendMutex());
  try {
    if (!src.isDeviceMemory()) {
      link_->send(frame, size ? from : nullptr, size, deadline, what);
      return;
    }
    link_->send(frame, nullptr, 0, deadline, what);
    if (staging_.empty()) staging_.resize(kStagingBytes);
    for (uint64_t done = 0; done < size;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, staging_.size()));
      copyDeviceToHost(staging_.data(), from + done, n, what.c_str());
      link_->sendMore(staging_.data(), n, deadline, what);
      done += n;
    }
  } catch (const Error& e) {
    if (engine_->aborted()) MSCCLPP_THROW(ErrorCode::Aborted, "%s: the communicator was aborted", what.c_str());
    throw;
  }
}

void TcpConnection::updateAndSync(RegisteredMemory dst, uint64_t dstOffset, uint64_t* src, uint64_t newValue) {
  checkUpdate(dst, dstOffset);
  uint64_t key = remoteKey(dst, "updateAndSync");
  *src = newValue;
  const std::string what = describe() + strFormat(": update of the counter at offset %llu to %llu",
                                                  (unsigned long long)dstOffset, (unsigned long long)newValue);
  std::lock_guard<std::mutex> lock(link_->sendMutex());
  link_->send(WireFrame{kWireMagic, kFrameUpdate, key, dstOffset, newValue}, nullptr, 0, opDeadline(), what);
}

void TcpConnection::flush(int64_t timeoutUsec) {
  Deadline deadline =
      timeoutUsec < 0 ? opDeadline() : Deadline(static_cast<double>(timeoutUsec) * 1e-6, "the flush's timeout");
  const std::string what = describe() + ": flush";
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(link_->sendMutex());
    seq = link_->nextSequence();
    link_->send(WireFrame{kWireMagic, kFrameFlush, seq, 0, 0}, nullptr, 0, deadline, what);
  }
  link_->waitAck(seq, deadline, what);
}

}  // namespace mscclpp::transport::tcp
