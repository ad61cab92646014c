// The collectives and views every bootstrap shares, built on
// a MessageEndpoint: allGather (Bruck, ceil(log2 n) rounds),
// broadcast (binomial tree), barrier (dissemination), and
// split and named views, each with its own namespace.
#ifndef MSCCLPP_BOOTSTRAP_GROUP_OPS_HPP_
#define MSCCLPP_BOOTSTRAP_GROUP_OPS_HPP_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/message_endpoint.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp::detail {

// One rank's view of a group of world ranks.
// Thread-safety is Bootstrap's (mscclpp/bootstrap.hpp).
class GroupOps {
 public:
  // worldRanks[i] is the endpoint rank of view rank i;
  // myRank is this rank's index in it. parentToken: the
  // parent view's token; null for a world's own view.
  GroupOps(std::shared_ptr<MessageEndpoint> endpoint, uint64_t ns, std::vector<int> worldRanks, int myRank,
           double timeoutSeconds, std::shared_ptr<const CancelToken> parentToken);

  int rank() const { return rank_; }
  int nRanks() const { return static_cast<int>(worldRanks_.size()); }
  void send(const void* data, size_t size, int peer, int tag);
  std::vector<char> recv(int peer, int tag, size_t maxBytes);
  void allGather(void* allData, size_t size);
  void broadcast(void* data, size_t size, int root);
  void barrier();
  std::shared_ptr<Bootstrap> split(int color, int key);
  std::shared_ptr<Bootstrap> withNamespace(const std::string& name);
  // The world's own view aborts the endpoint and its connections. A
  // derived view cancels only its own calls and its descendants'.
  void abort();
  double timeoutSeconds() const { return timeout_.load(std::memory_order_relaxed); }
  void setTimeout(double seconds) { timeout_.store(seconds, std::memory_order_relaxed); }
  // Bootstrap's failure listeners and requests, in this view's rank numbers.
  uint64_t addPeerFailureListener(Bootstrap::PeerFailureListener listener);
  void removePeerFailureListener(uint64_t id);
  void serve(Bootstrap::RequestHandler handler);
  std::vector<char> ask(int peer, const std::vector<char>& request, double timeoutSeconds);
  std::vector<std::vector<char>> askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                         double timeoutSeconds, std::vector<std::string>* errors);

 private:
  Deadline deadline() const { return Deadline(timeoutSeconds()); }
  void checkPeer(int peer, const char* op) const;
  std::string describe(const char* op, const char* direction, int peer, int tag) const;
  void sendKeyed(int peer, uint32_t kind, int tag, const void* data, size_t size, const Deadline& deadline,
                 const char* op);
  std::vector<char> recvKeyed(int peer, uint32_t kind, int tag, size_t maxBytes, const Deadline& deadline,
                              const char* op);

  std::shared_ptr<MessageEndpoint> endpoint_;
  uint64_t ns_;
  std::vector<int> worldRanks_;
  int rank_;
  std::atomic<double> timeout_;
  std::atomic<uint64_t> splitCount_{0};
  std::atomic<int32_t> askCount_{0};  // the tag of the next request: replies match it
  std::shared_ptr<CancelToken> token_;
};

// A Bootstrap over a GroupOps: what split() and withNamespace() return.
class ViewBootstrap : public Bootstrap {
 public:
  explicit ViewBootstrap(std::unique_ptr<GroupOps> ops) : ops_(std::move(ops)) {}
  int getRank() const override { return ops_->rank(); }
  int getNranks() const override { return ops_->nRanks(); }
  void send(const void* data, size_t size, int peer, int tag) override { ops_->send(data, size, peer, tag); }
  std::vector<char> recv(int peer, int tag, size_t maxBytes) override { return ops_->recv(peer, tag, maxBytes); }
  using Bootstrap::recv;
  using Bootstrap::send;
  void allGather(void* allData, size_t size) override { ops_->allGather(allData, size); }
  void broadcast(void* data, size_t size, int root) override { ops_->broadcast(data, size, root); }
  void barrier() override { ops_->barrier(); }
  std::shared_ptr<Bootstrap> split(int color, int key) override { return ops_->split(color, key); }
  std::shared_ptr<Bootstrap> withNamespace(const std::string& name) override { return ops_->withNamespace(name); }
  void abort() override { ops_->abort(); }
  double timeoutSeconds() const override { return ops_->timeoutSeconds(); }
  void setTimeout(double seconds) override { ops_->setTimeout(seconds); }
  uint64_t addPeerFailureListener(PeerFailureListener listener) override {
    return ops_->addPeerFailureListener(std::move(listener));
  }
  void removePeerFailureListener(uint64_t id) override { ops_->removePeerFailureListener(id); }
  void serve(RequestHandler handler) override { ops_->serve(std::move(handler)); }
  std::vector<char> ask(int peer, const std::vector<char>& request, double timeoutSeconds) override {
    return ops_->ask(peer, request, timeoutSeconds);
  }
  std::vector<std::vector<char>> askEach(const std::vector<int>& peers, const std::vector<char>& request,
                                         double timeoutSeconds, std::vector<std::string>* errors) override {
    return ops_->askEach(peers, request, timeoutSeconds, errors);
  }

 private:
  std::unique_ptr<GroupOps> ops_;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_GROUP_OPS_HPP_
