#include "executor/call_monitor.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "core/deadline.hpp"
#include "core/format.hpp"
#include "core/logger.hpp"
#include "core/params.hpp"
#include "core/serial.hpp"
#include "mscclpp/bootstrap.hpp"
#include "mscclpp/communicator.hpp"

namespace mscclpp::exec {

namespace {

constexpr uint8_t kQueryState = 1;
constexpr uint8_t kFailNotice = 2;
constexpr int64_t kFirstRoundMs = 2000;    // a call stuck this long is looked at
constexpr int64_t kMaxRoundGapMs = 30000;  // then at doubling intervals, at most this far apart
// Once a peer left, calls are looked at this often: one that waits on it
// and stays still fails within a second, saying so.
constexpr int64_t kDepartedRoundMs = 100;
// With a failure probe: how often it is asked (a failed launch's peers wait until they are told).
constexpr int64_t kProbeMs = 50;
constexpr double kAskSeconds = 2.0;  // a live peer answers in microseconds (its helper thread)
constexpr size_t kMaxText = 4096;
constexpr size_t kMaxWaitsSent = 64;
constexpr size_t kPeersInStatus = 4;

const char* phaseName(CallMonitor::Phase p) {
  switch (p) {
    case CallMonitor::Phase::Idle:
      return "idle";
    case CallMonitor::Phase::Building:
      return "building its execution context";
    case CallMonitor::Phase::Running:
      return "running";
    case CallMonitor::Phase::Agreeing:
      return "agreeing on the plan of";
    case CallMonitor::Phase::Enqueued:
      return "running on its device";
    case CallMonitor::Phase::Replaying:
      return "in a CUDA graph's replay of";
  }
  return "?";
}

}  // namespace

struct CallMonitor::State {
  bool known = false;  // answered this round
  uint64_t seq = 0;
  uint32_t launch = 0;  // Replaying: the waiting launch's LL flag
  Phase phase = Phase::Idle;
  double seconds = 0;  // in this phase (Idle: since the last call ended; Replaying: at least)
  CallDescriptor call;
  uint64_t progress = 0;
  std::vector<BlockWait> waits;
  std::vector<std::pair<uint64_t, CallDescriptor>> recent;  // the last calls' numbers and descriptors

  bool inCall() const { return known && phase != Phase::Idle; }

  void write(ByteWriter& w) const {
    w.put<uint64_t>(seq);
    w.put<uint32_t>(launch);
    w.put<uint32_t>(static_cast<uint32_t>(phase));
    w.put<double>(seconds);
    call.write(w);
    w.put<uint64_t>(progress);
    const size_t n = std::min(waits.size(), kMaxWaitsSent);
    w.put<uint32_t>(static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) {
      w.put<int32_t>(waits[i].target);
      w.putString(waits[i].text.substr(0, kMaxText));
    }
    w.put<uint32_t>(static_cast<uint32_t>(recent.size()));
    for (const auto& [number, descriptor] : recent) {
      w.put<uint64_t>(number);
      descriptor.write(w);
    }
  }
  static State read(ByteReader& r) {
    State s;
    s.known = true;
    s.seq = r.get<uint64_t>("seq");
    s.launch = r.get<uint32_t>("launch");
    const uint32_t phase = r.get<uint32_t>("phase");
    MSCCLPP_ENFORCE(phase <= static_cast<uint32_t>(Phase::Replaying), ErrorCode::RemoteError, "%s: phase %u", r.what(),
                    phase);
    s.phase = static_cast<Phase>(phase);
    s.seconds = r.get<double>("seconds");
    s.call = CallDescriptor::read(r);
    s.progress = r.get<uint64_t>("progress");
    const uint32_t n = r.get<uint32_t>("waits");
    MSCCLPP_ENFORCE(n <= kMaxWaitsSent, ErrorCode::RemoteError, "%s: %u waits", r.what(), n);
    for (uint32_t i = 0; i < n; ++i) {
      BlockWait w;
      w.target = r.get<int32_t>("target");
      w.text = r.getString("text", kMaxText);
      s.waits.push_back(std::move(w));
    }
    const uint32_t nRecent = r.get<uint32_t>("recent calls");
    MSCCLPP_ENFORCE(nRecent <= kRecentCalls + 1, ErrorCode::RemoteError, "%s: %u recent calls", r.what(), nRecent);
    for (uint32_t i = 0; i < nRecent; ++i) {
      const uint64_t number = r.get<uint64_t>("call number");
      s.recent.emplace_back(number, CallDescriptor::read(r));
    }
    r.expectEnd();
    return s;
  }
};

CallMonitor::CallMonitor(std::shared_ptr<Communicator> comm, uint64_t index)
    : comm_(std::move(comm)), rank_(comm_->rank()), size_(comm_->size()), board_(std::make_shared<Board>()) {
  board_->comm = comm_;
  board_->rank = rank_;
  bootstrap_ = comm_->bootstrap()->withNamespace("mscclpp.executor.monitor." + std::to_string(index));
  std::weak_ptr<Board> board = board_;
  bootstrap_->serve([board](int peer, const std::vector<char>& request) {
    auto b = board.lock();
    return b ? b->answer(peer, request) : std::vector<char>();
  });
  thread_ = std::thread([this] { watch(); });
}

CallMonitor::~CallMonitor() {
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  bootstrap_->serve(nullptr);
}

void CallMonitor::agree(const CallDescriptor& call) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  ++board_->seq;
  board_->phase = Phase::Agreeing;
  board_->sinceMs = steadyMs();
  board_->call = call;
  board_->live = nullptr;
  board_->remember();
}

