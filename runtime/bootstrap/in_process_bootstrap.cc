// InProcessBootstrap: ranks as threads of one process. The
// sending thread fills the receiver's mailbox directly.
#include <map>
#include <memory>
#include <mutex>

#include "bootstrap/group_ops.hpp"
#include "bootstrap/message_endpoint.hpp"
#include "core/enforce.hpp"
#include "core/params.hpp"
#include "core/visibility.hpp"
#include "mscclpp/bootstrap.hpp"

namespace mscclpp {

struct InProcessBootstrap::Group {
  explicit Group(int n) : handlers(static_cast<size_t>(n)) {
    for (int r = 0; r < n; ++r) {
      boxes.push_back(std::make_unique<detail::Mailbox>(n));
      failures.push_back(std::make_unique<detail::PeerFailures>(n));
    }
  }
  std::vector<std::unique_ptr<detail::Mailbox>> boxes;
  std::vector<std::unique_ptr<detail::PeerFailures>> failures;  // what each rank knows
  // Each rank's request handlers by namespace; a request
  // runs its peer's handler on the asking thread.
  std::mutex handlersMutex;
  std::vector<std::map<uint64_t, std::shared_ptr<const detail::RequestHandler>>> handlers;
};

namespace {

class InProcessEndpoint : public detail::MessageEndpoint {
 public:
  InProcessEndpoint(std::shared_ptr<InProcessBootstrap::Group> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  // A rank that goes on purpose has left: its peers' communicators fail
  // once they need it, as with the TCP bootstrap's goodbye.
  ~InProcessEndpoint() override {
    leave("destroyed its bootstrap");
    if (group_->boxes[rank_]->aborted()) return;  // abort() reported a failure already
    for (int r = 0; r < nRanks(); ++r) {
      if (r != rank_) {
        group_->failures[r]->report(rank_, "rank " + std::to_string(rank_) + " destroyed its in-process bootstrap",
                                    /*left=*/true);
      }
    }
  }

  int rank() const override { return rank_; }
  int nRanks() const override { return static_cast<int>(group_->boxes.size()); }

  void send(int peer, const detail::MessageKey& key, const void* data, size_t size, const Deadline&,
            const std::string& what) override {
    MSCCLPP_ENFORCE(!group_->boxes[rank_]->aborted(), ErrorCode::Aborted, "%s: the bootstrap was aborted",
                    what.c_str());
    const char* p = static_cast<const char*>(data);
    if (key.kind == detail::kKindRequest) return answer(peer, key, std::vector<char>(p, p + size));
    group_->boxes[peer]->deliver(rank_, key, std::vector<char>(p, p + size));
  }

  detail::PeerFailures& failures() override { return *group_->failures[rank_]; }

  void setRequestHandler(uint64_t ns, detail::RequestHandler handler) override {
    std::lock_guard<std::mutex> lock(group_->handlersMutex);
    if (handler) {
      group_->handlers[rank_][ns] = std::make_shared<const detail::RequestHandler>(std::move(handler));
    } else {
      group_->handlers[rank_].erase(ns);
    }
  }

  std::vector<char> recv(int peer, const detail::MessageKey& key, size_t maxBytes, const Deadline& deadline,
                         const std::string& what, const detail::CancelToken* token) override {
    return group_->boxes[rank_]->take(peer, key, maxBytes, deadline, what, token);
  }

  void wakeAll() override { group_->boxes[rank_]->wakeAll(); }

  void abort() override {
    group_->boxes[rank_]->abort("the bootstrap was aborted");
    leave("aborted");
    // For its peers an aborted rank has failed, as a crashed process would have.
    for (int r = 0; r < nRanks(); ++r) {
      if (r != rank_) {
        group_->failures[r]->report(
            rank_, "rank " + std::to_string(rank_) + " aborted its in-process bootstrap (it stands for a crash)");
      }
    }
  }

 private:
  // The peer's handler answers on this thread; the
  // answer waits in our mailbox like a message.
  void answer(int peer, const detail::MessageKey& key, const std::vector<char>& request) {
    if (failures().failed(peer)) MSCCLPP_THROW(ErrorCode::RemoteError, "%s", failures().reason(peer).c_str());
    std::shared_ptr<const detail::RequestHandler> handler;
    {
      std::lock_guard<std::mutex> lock(group_->handlersMutex);
      auto it = group_->handlers[peer].find(key.ns);
      if (it != group_->handlers[peer].end()) handler = it->second;
    }
    std::vector<char> reply;
    if (handler) reply = (*handler)(rank_, request);
    group_->boxes[rank_]->deliver(peer, detail::MessageKey{key.ns, detail::kKindReply, key.tag}, std::move(reply));
  }

  void leave(const char* how) {
    for (int r = 0; r < nRanks(); ++r) {
      if (r != rank_) group_->boxes[r]->markPeerGone(rank_, "rank " + std::to_string(rank_) + " " + how);
    }
  }

  std::shared_ptr<InProcessBootstrap::Group> group_;
  int rank_;
};

}  // namespace

struct MSCCLPP_INTERNAL InProcessBootstrap::Impl {
  std::unique_ptr<detail::GroupOps> ops;
};

std::shared_ptr<InProcessBootstrap::Group> InProcessBootstrap::createGroup(int nRanks) {
  MSCCLPP_ENFORCE(nRanks > 0, ErrorCode::InvalidArgument, "InProcessBootstrap::createGroup: nRanks=%d must be > 0",
                  nRanks);
  return std::make_shared<Group>(nRanks);
}

InProcessBootstrap::InProcessBootstrap(std::shared_ptr<Group> group, int rank) : pimpl_(std::make_unique<Impl>()) {
  MSCCLPP_ENFORCE(group != nullptr, ErrorCode::InvalidArgument, "InProcessBootstrap: null group");
  int n = static_cast<int>(group->boxes.size());
  MSCCLPP_ENFORCE(rank >= 0 && rank < n, ErrorCode::InvalidArgument, "InProcessBootstrap: rank %d not in [0, %d)", rank,
                  n);
  std::vector<int> world(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) world[r] = r;
  pimpl_->ops = std::make_unique<detail::GroupOps>(std::make_shared<InProcessEndpoint>(std::move(group), rank), 0,
                                                   std::move(world), rank, params::timeoutSeconds(), nullptr);
}

InProcessBootstrap::~InProcessBootstrap() = default;

int InProcessBootstrap::getRank() const { return pimpl_->ops->rank(); }
int InProcessBootstrap::getNranks() const { return pimpl_->ops->nRanks(); }
void InProcessBootstrap::send(const void* data, size_t size, int peer, int tag) {
  pimpl_->ops->send(data, size, peer, tag);
}
std::vector<char> InProcessBootstrap::recv(int peer, int tag, size_t maxBytes) {
  return pimpl_->ops->recv(peer, tag, maxBytes);
}
void InProcessBootstrap::allGather(void* allData, size_t size) { pimpl_->ops->allGather(allData, size); }
void InProcessBootstrap::broadcast(void* data, size_t size, int root) { pimpl_->ops->broadcast(data, size, root); }
void InProcessBootstrap::barrier() { pimpl_->ops->barrier(); }
std::shared_ptr<Bootstrap> InProcessBootstrap::split(int color, int key) { return pimpl_->ops->split(color, key); }
std::shared_ptr<Bootstrap> InProcessBootstrap::withNamespace(const std::string& name) {
  return pimpl_->ops->withNamespace(name);
}
void InProcessBootstrap::abort() { pimpl_->ops->abort(); }
uint64_t InProcessBootstrap::addPeerFailureListener(PeerFailureListener listener) {
  return pimpl_->ops->addPeerFailureListener(std::move(listener));
}
void InProcessBootstrap::removePeerFailureListener(uint64_t id) { pimpl_->ops->removePeerFailureListener(id); }
void InProcessBootstrap::serve(RequestHandler handler) { pimpl_->ops->serve(std::move(handler)); }
std::vector<char> InProcessBootstrap::ask(int peer, const std::vector<char>& request, double timeoutSeconds) {
  return pimpl_->ops->ask(peer, request, timeoutSeconds);
}
std::vector<std::vector<char>> InProcessBootstrap::askEach(const std::vector<int>& peers,
                                                           const std::vector<char>& request, double timeoutSeconds,
                                                           std::vector<std::string>* errors) {
  return pimpl_->ops->askEach(peers, request, timeoutSeconds, errors);
}
double InProcessBootstrap::timeoutSeconds() const { return pimpl_->ops->timeoutSeconds(); }
void InProcessBootstrap::setTimeout(double seconds) { pimpl_->ops->setTimeout(seconds); }

}  // namespace mscclpp
