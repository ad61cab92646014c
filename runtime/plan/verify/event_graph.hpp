// The verifier's model of consecutive calls of a plan at one chunk size.
// Each op execution is an event, with the data it reads and writes
// and the edges the executor's synchronisation guarantees (docs/plan-verifier.md).
// A strong edge makes the earlier event's writes visible to the later one;
// an exec edge orders them in time only: relaxed signal and wait, LL packets.
#ifndef MSCCLPP_PLAN_VERIFY_EVENT_GRAPH_HPP_
#define MSCCLPP_PLAN_VERIFY_EVENT_GRAPH_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.hpp"
#include "plan/verify/call_layout.hpp"
#include "plan/verify/findings.hpp"

namespace mscclpp::plan::verify {

enum class EvKind : uint8_t {
  BlockStart,
  BlockEnd,
  Sync,           // nop, or the block-wide barrier in a memory-channel pws or pwsf
  BarrierArrive,  // barrier op: the block arrives,
  BarrierRound,   // the round completes once all arrived, on no block,
  BarrierDepart,  // and the block leaves
  Signal,         // memory-channel signal or rlxsignal; one counter per slot
  Push,           // a port-channel request: signal, put, pws, pwsf, ppkt, rppkt
  Wait,           // memory- or port-channel wait or rlxwait; one counter per slot
  FlushWait,      // flush, or pwsf's flush: done when the earlier requests of its channels are
  SemRelease,
  SemAcquire,
  Data,         // an op all threads of the block share: copies, reductions, packets, switch
  Transfer,     // a port-channel put, done by the proxy
  SignalInc,    // a port-channel signal's increment, done by the proxy
  KernelStart,  // rank-level: the launch begins, after the host's writes
  KernelEnd,    // rank-level: every block finished
  HostOut,      // the user reads the output after a call
  HostIn,       // the user writes input, maybe output, before a call
};
const char* evKindName(EvKind kind);

constexpr int32_t kAllThreads = -1;   // every thread of the block takes part
constexpr int32_t kManyThreads = -2;  // one thread per channel, semaphore or destination
constexpr uint32_t kNone = UINT32_MAX;

struct Event {
  EvKind kind = EvKind::Sync;
  uint8_t call = 0;
  bool syncPoint = false;  // a block-wide barrier: orders everything before it with everything after
  bool relaxed = false;    // rlxsignal or rlxwait
  int32_t thread = kAllThreads;
  uint32_t rank = 0;
  int32_t tb = -1;
  uint32_t block = kNone;  // global threadblock index; kNone for the proxy and rank-level nodes
  uint32_t pos = kNone;    // position in the block's sequence of this call
  uint32_t epoch = 0;      // sync points at or before pos
  uint32_t op = kNone;     // op index in the threadblock
  uint32_t iteration = kNone;
  uint32_t moveBegin = 0, moveCount = 0;
  uint32_t anchor = kNone;  // Transfer, SignalInc: the push whose request the proxy serves
};

// How an event touches a location.
enum class Access : uint8_t {
  Read,        // plain read
  PktRead,     // LL packet read: waits for this call's flag
  RawPktRead,  // the proxy forwards packet bytes as they are: port ppkt, rppkt
  Write,
  PktWrite,  // LL packets with this call's flag, or the flag a RawPktRead forwards
};
inline bool isWrite(Access a) { return a == Access::Write || a == Access::PktWrite; }

struct AccessLoc {
  Loc loc;
  Access access = Access::Read;
  bool src = true;      // src_buff or dst_buff
  uint16_t refPos = 0;  // position in its list, for messages
};

// One data movement of an event over len bytes: dsts get srcs[0],
// or all srcs reduced.
// A move without dsts only reads, as a port rppkt waits for its packets.
struct Move {
  bool reduce = false;
  uint32_t locBegin = 0;
  uint16_t nSrc = 0, nDst = 0;
  uint64_t len = 0;
};

enum class CounterKind : uint8_t { Memory, Port, Semaphore };

// A counter producers increment and consumers wait on:
// a channel's inbound semaphore,
// or a rank's semaphore of sem_acquire and sem_release.
struct Counter {
  CounterKind kind = CounterKind::Memory;
  uint32_t rank = 0;   // whose counter
  uint32_t index = 0;  // channel or semaphore index on that rank
  uint32_t init = 0;
  int32_t peer = -1;         // memory, port: the rank whose paired channel signals it
  int32_t peerChannel = -1;  // that channel's index on the peer; -1 when not declared
};

struct CounterUse {
  uint32_t event = 0;
  uint32_t counter = 0;
  bool relaxed = false;
};

struct Edge {
  uint32_t from, to;
  bool strong;
};

struct Graph {
  const Plan* plan = nullptr;
  CallLayout layout;
  int calls = 0;
  std::vector<Event> events;
  std::vector<Move> moves;
  std::vector<AccessLoc> locs;
  std::vector<Edge> edges;
  std::vector<Counter> counters;
  std::vector<CounterUse> producers, consumers;
  // Rank-level nodes, [call * nRanks + rank].
  std::vector<uint32_t> kernelStart, kernelEnd, hostIn, hostOut;
  // Events that can never complete, with why:
  // an LL packet read nothing writes.
  std::vector<std::pair<uint32_t, std::string>> blocked;
  // Global threadblock index of (rank, tb): blockBase[rank] + tb.
  std::vector<uint32_t> blockBase;
  // Counters whose waits outnumber their signals in a call, reported once.
  std::vector<uint8_t> shortCounters;

  // CSR adjacency, filled by finalize().
  std::vector<uint32_t> succBegin, succ, predBegin, pred;
  std::vector<uint8_t> succStrong, predStrong;

  uint32_t addEvent(const Event& e) {
    events.push_back(e);
    return static_cast<uint32_t>(events.size() - 1);
  }
  void addEdge(uint32_t from, uint32_t to, bool strong) { edges.push_back({from, to, strong}); }
  void finalize();
  int nRanks() const { return static_cast<int>(plan->ranks.size()); }
  // The op an event stands for.
  OpSite site(uint32_t event) const;
};

// Builds the events, moves and the edges that need no counting.
// Counters are collected; addCounterEdges adds their edges.
Graph buildGraph(const Plan& plan, const CallLayout& layout, int calls, FindingSink* sink);

// Edges from the signals every schedule completes before a wait completes,
// and findings for counts left over at the end of a call.
void addCounterEdges(Graph* g, FindingSink* sink);

// Matches each LL packet read with its call's writes;
// nothing written blocks the event.
void addPacketEdges(Graph* g, FindingSink* sink);

// Whether a precedes b in one block's program order within a call:
// a block-wide barrier lies between them, or one thread runs both.
bool programOrdered(const Event& a, const Event& b);

}  // namespace mscclpp::plan::verify

#endif  // MSCCLPP_PLAN_VERIFY_EVENT_GRAPH_HPP_
