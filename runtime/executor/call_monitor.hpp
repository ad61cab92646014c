// The call monitor of an Executor on a Communicator (CPU backend; docs/executor.md "Stuck calls").
// Nothing on the hot path but a few stores per call: the executor tells the monitor when a call
// starts (its sequence number on this communicator and its CallDescriptor), when it runs (a
// function reading its live state) and when it ends. A watchdog thread looks at the call in
// progress and, once it has waited for 2 s, asks every peer what it is doing (Bootstrap::ask: the
// peer's bootstrap helper thread answers, whatever its application does): idle (since when), or in
// which call, and what each of its unfinished threadblocks waits for. From the answers:
//   * a peer in the same call (same sequence number) with another descriptor: mismatched calls.
//     The communicator fails with InvalidUsage naming both ranks' calls; every rank is told.
//   * a set of ranks in calls whose every unfinished block waits on a rank of the set (LL packets:
//     on every other rank of it), nothing moving between two rounds (op indexes, counters, proxy
//     positions): a deadlock with every rank alive. The communicator fails with InternalError, the
//     wait-for picture of each rank and the cycle; every rank is told.
//   * a rank still agreeing on the plan of a call (the NCCL shim) that a peer already runs, in two
//     rounds: their plan registries changed at different points (InvalidUsage, saying so).
//   * otherwise (a peer idle, late, or working) nothing fails: the long-wait WARN says what the
//     peers do (peerStatus()).
// Rounds run 2 s into a call, then at doubling intervals up to 30 s: a peer that is minutes late
// costs a few small messages.
//
// Thread-safety: begin/running/end from the executor's thread; everything else from any thread.
#ifndef MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_
#define MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/call_descriptor.hpp"
#include "executor/diagnostics.hpp"

namespace mscclpp {
class Bootstrap;
class Communicator;
}  // namespace mscclpp

namespace mscclpp::exec {

// What a running call reports (CpuContext::liveCall).
struct LiveCall {
  std::vector<BlockWait> waits;
  uint64_t progress = 0;  // changes whenever anything of the call moves
};

class CallMonitor {
 public:
  enum class Phase : uint32_t { Idle = 0, Building = 1, Running = 2, Agreeing = 3 };

  // Serves its peers' questions on a bootstrap view of its own (`index`: the executor's creation
  // order on this communicator, the same on every rank) and starts the watchdog thread.
  CallMonitor(std::shared_ptr<Communicator> comm, uint64_t index);
  ~CallMonitor();
  CallMonitor(const CallMonitor&) = delete;
  CallMonitor& operator=(const CallMonitor&) = delete;

  // A caller agrees with its peers on the plan of the next call (the NCCL shim): the call starts here.
  void agree(const CallDescriptor& call);
  // The agreement ended without a plan call (the real NCCL runs it); nothing when not agreeing.
  void endAgreement();
  // A call starts, or the agreed one goes on (its context may still have to be built: a collective
  // exchange).
  void begin(const CallDescriptor& call);
  // Its launch runs: `live` reads its state (called on other threads until end()).
  void running(std::function<LiveCall()> live);
  void end();

  // For the long-wait WARN: what the peers were doing at the last round ("" before any).
  std::string peerStatus() const;

 private:
  struct State;
  // What the bootstrap's helper thread reads to answer peers; shared with the handler, which may
  // run a moment after the monitor is gone.
  struct Board {
    std::shared_ptr<Communicator> comm;
    int rank = 0;
    std::mutex mutex;  // guards the fields below (and keeps a running call's context alive while read)
    uint64_t seq = 0;  // calls begun on this monitor
    Phase phase = Phase::Idle;
    int64_t sinceMs = 0;  // phase start
    CallDescriptor call;
    std::function<LiveCall()> live;
    State state();
    std::vector<char> answer(int peer, const std::vector<char>& request);
  };

  void watch();
  void round(uint64_t seq);
  // Fails the communicator and tells every peer.
  void failEverywhere(int code, const std::string& message);

  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<Bootstrap> bootstrap_;
  int rank_ = 0;
  int size_ = 0;
  std::shared_ptr<Board> board_;

  mutable std::mutex watchMutex_;  // guards everything below
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<State> previous_;  // the last round's states, by rank
  uint64_t previousSeq_ = 0;
  std::string peerStatus_;
  std::thread thread_;
};

}  // namespace mscclpp::exec

#endif  // MSCCLPP_EXECUTOR_CALL_MONITOR_HPP_