void CallMonitor::endAgreement() {
  std::lock_guard<std::mutex> lock(board_->mutex);
  if (board_->phase != Phase::Agreeing) return;
  board_->phase = Phase::Idle;
  board_->sinceMs = steadyMs();
}

uint64_t CallMonitor::begin(const CallDescriptor& call) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  if (board_->phase == Phase::Agreeing) {
    board_->phase = Phase::Building;  // the agreed call goes on: same number, same start
  } else {
    ++board_->seq;
    board_->phase = Phase::Building;
    board_->sinceMs = steadyMs();
  }
  board_->call = call;  // copy-assignments: no allocation once the strings' capacity suffices
  board_->live = nullptr;
  board_->remember();
  return board_->seq;
}

void CallMonitor::running(std::function<LiveCall()> live) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  board_->phase = Phase::Running;
  board_->live = std::move(live);
}

void CallMonitor::end() {
  std::lock_guard<std::mutex> lock(board_->mutex);
  board_->phase = Phase::Idle;
  board_->sinceMs = steadyMs();
  board_->live = nullptr;  // the call's context may go after this
  board_->recent[board_->seq % kRecentCalls].inFlight = false;
  board_->recent[board_->seq % kRecentCalls].live = nullptr;
}

void CallMonitor::enqueued(std::shared_ptr<const std::function<LiveCall()>> live) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  board_->phase = Phase::Idle;
  board_->sinceMs = steadyMs();
  board_->live = nullptr;
  Recent& r = board_->recent[board_->seq % kRecentCalls];
  r.inFlight = board_->completed != nullptr;
  r.live = r.inFlight ? std::move(live) : nullptr;
}

void CallMonitor::setFailureProbe(std::function<std::string()> probe) {
  {
    std::lock_guard<std::mutex> lock(board_->mutex);
    board_->failureProbe = std::move(probe);
  }
  wake_.notify_all();  // the watchdog's next wait is the probe's interval
}

void CallMonitor::failCall(ErrorCode code, const std::string& message) {
  if (comm_->failed()) return;  // the first failure stands; the peers heard of it
  failEverywhere(static_cast<int>(code), message);
}

void CallMonitor::failLaunch(const std::string& failure) {
  failCall(ErrorCode::InvalidArgument, strFormat("a launch failed on rank %d's device: %s", rank_, failure.c_str()));
}

void CallMonitor::setCompletion(std::function<bool(uint64_t seq)> completed) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  board_->completed = std::move(completed);
  if (!board_->completed) {
    for (Recent& r : board_->recent) {
      r.inFlight = false;
      r.live = nullptr;
    }
  }
}

