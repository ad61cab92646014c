#include "bootstrap/group_ops.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "core/enforce.hpp"
#include "core/format.hpp"
#include "core/hash.hpp"

namespace mscclpp {

void Bootstrap::recv(void* data, size_t size, int peer, int tag) {
  std::vector<char> msg = recv(peer, tag, size);
  MSCCLPP_ENFORCE(msg.size() == size, ErrorCode::InvalidArgument,
                  "bootstrap rank %d/%d: recv from rank %d (tag %d): the message has %zu bytes, expected exactly %zu",
                  getRank(), getNranks(), peer, tag, msg.size(), size);
  if (size) std::memcpy(data, msg.data(), size);
}

uint64_t Bootstrap::addPeerFailureListener(PeerFailureListener) { return 0; }
void Bootstrap::removePeerFailureListener(uint64_t) {}
void Bootstrap::serve(RequestHandler) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this bootstrap implementation serves no requests");
}
std::vector<char> Bootstrap::ask(int, const std::vector<char>&, double) {
  MSCCLPP_THROW(ErrorCode::NotSupported, "this bootstrap implementation sends no requests");
}
std::vector<std::vector<char>> Bootstrap::askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                                  double timeoutSeconds, std::vector<std::string>* errors) {
  std::vector<std::vector<char>> answers(peers.size());
  errors->assign(peers.size(), std::string());
  for (size_t i = 0; i < peers.size(); ++i) {
    try {
      answers[i] = ask(peers[i], request, timeoutSeconds);
    } catch (const std::exception& e) {
      (*errors)[i] = e.what();
    }
  }
  return answers;
}

namespace detail {

namespace {
// The largest answer ask() accepts; the call monitor's are a few KiB.
constexpr size_t kMaxReplyBytes = 1 << 20;

int viewRankOf(const std::vector<int>& worldRanks, int worldRank) {
  auto it = std::find(worldRanks.begin(), worldRanks.end(), worldRank);
  return it == worldRanks.end() ? -1 : static_cast<int>(it - worldRanks.begin());
}
}  // namespace

uint64_t GroupOps::addPeerFailureListener(Bootstrap::PeerFailureListener listener) {
  return endpoint_->failures().add(
      [ranks = worldRanks_, listener = std::move(listener)](int w, const std::string& why, bool left) {
        const int r = viewRankOf(ranks, w);
        if (r >= 0) listener(r, why, left);
      });
}

void GroupOps::removePeerFailureListener(uint64_t id) { endpoint_->failures().remove(id); }

void GroupOps::serve(Bootstrap::RequestHandler handler) {
  if (!handler) return endpoint_->setRequestHandler(ns_, nullptr);
  endpoint_->setRequestHandler(ns_,
                               [ranks = worldRanks_, handler = std::move(handler)](
                                   int from, const std::vector<char>& request) -> std::vector<char> {
                                 const int r = viewRankOf(ranks, from);
                                 return r < 0 ? std::vector<char>() : handler(r, request);
                               });
}

std::vector<char> GroupOps::ask(int peer, const std::vector<char>& request, double timeoutSeconds) {
  checkPeer(peer, "ask");
  const int tag = askCount_.fetch_add(1, std::memory_order_relaxed);
  const Deadline d(timeoutSeconds);
  sendKeyed(peer, kKindRequest, tag, request.data(), request.size(), d, "ask");
  return recvKeyed(peer, kKindReply, tag, kMaxReplyBytes, d, "ask");
}

std::vector<std::vector<char>> GroupOps::askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                                 double timeoutSeconds, std::vector<std::string>* errors) {
  std::vector<std::vector<char>> answers(peers.size());
  std::vector<int> tags(peers.size(), -1);
  errors->assign(peers.size(), std::string());
  const Deadline d(timeoutSeconds);
  for (size_t i = 0; i < peers.size(); ++i) {
    try {
      checkPeer(peers[i], "ask");
      tags[i] = askCount_.fetch_add(1, std::memory_order_relaxed);
      sendKeyed(peers[i], kKindRequest, tags[i], request.data(), request.size(), d, "ask");
    } catch (const std::exception& e) {
      (*errors)[i] = e.what();
      tags[i] = -1;
    }
  }
  for (size_t i = 0; i < peers.size(); ++i) {
    if (tags[i] < 0) continue;
    try {
      answers[i] = recvKeyed(peers[i], kKindReply, tags[i], kMaxReplyBytes, d, "ask");
    } catch (const std::exception& e) {
      (*errors)[i] = e.what();
    }
  }
  return answers;
}

