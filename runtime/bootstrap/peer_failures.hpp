// What one rank's endpoint knows about failed peers (world ranks): a peer whose process died (its
// connections closed without a goodbye) or whose host stopped answering (no heartbeat), with the
// reason, and the listeners to tell. A failure is reported once per rank; a listener added later is
// told about the failures already known, so nothing is missed between a communicator's creation and
// its subscription.
//
// Thread-safety: every member may be called from any thread. Listeners run on the reporting thread
// (the bootstrap's progress thread, or the thread that aborted an in-process rank), outside the lock:
// they must return quickly and must not call back into the bootstrap. remove() waits for the calls of
// the listener running on other threads: after it returns, the listener is not running and never
// will be, so its owner may go (a listener that kept its owner alive would otherwise destroy it on
// the reporting thread, the bootstrap with it).
#ifndef MSCCLPP_BOOTSTRAP_PEER_FAILURES_HPP_
#define MSCCLPP_BOOTSTRAP_PEER_FAILURES_HPP_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mscclpp::detail {

class PeerFailures {
 public:
  using Listener = std::function<void(int worldRank, const std::string& reason)>;

  explicit PeerFailures(int nRanks) : reasons_(static_cast<size_t>(nRanks)) {}

  // Records that worldRank failed; true (and every listener told) the first time only.
  bool report(int worldRank, const std::string& reason);
  bool failed(int worldRank) const;
  std::string reason(int worldRank) const;

  // Returns an id for remove(); the listener hears about earlier failures before this returns.
  uint64_t add(Listener listener);
  void remove(uint64_t id);

 private:
  // Calls listener `id` (unless removed meanwhile) on this thread, counted in running_.
  void call(uint64_t id, const std::shared_ptr<const Listener>& listener, int worldRank, const std::string& reason);

  mutable std::mutex mutex_;
  std::vector<std::string> reasons_;  // "" while the rank is fine
  std::map<uint64_t, std::shared_ptr<const Listener>> listeners_;
  std::multiset<std::pair<uint64_t, std::thread::id>> running_;  // listener calls in progress, and their threads
  std::condition_variable callEnded_;
  uint64_t nextId_ = 1;
};

}  // namespace mscclpp::detail

#endif  // MSCCLPP_BOOTSTRAP_PEER_FAILURES_HPP_