void CallMonitor::captured(std::shared_ptr<const std::function<LiveCall()>> live) {
  std::lock_guard<std::mutex> lock(board_->mutex);
  // The call ends here, as end() ends it: one lock for both.
  board_->phase = Phase::Idle;
  board_->sinceMs = steadyMs();
  board_->live = nullptr;
  board_->recent[board_->seq % kRecentCalls].inFlight = false;
  board_->recent[board_->seq % kRecentCalls].live = nullptr;
  if (!live) return;
  std::vector<Captured>& all = board_->captured;
  // A ring: once full, the least recently captured entry is reused as the
  // newest. Its strings keep their capacity, so a steady capture allocates
  // nothing, and nothing moves.
  Captured* slot = nullptr;
  if (all.size() < kMaxCaptured) {
    slot = &all.emplace_back();
  } else {
    slot = &all[board_->capturedNext];
    board_->capturedNext = (board_->capturedNext + 1) % kMaxCaptured;
  }
  Captured& entry = *slot;
  entry.seq = board_->seq;
  entry.call = board_->call;
  entry.live = std::move(live);
  entry.launch = 0;
  entry.sinceMs = 0;
  entry.quietSinceMs = 0;
}

std::string CallMonitor::peerStatus() const {
  std::lock_guard<std::mutex> lock(watchMutex_);
  return peerStatus_;
}

void CallMonitor::Board::remember() {
  Recent& r = recent[seq % kRecentCalls];
  r.seq = seq;
  r.call = call;
  r.sinceMs = sinceMs;
  r.inFlight = false;
  r.live = nullptr;
}

CallMonitor::Captured* CallMonitor::Board::waitingReplay() {
  // A slot may show no wait for up to kRepublishWaitNs while another
  // thread's wait goes on. A replay stays the same one across such a gap.
  constexpr int64_t kQuietMs = 2 * static_cast<int64_t>(kRepublishWaitNs / 1000000);
  Captured* longest = nullptr;
  const int64_t now = steadyMs();
  // Calls captured from one context share its reader: read each once.
  struct Read {
    const std::function<LiveCall()>* source;
    LiveCall state;
  };
  std::vector<Read> read;
  auto stateOf = [&](const Captured& c) {
    for (const Read& r : read)
      if (r.source == c.live.get()) return r.state;
    read.push_back(Read{c.live.get(), (*c.live)()});
    return read.back().state;
  };
  for (Captured& c : captured) {
    // A call whose context is gone keeps its slot, emptied, for reuse.
    if (c.live && stateOf(c).gone) {
      c.live = nullptr;
      c.launch = 0;
    }
    if (!c.live) continue;
    const WaitingLaunch seen = stateOf(c).launch;
    // Its replays carry its captured tag; other launches of the context
    // are other calls.
    const uint32_t flag = seen.call == launchCallTag(c.seq, true) ? seen.flag : 0;
    if (flag != 0) {
      if (flag != c.launch) {
        c.launch = flag;
        // A wait is published after kReportWaitAfterNs: it waited that long.
        c.sinceMs = now - static_cast<int64_t>(kReportWaitAfterNs / 1000000);
      }
      c.quietSinceMs = 0;
    } else if (c.launch != 0) {
      if (c.quietSinceMs == 0) c.quietSinceMs = now;
      if (now - c.quietSinceMs > kQuietMs) c.launch = 0;
    }
    if (c.launch != 0 && (longest == nullptr || c.sinceMs < longest->sinceMs)) longest = &c;
  }
  return longest;
}

CallMonitor::Current CallMonitor::Board::current() {
  Current c;
  if (phase != Phase::Idle) {
    c.seq = seq;
    c.phase = phase;
    c.sinceMs = sinceMs;
    c.call = &call;
    return c;
  }
  for (Recent& r : recent) {
    if (!r.inFlight) continue;
    if (!completed || completed(r.seq)) {
      r.inFlight = false;
      r.live = nullptr;
      continue;
    }
    if (c.seq == 0 || r.seq < c.seq) {
      c.seq = r.seq;
      c.phase = Phase::Enqueued;
      c.sinceMs = r.sinceMs;
      c.call = &r.call;
      c.live = r.live.get();
    }
  }
  Captured* replay = captured.empty() ? nullptr : waitingReplay();
  if (replay == nullptr) return c;
  // An enqueued call whose blocks do not wait may be queued behind the
  // replay: the replay is what is stuck. It may share the replay's
  // context, so the waits it shows are its own only with its tag.
  if (c.seq != 0 && c.live != nullptr && *c.live) {
    const WaitingLaunch l = (*c.live)().launch;
    if (l.flag != 0 && l.call == launchCallTag(c.seq, false)) return c;
  }
  c.seq = replay->seq;
  c.launch = replay->launch;
  c.phase = Phase::Replaying;
  c.sinceMs = replay->sinceMs;
  c.call = &replay->call;
  c.live = replay->live.get();
  return c;
}