GroupOps::GroupOps(std::shared_ptr<MessageEndpoint> endpoint, uint64_t ns, std::vector<int> worldRanks, int myRank,
                   double timeoutSeconds, std::shared_ptr<const CancelToken> parentToken)
    : endpoint_(std::move(endpoint)),
      ns_(ns),
      worldRanks_(std::move(worldRanks)),
      rank_(myRank),
      timeout_(timeoutSeconds),
      token_(std::make_shared<CancelToken>(std::move(parentToken))) {}

void GroupOps::abort() {
  if (!token_->parent && ns_ == 0) {
    endpoint_->abort();
    return;
  }
  token_->cancelled.store(true, std::memory_order_release);
  endpoint_->wakeAll();
}

std::string GroupOps::describe(const char* op, const char* direction, int peer, int tag) const {
  std::string s = strFormat("bootstrap rank %d/%d", rank_, nRanks());
  if (ns_ != 0) s += strFormat(" (world rank %d, view %016llx)", worldRanks_[rank_], (unsigned long long)ns_);
  s += ": ";
  if (std::strcmp(op, direction) != 0) s += std::string(op) + ": ";
  s += strFormat("%s %s rank %d", direction, std::strcmp(direction, "send") == 0 ? "to" : "from", peer);
  if (tag != INT32_MIN) s += strFormat(" (tag %d)", tag);
  return s;
}

void GroupOps::checkPeer(int peer, const char* op) const {
  MSCCLPP_ENFORCE(peer >= 0 && peer < nRanks(), ErrorCode::InvalidArgument, "bootstrap rank %d/%d: %s: no rank %d",
                  rank_, nRanks(), op, peer);
}

void GroupOps::sendKeyed(int peer, uint32_t kind, int tag, const void* data, size_t size, const Deadline& deadline,
                         const char* op) {
  MessageKey key{ns_, kind, tag};
  MSCCLPP_ENFORCE(!token_->isCancelled(), ErrorCode::Aborted, "%s: the bootstrap was aborted",
                  describe(op, "send", peer, kind == kKindUser ? tag : INT32_MIN).c_str());
  endpoint_->send(worldRanks_[peer], key, data, size, deadline,
                  describe(op, "send", peer, kind == kKindUser ? tag : INT32_MIN));
}

std::vector<char> GroupOps::recvKeyed(int peer, uint32_t kind, int tag, size_t maxBytes, const Deadline& deadline,
                                      const char* op) {
  MessageKey key{ns_, kind, tag};
  return endpoint_->recv(worldRanks_[peer], key, maxBytes, deadline,
                         describe(op, "recv", peer, kind == kKindUser ? tag : INT32_MIN), token_.get());
}

void GroupOps::send(const void* data, size_t size, int peer, int tag) {
  checkPeer(peer, "send");
  sendKeyed(peer, kKindUser, tag, data, size, deadline(), "send");
}

std::vector<char> GroupOps::recv(int peer, int tag, size_t maxBytes) {
  checkPeer(peer, "recv");
  return recvKeyed(peer, kKindUser, tag, maxBytes, deadline(), "recv");
}