CallMonitor::State CallMonitor::Board::state() {
  std::lock_guard<std::mutex> lock(mutex);
  State s;
  s.known = true;
  const Current now = current();
  s.seq = now.phase == Phase::Idle ? seq : now.seq;  // idle: the number of the last call
  s.launch = now.launch;
  s.phase = now.phase;
  s.seconds = (steadyMs() - (now.phase == Phase::Idle ? sinceMs : now.sinceMs)) / 1000.0;
  s.call = now.call ? *now.call : call;
  for (const Recent& r : recent)
    if (r.seq != 0) s.recent.emplace_back(r.seq, r.call);
  // A replayed call is compared however old: its capture keeps its number
  // and descriptor.
  const bool replayKnown =
      std::any_of(s.recent.begin(), s.recent.end(), [&](const auto& e) { return e.first == now.seq; });
  if (now.phase == Phase::Replaying && !replayKnown) s.recent.emplace_back(now.seq, *now.call);
  std::sort(s.recent.begin(), s.recent.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (phase == Phase::Running && live) {
    LiveCall now = live();
    s.waits = std::move(now.waits);
    s.progress = now.progress;
  } else if ((now.phase == Phase::Enqueued || now.phase == Phase::Replaying) && now.live && *now.live) {
    LiveCall running = (*now.live)();
    s.waits = std::move(running.waits);
    s.progress = running.progress;
  } else if (phase == Phase::Building || phase == Phase::Agreeing) {
    // A build's exchange or an agreement may wait for any rank.
    BlockWait w;
    w.target = BlockWait::kAnyPeer;
    w.text = strFormat(phase == Phase::Building
                           ? "rank %d builds the execution context of call #%llu (an exchange with every rank)"
                           : "rank %d agrees with every rank on the plan of call #%llu",
                       rank, static_cast<unsigned long long>(seq));
    s.waits.push_back(std::move(w));
    s.progress = seq;
  }
  return s;
}

std::vector<char> CallMonitor::Board::answer(int peer, const std::vector<char>& request) {
  ByteReader r(request, "call monitor request");
  const uint8_t kind = r.get<uint8_t>("kind");
  if (kind == kFailNotice) {
    const int32_t code = r.get<int32_t>("code");
    std::string message = r.getString("message", 1 << 15);
    comm->fail(static_cast<ErrorCode>(code),
               strFormat("communicator rank %d/%d: %s (found by rank %d)", rank, comm->size(), message.c_str(), peer));
    return {};
  }
  ByteWriter w;
  state().write(w);
  return std::move(w.bytes());
}

void CallMonitor::watch() {
  ScopedLogRank logRank(rank_);
  std::unique_lock<std::mutex> lock(watchMutex_);
  uint64_t watched = 0;        // the call whose rounds are scheduled
  uint32_t watchedLaunch = 0;  // and its launch, when a replay
  int64_t nextRoundMs = kFirstRoundMs;
  int64_t nextWarnMs = 0;     // of an enqueued call: its next long-wait WARN (0: none)
  int64_t lastRoundAtMs = 0;  // steady ms of the last round
  while (!stopping_) {
    const bool departures = comm_->departed();
    bool probing = false;
    {
      std::lock_guard<std::mutex> board(board_->mutex);
      probing = board_->failureProbe != nullptr;
    }
    wake_.wait_for(lock, std::chrono::milliseconds(departures ? 25 : probing ? kProbeMs : 250));
    if (stopping_) break;
    if (probing && !comm_->failed()) {
      std::string failure;
      {
        std::lock_guard<std::mutex> board(board_->mutex);
        if (board_->failureProbe) failure = board_->failureProbe();
      }
      if (!failure.empty()) {
        lock.unlock();  // failLaunch talks to peers
        failLaunch(failure);
        lock.lock();
        continue;
      }
    }
    uint64_t seq;
    uint32_t launch;
    Phase phase;
    int64_t callMs;
    {
      std::lock_guard<std::mutex> board(board_->mutex);
      const Current now = board_->current();
      seq = now.seq;
      launch = now.launch;
      phase = now.phase;
      callMs = steadyMs() - now.sinceMs;
    }
    if (phase == Phase::Idle || comm_->failed()) {
      previous_.clear();
      continue;
    }
    if (seq != watched || launch != watchedLaunch) {
      watched = seq;
      watchedLaunch = launch;
      nextRoundMs = kFirstRoundMs;
      peerStatus_.clear();  // an earlier call's
      const double warnSeconds = params::waitWarnSeconds();
      nextWarnMs = warnSeconds > 0 ? std::max<int64_t>(1, static_cast<int64_t>(warnSeconds * 1000)) : 0;
      previous_.clear();
    }
    // A peer left: waits on it never end. Look often, to tell them from waits on live peers.
    const bool departedRound =
        departures && callMs >= kDepartedRoundMs && steadyMs() - lastRoundAtMs >= kDepartedRoundMs;
    const bool roundDue = callMs >= nextRoundMs || departedRound;
    const bool onDevice = phase == Phase::Enqueued || phase == Phase::Replaying;
    const bool warnDue = onDevice && nextWarnMs > 0 && callMs >= nextWarnMs;
    if (!roundDue && !warnDue) continue;
    if (callMs >= nextRoundMs) nextRoundMs = std::min(2 * nextRoundMs, nextRoundMs + kMaxRoundGapMs);
    if (roundDue) lastRoundAtMs = steadyMs();
    lock.unlock();
    try {
      if (roundDue) round(seq, launch);  // first: the WARN says what the peers were doing at this round
    } catch (const std::exception& e) {
      MSCCLPP_WARN(LogExec, "call monitor of rank %d: %s", rank_, e.what());
    }
    // An enqueued call's host does not wait, so this thread says what the
    // device waits for. The CPU backend's waiting thread prints its own.
    if (warnDue && !comm_->failed()) warnLongWait(seq, launch, callMs);
    lock.lock();
    if (warnDue) {
      const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(params::waitWarnSeconds() * 1000));
      while (nextWarnMs <= callMs) nextWarnMs += every;
    }
  }
}

void CallMonitor::warnLongWait(uint64_t seq, uint32_t launch, int64_t callMs) {
  std::string plan;
  LiveCall live;
  bool replay = false;
  {
    std::lock_guard<std::mutex> lock(board_->mutex);  // keeps the call's live source valid while read
    const Current now = board_->current();
    replay = now.phase == Phase::Replaying;
    if (now.seq != seq || now.launch != launch || (now.phase != Phase::Enqueued && !replay))
      return;  // it completed meanwhile
    plan = now.call ? now.call->plan : std::string();
    if (now.live && *now.live) live = (*now.live)();
  }
  const std::string what = summarizeWaits(live.waits);
  const std::string peers = peerStatus();
  MSCCLPP_WARN(LogExec,
               "plan %s rank %d: call #%llu%s has waited %s%.3g s on its device (MSCCLPP_WAIT_WARN_S=%.3g; no "
               "deadline unless MSCCLPP_TIMEOUT_S sets one): %s%s%s",
               plan.c_str(), rank_, static_cast<unsigned long long>(seq),
               replay ? " (captured into a CUDA graph, replayed)" : "", replay ? "at least " : "", callMs / 1000.0,
               params::waitWarnSeconds(), what.empty() ? "its threadblocks are finishing" : what.c_str(),
               peers.empty() ? "" : "; ", peers.c_str());
}