void GroupOps::allGather(void* allData, size_t size) {
  const int n = nRanks();
  if (n == 1 || size == 0) return;
  Deadline d = deadline();
  // Bruck: blocks are kept rotated, block i holding rank
  // (rank_ + i) % n. Every round doubles what this rank has.
  std::vector<char> buf(static_cast<size_t>(n) * size);
  char* all = static_cast<char*>(allData);
  std::memcpy(buf.data(), all + static_cast<size_t>(rank_) * size, size);
  for (int dist = 1; dist < n; dist *= 2) {
    int count = std::min(dist, n - dist);
    int to = (rank_ - dist + n) % n;
    int from = (rank_ + dist) % n;
    sendKeyed(to, kKindAllGather, 0, buf.data(), static_cast<size_t>(count) * size, d, "allGather");
    std::vector<char> got = recvKeyed(from, kKindAllGather, 0, static_cast<size_t>(count) * size, d, "allGather");
    MSCCLPP_ENFORCE(got.size() == static_cast<size_t>(count) * size, ErrorCode::RemoteError,
                    "%s: got %zu bytes, expected %zu", describe("allGather", "recv", from, INT32_MIN).c_str(),
                    got.size(), static_cast<size_t>(count) * size);
    std::memcpy(buf.data() + static_cast<size_t>(dist) * size, got.data(), got.size());
  }
  for (int i = 0; i < n; ++i) {
    std::memcpy(all + static_cast<size_t>((rank_ + i) % n) * size, buf.data() + static_cast<size_t>(i) * size, size);
  }
}

void GroupOps::broadcast(void* data, size_t size, int root) {
  checkPeer(root, "broadcast root");
  const int n = nRanks();
  if (n == 1) return;
  Deadline d = deadline();
  int vr = (rank_ - root + n) % n;
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      int parent = (vr - mask + root) % n;
      std::vector<char> got = recvKeyed(parent, kKindBroadcast, root, size, d, "broadcast");
      MSCCLPP_ENFORCE(got.size() == size, ErrorCode::RemoteError, "%s: got %zu bytes, expected %zu",
                      describe("broadcast", "recv", parent, INT32_MIN).c_str(), got.size(), size);
      if (size) std::memcpy(data, got.data(), size);
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  while (mask > 0) {
    if (vr + mask < n) sendKeyed((vr + mask + root) % n, kKindBroadcast, root, data, size, d, "broadcast");
    mask >>= 1;
  }
}

void GroupOps::barrier() {
  const int n = nRanks();
  Deadline d = deadline();
  char token = 0;
  for (int dist = 1; dist < n; dist *= 2) {
    sendKeyed((rank_ + dist) % n, kKindBarrier, dist, &token, 1, d, "barrier");
    recvKeyed((rank_ - dist + n) % n, kKindBarrier, dist, 1, d, "barrier");
  }
}

std::shared_ptr<Bootstrap> GroupOps::split(int color, int key) {
  const int n = nRanks();
  std::vector<int32_t> pairs(2 * static_cast<size_t>(n));
  pairs[2 * rank_] = color;
  pairs[2 * rank_ + 1] = key;
  allGather(pairs.data(), 2 * sizeof(int32_t));
  // split is collective, so every rank counts splits
  // alike and the child namespace agrees everywhere.
  uint64_t seq = splitCount_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (color < 0) return nullptr;
  std::vector<std::tuple<int, int>> members;  // (key, parent rank)
  for (int r = 0; r < n; ++r) {
    if (pairs[2 * r] == color) members.emplace_back(pairs[2 * r + 1], r);
  }
  std::sort(members.begin(), members.end());
  std::vector<int> world;
  int mine = -1;
  for (const auto& m : members) {
    if (std::get<1>(m) == rank_) mine = static_cast<int>(world.size());
    world.push_back(worldRanks_[std::get<1>(m)]);
  }
  uint64_t childNs = mix64(mix64(ns_, seq), static_cast<uint64_t>(static_cast<uint32_t>(color)));
  return std::make_shared<ViewBootstrap>(
      std::make_unique<GroupOps>(endpoint_, childNs, std::move(world), mine, timeoutSeconds(), token_));
}

std::shared_ptr<Bootstrap> GroupOps::withNamespace(const std::string& name) {
  uint64_t childNs = mix64(ns_ ^ 0x6e616d6573706163ull, hashString(name));
  return std::make_shared<ViewBootstrap>(
      std::make_unique<GroupOps>(endpoint_, childNs, worldRanks_, rank_, timeoutSeconds(), token_));
}

}  // namespace detail
}  // namespace mscclpp