void CallMonitor::round(uint64_t seq, uint32_t launch) {
  std::vector<State> cur(static_cast<size_t>(size_));
  ByteWriter query;
  query.put<uint8_t>(kQueryState);
  // Every peer is asked at once: a round costs one round trip, not one per peer.
  std::vector<int> peers;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) peers.push_back(p);
  std::vector<std::string> errors;
  const std::vector<std::vector<char>> replies = bootstrap_->askEach(peers, query.bytes(), kAskSeconds, &errors);
  for (size_t i = 0; i < peers.size(); ++i) {
    // Failed, unreachable or without an executor yet: unknown this round.
    // The bootstrap fails the communicator for a dead peer.
    if (!errors[i].empty()) continue;
    try {
      ByteReader r(replies[i], "call monitor answer");
      cur[peers[i]] = State::read(r);
    } catch (const std::exception&) {
    }
  }
  cur[rank_] = board_->state();
  const State& mine = cur[rank_];
  if (mine.seq != seq || mine.launch != launch || !mine.inCall()) return;  // the call ended meanwhile

  // Same call number, different calls. Recent calls count too: hosts may
  // have moved on while their devices wait on each other.
  for (int p = 0; p < size_; ++p) {
    const State& s = cur[p];
    if (p == rank_ || !s.known) continue;
    for (const auto& [number, theirs] : s.recent) {
      auto it =
          std::find_if(mine.recent.begin(), mine.recent.end(), [n = number](const auto& e) { return e.first == n; });
      if (it == mine.recent.end() || sameCall(it->second, theirs)) continue;
      return failEverywhere(
          static_cast<int>(ErrorCode::InvalidUsage),
          strFormat("mismatched calls: call #%llu on this communicator is %s on rank %d but %s on rank %d (every rank "
                    "must make the same collective calls, with the same counts, datatype, reduce op and root, in the "
                    "same order)",
                    static_cast<unsigned long long>(number), it->second.describe().c_str(), rank_,
                    theirs.describe().c_str(), p));
    }
  }

  // One rank agrees on the plan of a call its peer already runs, seen
  // twice: their registries changed at different points, and the
  // agreement can never complete.
  std::string registriesDiffer;
  {
    std::lock_guard<std::mutex> lock(watchMutex_);
    for (int p = 0; p < size_ && previous_.size() == cur.size() && previousSeq_ == seq; ++p) {
      const State &s = cur[p], &was = previous_[p];
      if (p == rank_ || !s.inCall() || s.seq != mine.seq || !was.inCall() || was.seq != s.seq) continue;
      const bool meAgreeing = mine.phase == Phase::Agreeing && previous_[rank_].phase == Phase::Agreeing;
      const bool peerAgreeing = s.phase == Phase::Agreeing && was.phase == Phase::Agreeing;
      if (meAgreeing == peerAgreeing) continue;
      const int agreeing = meAgreeing ? rank_ : p, running = meAgreeing ? p : rank_;
      registriesDiffer = strFormat(
          "rank %d is agreeing on the plan of call #%llu (%s) which rank %d already runs (%s): their plan registries "
          "changed at different points of their calls (register and unregister plans, and set selectors, at the same "
          "point of every rank's sequence of calls; docs/nccl-shim.md)",
          agreeing, static_cast<unsigned long long>(mine.seq), cur[agreeing].call.describe().c_str(), running,
          cur[running].call.describe().c_str());
      previous_.clear();
      break;
    }
  }
  if (!registriesDiffer.empty()) return failEverywhere(static_cast<int>(ErrorCode::InvalidUsage), registriesDiffer);

  // A deadlock: ranks in calls, frozen since the last round, whose every
  // block waits on a rank of the set. An LL packet wait waits on all of it.
  // Shrink the candidates to a fixed point.
  std::unique_lock<std::mutex> lock(watchMutex_);
  if (previous_.size() == cur.size() && previousSeq_ == seq) {
    std::set<int> stuck;
    for (int r = 0; r < size_; ++r) {
      const State &a = cur[r], &b = previous_[r];
      bool frozen = a.inCall() && b.inCall() && a.seq == b.seq && a.launch == b.launch && a.phase == b.phase &&
                    a.progress == b.progress && !a.waits.empty();
      for (const BlockWait& w : a.waits) frozen = frozen && w.target != BlockWait::kBusy;
      // A rank that left never moves again.
      if (frozen || comm_->hasDeparted(r)) stuck.insert(r);
    }
    // A rank done with this call, or gone, writes nothing more for it.
    auto cannotHelp = [&](int r) {
      const State& s = cur[r];
      return comm_->hasDeparted(r) ||
             (s.known && r != rank_ && (s.seq > mine.seq || (s.phase == Phase::Idle && s.seq >= mine.seq)));
    };
    for (bool changed = true; changed && !stuck.empty();) {
      changed = false;
      for (auto it = stuck.begin(); it != stuck.end();) {
        bool anyHeld = true;  // a wait on several ranks: every other rank is stuck or cannot help
        for (int r = 0; r < size_ && anyHeld; ++r) anyHeld = stuck.count(r) != 0 || cannotHelp(r);
        bool held = true;
        for (const BlockWait& w : cur[*it].waits) {
          held = held && (w.target == BlockWait::kAnyPeer ? anyHeld : stuck.count(w.target) != 0);
        }
        if (held) {
          ++it;
        } else {
          it = stuck.erase(it);
          changed = true;
        }
      }
    }
    // Stuck on ranks that left: the call can never complete. The first
    // to leave is named; the others may have left because of it.
    const std::vector<int> gone = comm_->departedRanks();
    if (stuck.count(rank_) && !gone.empty()) {
      previous_.clear();
      lock.unlock();
      return comm_->failForDeparture(gone.front());
    }
    if (!stuck.empty() && stuck.count(rank_)) {
      std::string picture, cycle;
      for (int r : stuck) {
        picture += strFormat("; rank %d in %scall #%llu (%s):", r,
                             cur[r].phase == Phase::Replaying ? "a CUDA graph's replay of " : "",
                             static_cast<unsigned long long>(cur[r].seq), cur[r].call.describe().c_str());
        for (const BlockWait& w : cur[r].waits) picture += " " + w.text + ";";
        picture.pop_back();
      }
      // Follow each rank's first wait on another rank of the set, from the
      // lowest, until one repeats. A wait on any peer is an edge to the
      // other rank of a pair; among more ranks the path stops there.
      std::vector<int> path;
      int at = *stuck.begin();
      while (std::find(path.begin(), path.end(), at) == path.end()) {
        path.push_back(at);
        int next = at;
        bool anyPeer = false;
        for (const BlockWait& w : cur[at].waits) {
          anyPeer = anyPeer || w.target == BlockWait::kAnyPeer;
          if (w.target >= 0 && w.target != at && stuck.count(w.target)) {
            next = w.target;
            break;
          }
        }
        if (next == at && anyPeer && stuck.size() == 2) next = at == *stuck.begin() ? *stuck.rbegin() : *stuck.begin();
        if (next == at) break;
        at = next;
      }
      for (size_t i = 0; i < path.size(); ++i) cycle += strFormat("%srank %d", i ? " -> " : "", path[i]);
      if (path.size() > 1) cycle += strFormat(" -> rank %d", at);
      std::string ranks;
      for (int r : stuck) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      previous_.clear();
      peerStatus_.clear();
      lock.unlock();  // failEverywhere talks to peers
      return failEverywhere(
          static_cast<int>(ErrorCode::InternalError),
          strFormat("deadlock with every rank alive: ranks %s wait only on each other and nothing moved between two "
                    "looks (the call began %.3g s ago); wait-for cycle %s%s",
                    ranks.c_str(), std::max(0.0, mine.seconds), cycle.c_str(), picture.c_str()));
    }
  }
  previous_ = cur;
  previousSeq_ = seq;
  // For the long-wait WARN: the peers not in this call, or silent.
  std::string status;
  size_t listed = 0, inThisCall = 0;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    const State& s = cur[p];
    if (s.inCall() && s.seq == mine.seq) {
      ++inThisCall;
      continue;
    }
    if (listed++ >= kPeersInStatus) continue;
    if (!s.known) {
      status += strFormat("%srank %d did not answer", status.empty() ? "" : "; ", p);
    } else if (s.phase == Phase::Idle) {
      status += strFormat("%srank %d is not in a call (%.3g s since its call #%llu ended)", status.empty() ? "" : "; ",
                          p, s.seconds, static_cast<unsigned long long>(s.seq));
    } else {
      status += strFormat("%srank %d is %s call #%llu", status.empty() ? "" : "; ", p, phaseName(s.phase),
                          static_cast<unsigned long long>(s.seq));
    }
  }
  if (listed > kPeersInStatus) status += strFormat("; and %zu more", listed - kPeersInStatus);
  status += strFormat("%s%zu of %d peers are in call #%llu", status.empty() ? "" : "; ", inThisCall, size_ - 1,
                      static_cast<unsigned long long>(mine.seq));
  peerStatus_ = status;
}

void CallMonitor::failEverywhere(int code, const std::string& message) {
  comm_->fail(static_cast<ErrorCode>(code), strFormat("communicator rank %d/%d: %s", rank_, size_, message.c_str()));
  ByteWriter notice;
  notice.put<uint8_t>(kFailNotice);
  notice.put<int32_t>(code);
  notice.putString(message.substr(0, 1 << 15));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    try {
      bootstrap_->ask(p, notice.bytes(), kAskSeconds);
    } catch (const std::exception&) {
      // A peer that cannot be told finds it itself (its own rounds) or is gone.
    }
  }
}

}  // namespace mscclpp::exec
