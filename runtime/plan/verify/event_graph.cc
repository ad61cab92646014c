#include "plan/verify/event_graph.hpp"

#include <algorithm>
#include <map>

#include "core/format.hpp"

namespace mscclpp::plan::verify {

const char* evKindName(EvKind kind) {
  switch (kind) {
    case EvKind::BlockStart:
      return "block start";
    case EvKind::BlockEnd:
      return "block end";
    case EvKind::Sync:
      return "sync";
    case EvKind::BarrierArrive:
      return "barrier arrive";
    case EvKind::BarrierRound:
      return "barrier round";
    case EvKind::BarrierDepart:
      return "barrier depart";
    case EvKind::Signal:
      return "signal";
    case EvKind::Push:
      return "push";
    case EvKind::Wait:
      return "wait";
    case EvKind::FlushWait:
      return "flush";
    case EvKind::SemRelease:
      return "sem_release";
    case EvKind::SemAcquire:
      return "sem_acquire";
    case EvKind::Data:
      return "data";
    case EvKind::Transfer:
      return "transfer";
    case EvKind::SignalInc:
      return "signal increment";
    case EvKind::KernelStart:
      return "kernel start";
    case EvKind::KernelEnd:
      return "kernel end";
    case EvKind::HostOut:
      return "host reads the output";
    case EvKind::HostIn:
      return "host writes the input";
  }
  return "?";
}

bool programOrdered(const Event& a, const Event& b) {
  if (a.block != b.block || a.block == kNone || a.call != b.call || a.pos == kNone || b.pos == kNone) return false;
  if (a.pos >= b.pos) return false;
  return a.syncPoint || b.syncPoint || b.epoch > a.epoch || (a.thread >= 0 && a.thread == b.thread);
}

void Graph::finalize() {
  const size_t n = events.size();
  succBegin.assign(n + 1, 0);
  predBegin.assign(n + 1, 0);
  for (const Edge& e : edges) {
    ++succBegin[e.from + 1];
    ++predBegin[e.to + 1];
  }
  for (size_t i = 0; i < n; ++i) {
    succBegin[i + 1] += succBegin[i];
    predBegin[i + 1] += predBegin[i];
  }
  succ.resize(edges.size());
  pred.resize(edges.size());
  succStrong.resize(edges.size());
  predStrong.resize(edges.size());
  std::vector<uint32_t> s(succBegin.begin(), succBegin.end() - 1), p(predBegin.begin(), predBegin.end() - 1);
  for (const Edge& e : edges) {
    succ[s[e.from]] = e.to;
    succStrong[s[e.from]++] = e.strong;
    pred[p[e.to]] = e.from;
    predStrong[p[e.to]++] = e.strong;
  }
}

OpSite Graph::site(uint32_t id) const {
  const Event& e = events[id];
  OpSite s;
  s.rank = static_cast<int>(e.rank);
  s.threadblock = e.tb;
  if (e.tb < 0) {
    s.name = e.kind == EvKind::HostIn    ? strFormat("host before call %d (writes input and output)", e.call)
             : e.kind == EvKind::HostOut ? strFormat("host after call %d (reads the output)", e.call)
                                         : evKindName(e.kind);
    return s;
  }
  s.iteration = e.iteration == kNone ? -1 : static_cast<int>(e.iteration);
  const ThreadblockPlan& tb = plan->ranks[e.rank].threadblocks[e.tb];
  if (e.op == kNone) {
    s.op = -1;
    s.name = evKindName(e.kind);
    return s;
  }
  s.op = static_cast<int>(e.op);
  const Op& op = tb.ops[e.op];
  s.name = opTypeName(op.type);
  if (op.channelType == ChannelType::Port && (e.kind == EvKind::Transfer || e.kind == EvKind::SignalInc))
    s.name += e.kind == EvKind::Transfer ? " (its transfer by the proxy)" : " (its signal by the proxy)";
  if (e.op < tb.opSources.size()) s.source = tb.opSources[e.op];
  return s;
}

namespace {

// One block's program-order state in one call.
struct Seq {
  uint32_t block = kNone;
  uint32_t lastSync = kNone;
  uint32_t pos = 0;
  uint32_t epoch = 0;
  std::vector<uint32_t> pending;                           // non-sync events since lastSync
  std::vector<std::pair<int32_t, uint32_t>> lastOnThread;  // single-thread events since lastSync
};

// Requests a block pushed on a port channel that no signal orders yet.
struct Fifo {
  std::vector<std::pair<uint32_t, uint32_t>> transfers;  // push event, transfer event
  std::vector<std::pair<uint32_t, uint32_t>> incs;       // push event, increment event
};

struct BarrierUse {
  uint32_t arrive, depart;
};

class Builder {
 public:
  Builder(const Plan& plan, const CallLayout& layout, int calls, FindingSink* sink) : plan_(plan), sink_(sink) {
    g_.plan = &plan;
    g_.layout = layout;
    g_.calls = calls;
    threads_ = std::max(1, plan.header.numThreadsPerBlock);
  }

  Graph build();

 private:
  uint32_t append(Seq& seq, Event e, bool linkLastSync = true);
  int32_t slotThread(uint32_t slots) const { return threads_ == 1 || slots <= 1 ? 0 : kManyThreads; }
  int32_t allThreads() const { return threads_ == 1 ? 0 : kAllThreads; }
  void makeCounters();
  uint32_t channelCounter(ChannelType type, uint32_t rank, uint32_t channel) const {
    return (type == ChannelType::Memory ? memBase_ : portBase_)[rank] + channel;
  }
  // The counter a signal on a rank's channel
  // increments: its pair's, on the peer.
  uint32_t pairedCounter(ChannelType type, uint32_t rank, uint32_t channel) const;
  void expandBlock(uint32_t rank, uint32_t tb, int call);
  void expandOp(Seq& seq, uint32_t rank, uint32_t tb, uint32_t index, const RefContext& ctx, int call);
  Event blockEvent(EvKind kind, uint32_t rank, uint32_t tb, uint32_t op, const RefContext& ctx, int call) const;
  void resolve(const RefContext& ctx, const ThreadblockPlan& tb, const Op& op, bool isSrc, uint32_t k, bool packet,
               std::vector<Loc>* out) const;
  uint64_t spanOf(const RefContext& ctx, const ThreadblockPlan& tb, const Op& op, bool isSrc, uint32_t k) const;
  // Adds a move to the last event; locs hold loc, access, isSrc, refPos.
  void beginMove(bool reduce, uint64_t len);
  void addLocs(const std::vector<Loc>& locs, Access access, bool isSrc, uint16_t refPos);
  void endMove(uint32_t event);
  void linkFifoSignal(uint32_t block, uint32_t channel, uint32_t push, uint32_t inc);
  // The proxy's increment of a port signal pushed on a rank's channel.
  // It follows the push and the channel's earlier requests,
  // and increments the pair's counter.
  uint32_t addSignalInc(Event inc, uint32_t block, uint32_t push, uint32_t rank, uint32_t channel);
  void linkFifoFlush(uint32_t block, uint32_t channel, uint32_t flushEvent);
  void buildBarriers();

  const Plan& plan_;
  FindingSink* sink_;
  Graph g_;
  int threads_ = 1;
  std::vector<uint32_t> memBase_, portBase_, semBase_;
  // rank, type, peer, pairIndex to the channel index on rank
  std::map<std::tuple<uint32_t, int, int, int>, uint32_t> pairs_;
  std::map<std::pair<uint32_t, uint32_t>, Fifo> fifos_;  // by block and port channel
  // By rank and barrier id, then per block, then per call: the uses
  std::map<std::pair<uint32_t, uint32_t>, std::map<uint32_t, std::vector<std::vector<BarrierUse>>>> barriers_;
  Move move_;
  std::vector<uint32_t> pendingMoves_;
};

uint32_t Builder::append(Seq& seq, Event e, bool linkLastSync) {
  e.block = seq.block;
  e.pos = seq.pos++;
  if (e.syncPoint) {
    e.epoch = ++seq.epoch;
    const uint32_t id = g_.addEvent(e);
    if (seq.lastSync != kNone && linkLastSync) g_.addEdge(seq.lastSync, id, true);
    for (uint32_t p : seq.pending) g_.addEdge(p, id, true);
    seq.pending.clear();
    seq.lastOnThread.clear();
    seq.lastSync = id;
    return id;
  }
  e.epoch = seq.epoch;
  const uint32_t id = g_.addEvent(e);
  if (seq.lastSync != kNone) g_.addEdge(seq.lastSync, id, true);
  if (e.thread >= 0) {
    bool found = false;
    for (auto& [t, last] : seq.lastOnThread) {
      if (t == e.thread) {
        g_.addEdge(last, id, true);
        last = id;
        found = true;
        break;
      }
    }
    if (!found) seq.lastOnThread.emplace_back(e.thread, id);
  }
  seq.pending.push_back(id);
  return id;
}

void Builder::makeCounters() {
  const int n = g_.nRanks();
  memBase_.assign(n, 0);
  portBase_.assign(n, 0);
  semBase_.assign(n, 0);
  for (int r = 0; r < n; ++r) {
    const RankPlan& rp = plan_.ranks[r];
    auto channels = [&](CounterKind kind, const std::vector<ChannelDecl>& list) {
      for (size_t c = 0; c < list.size(); ++c) {
        Counter k;
        k.kind = kind;
        k.rank = r;
        k.index = static_cast<uint32_t>(c);
        k.peer = list[c].peer;
        g_.counters.push_back(k);
        pairs_[{static_cast<uint32_t>(r), kind == CounterKind::Memory ? 0 : 1, list[c].peer, list[c].pairIndex}] =
            static_cast<uint32_t>(c);
      }
    };
    memBase_[r] = static_cast<uint32_t>(g_.counters.size());
    channels(CounterKind::Memory, rp.memoryChannels);
    portBase_[r] = static_cast<uint32_t>(g_.counters.size());
    channels(CounterKind::Port, rp.portChannels);
    semBase_[r] = static_cast<uint32_t>(g_.counters.size());
    for (size_t s = 0; s < rp.semaphoreInitValues.size(); ++s) {
      Counter k;
      k.kind = CounterKind::Semaphore;
      k.rank = r;
      k.index = static_cast<uint32_t>(s);
      k.init = rp.semaphoreInitValues[s];
      g_.counters.push_back(k);
    }
  }
  // Each channel's counter is incremented by the paired channel of its peer.
  for (Counter& k : g_.counters) {
    if (k.kind == CounterKind::Semaphore || k.peer < 0) continue;
    const RankPlan& rp = plan_.ranks[k.rank];
    const ChannelDecl& d = k.kind == CounterKind::Memory ? rp.memoryChannels[k.index] : rp.portChannels[k.index];
    auto it = pairs_.find(
        {static_cast<uint32_t>(k.peer), k.kind == CounterKind::Memory ? 0 : 1, static_cast<int>(k.rank), d.pairIndex});
    if (it != pairs_.end()) k.peerChannel = static_cast<int32_t>(it->second);
  }
}

uint32_t Builder::pairedCounter(ChannelType type, uint32_t rank, uint32_t channel) const {
  const RankPlan& rp = plan_.ranks[rank];
  const ChannelDecl& d = type == ChannelType::Memory ? rp.memoryChannels[channel] : rp.portChannels[channel];
  auto it = pairs_.find(
      {static_cast<uint32_t>(d.peer), type == ChannelType::Memory ? 0 : 1, static_cast<int>(rank), d.pairIndex});
  // The loader pairs every channel, adding implicit ones,
  // so the partner exists.
  return it == pairs_.end() ? kNone : channelCounter(type, static_cast<uint32_t>(d.peer), it->second);
}

Event Builder::blockEvent(EvKind kind, uint32_t rank, uint32_t tb, uint32_t op, const RefContext& ctx, int call) const {
  Event e;
  e.kind = kind;
  e.call = static_cast<uint8_t>(call);
  e.rank = rank;
  e.tb = static_cast<int32_t>(tb);
  e.op = op;
  e.iteration = ctx.inPipeline ? static_cast<uint32_t>(ctx.pipeOff / ctx.unit) : kNone;
  e.thread = allThreads();
  return e;
}

void Builder::resolve(const RefContext& ctx, const ThreadblockPlan& tb, const Op& op, bool isSrc, uint32_t k,
                      bool packet, std::vector<Loc>* out) const {
  out->clear();
  resolveRef(plan_, g_.layout, ctx, tb.refs[(isSrc ? op.srcBegin : op.dstBegin) + k], packet, out);
}

uint64_t Builder::spanOf(const RefContext& ctx, const ThreadblockPlan& tb, const Op& op, bool isSrc, uint32_t k) const {
  std::vector<Loc> tmp;
  resolve(ctx, tb, op, isSrc, k, false, &tmp);
  return tmp.empty() ? 0 : tmp[0].len;
}

void Builder::beginMove(bool reduce, uint64_t len) {
  move_ = Move{};
  move_.reduce = reduce;
  move_.len = len;
  move_.locBegin = static_cast<uint32_t>(g_.locs.size());
}

void Builder::addLocs(const std::vector<Loc>& locs, Access access, bool isSrc, uint16_t refPos) {
  for (const Loc& l : locs) {
    AccessLoc a;
    a.loc = l;
    a.loc.len = move_.len;
    a.access = access;
    a.src = isSrc;
    a.refPos = refPos;
    g_.locs.push_back(a);
    (isSrc ? move_.nSrc : move_.nDst) += 1;
  }
}

void Builder::endMove(uint32_t event) {
  Event& e = g_.events[event];
  if (move_.len == 0) {  // a pipeline iteration past the reference's end moves nothing
    g_.locs.resize(move_.locBegin);
    return;
  }
  if (e.moveCount == 0) e.moveBegin = static_cast<uint32_t>(g_.moves.size());
  g_.moves.push_back(move_);
  ++e.moveCount;
}

void Builder::linkFifoSignal(uint32_t block, uint32_t channel, uint32_t push, uint32_t inc) {
  Fifo& f = fifos_[{block, channel}];
  const Event& s = g_.events[push];
  auto ordered = [&](uint32_t p) { return p == push || programOrdered(g_.events[p], s); };
  auto keep = [&](std::vector<std::pair<uint32_t, uint32_t>>& list) {
    std::vector<std::pair<uint32_t, uint32_t>> rest;
    for (auto& [p, a] : list) {
      if (ordered(p))
        g_.addEdge(a, inc, true);
      else
        rest.push_back({p, a});
    }
    list.swap(rest);
  };
  keep(f.transfers);
  keep(f.incs);
  f.incs.push_back({push, inc});
}

uint32_t Builder::addSignalInc(Event inc, uint32_t block, uint32_t push, uint32_t rank, uint32_t channel) {
  inc.block = block;
  inc.anchor = push;
  const uint32_t ii = g_.addEvent(inc);
  g_.addEdge(push, ii, true);
  linkFifoSignal(block, channel, push, ii);
  g_.producers.push_back({ii, pairedCounter(ChannelType::Port, rank, channel), false});
  return ii;
}

void Builder::linkFifoFlush(uint32_t block, uint32_t channel, uint32_t flushEvent) {
  auto it = fifos_.find({block, channel});
  if (it == fifos_.end()) return;
  const Event& fe = g_.events[flushEvent];
  for (auto* list : {&it->second.transfers, &it->second.incs})
    for (auto& [p, a] : *list)
      if (programOrdered(g_.events[p], fe)) g_.addEdge(a, flushEvent, true);
}

void Builder::expandOp(Seq& seq, uint32_t rank, uint32_t tbIndex, uint32_t index, const RefContext& ctxIn, int call) {
  const ThreadblockPlan& tb = plan_.ranks[rank].threadblocks[tbIndex];
  const Op& op = tb.ops[index];
  RefContext ctx = ctxIn;
  ctx.op = &op;
  auto id = [&](uint32_t k) { return tb.ids[op.idsBegin + (k < op.nIds ? k : op.nIds - 1)]; };
  auto ev = [&](EvKind kind) { return blockEvent(kind, rank, tbIndex, index, ctx, call); };
  std::vector<Loc> a, b;
  const bool port = op.channelType == ChannelType::Port;
  switch (op.type) {
    case OpType::Nop: {
      Event e = ev(EvKind::Sync);
      e.syncPoint = true;
      append(seq, e);
      return;
    }
    case OpType::Barrier: {
      Event arrive = ev(EvKind::BarrierArrive);
      arrive.syncPoint = true;
      const uint32_t ai = append(seq, arrive);
      Event depart = ev(EvKind::BarrierDepart);
      depart.syncPoint = true;
      const uint32_t di = append(seq, depart, false);
      auto& perCall = barriers_[{rank, op.barrierId}][tbIndex];
      perCall.resize(g_.calls);
      perCall[call].push_back({ai, di});
      return;
    }
    case OpType::Signal:
    case OpType::RelaxedSignal: {
      const bool relaxed = op.type == OpType::RelaxedSignal;
      if (!port) {
        Event e = ev(EvKind::Signal);
        e.relaxed = relaxed;
        e.thread = slotThread(op.nIds);
        const uint32_t si = append(seq, e);
        for (uint32_t k = 0; k < op.nIds; ++k)
          g_.producers.push_back({si, pairedCounter(ChannelType::Memory, rank, id(k)), relaxed});
        return;
      }
      Event e = ev(EvKind::Push);
      e.thread = slotThread(op.nIds);
      const uint32_t pi = append(seq, e);
      for (uint32_t k = 0; k < op.nIds; ++k) addSignalInc(ev(EvKind::SignalInc), seq.block, pi, rank, id(k));
      return;
    }
    case OpType::Wait:
    case OpType::RelaxedWait: {
      const bool relaxed = op.type == OpType::RelaxedWait;
      Event e = ev(EvKind::Wait);
      e.relaxed = relaxed;
      e.thread = slotThread(op.nIds);
      const uint32_t wi = append(seq, e);
      for (uint32_t k = 0; k < op.nIds; ++k)
        g_.consumers.push_back(
            {wi, channelCounter(port ? ChannelType::Port : ChannelType::Memory, rank, id(k)), relaxed});
      return;
    }
    case OpType::Flush: {
      Event e = ev(EvKind::FlushWait);
      e.thread = slotThread(op.nIds);
      const uint32_t fi = append(seq, e);
      for (uint32_t k = 0; k < op.nIds; ++k) linkFifoFlush(seq.block, id(k), fi);
      return;
    }
    case OpType::SemAcquire:
    case OpType::SemRelease: {
      const bool acquire = op.type == OpType::SemAcquire;
      Event e = ev(acquire ? EvKind::SemAcquire : EvKind::SemRelease);
      e.thread = slotThread(op.nIds);
      const uint32_t si = append(seq, e);
      for (uint32_t k = 0; k < op.nIds; ++k)
        (acquire ? g_.consumers : g_.producers).push_back({si, semBase_[rank] + id(k), false});
      return;
    }
    case OpType::Pipeline: {
      const uint64_t total = static_cast<uint64_t>(op.numChunks) * g_.layout.chunk;
      const uint64_t iterations = op.unitSize == 0 ? 0 : (total + op.unitSize - 1) / op.unitSize;
      RefContext inner = ctx;
      inner.inPipeline = true;
      inner.unit = op.unitSize;
      for (uint64_t it = 0; it < iterations; ++it) {
        inner.pipeOff = it * op.unitSize;
        for (uint32_t bIndex = 1; bIndex <= op.bodyCount; ++bIndex)
          expandOp(seq, rank, tbIndex, index + bIndex, inner, call);
      }
      return;
    }
    default:
      break;
  }
  // Port-channel transfers: the pushing threads, then the proxy's work.
  if (port && (op.type == OpType::Put || op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush ||
               op.type == OpType::PutPackets || op.type == OpType::ReadPutPackets)) {
    const bool packets = op.type == OpType::PutPackets || op.type == OpType::ReadPutPackets;
    Event e = ev(EvKind::Push);
    e.thread = slotThread(op.nDst);
    const uint32_t pi = append(seq, e);
    std::vector<uint32_t> own;
    for (uint32_t i = 0; i < op.nDst; ++i) {
      const uint32_t sp = op.nSrc == 1 ? 0 : i;
      resolve(ctx, tb, op, true, sp, packets, &a);
      resolve(ctx, tb, op, false, i, packets, &b);
      const uint64_t len = std::min(a[0].len, b[0].len);
      if (op.type == OpType::ReadPutPackets) {  // the pushing thread waits for its packets first
        beginMove(false, len);
        addLocs(a, Access::PktRead, true, static_cast<uint16_t>(sp));
        endMove(pi);
      }
      Event t = ev(EvKind::Transfer);
      t.block = seq.block;
      t.anchor = pi;
      const uint32_t ti = g_.addEvent(t);
      g_.addEdge(pi, ti, true);
      beginMove(false, len);
      addLocs(a, packets ? Access::RawPktRead : Access::Read, true, static_cast<uint16_t>(sp));
      addLocs(b, packets ? Access::PktWrite : Access::Write, false, static_cast<uint16_t>(i));
      endMove(ti);
      fifos_[{seq.block, id(i)}].transfers.push_back({pi, ti});
      own.push_back(ti);
      if (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush)
        own.push_back(addSignalInc(ev(EvKind::SignalInc), seq.block, pi, rank, id(i)));
    }
    if (op.type == OpType::PutWithSignalAndFlush) {
      Event f = ev(EvKind::FlushWait);
      f.thread = e.thread;
      const uint32_t fi = append(seq, f);
      g_.addEdge(pi, fi, true);
      for (uint32_t x : own) g_.addEdge(x, fi, true);
    }
    return;
  }
  // Everything else is one event all threads of the block share.
  Event e = ev(EvKind::Data);
  const uint32_t di = append(seq, e);
  const uint16_t nSrc = op.nSrc, nDst = op.nDst;
  switch (op.type) {
    case OpType::Put:
    case OpType::PutWithSignal:
    case OpType::PutWithSignalAndFlush:
    case OpType::Get:
    case OpType::PutPackets:
      for (uint32_t i = 0; i < nDst; ++i) {
        const uint32_t sp = nSrc == 1 ? 0 : i;
        resolve(ctx, tb, op, true, sp, false, &a);
        resolve(ctx, tb, op, false, i, op.type == OpType::PutPackets, &b);
        beginMove(false, std::min(a[0].len, b[0].len));
        addLocs(a, Access::Read, true, static_cast<uint16_t>(sp));
        addLocs(b, op.type == OpType::PutPackets ? Access::PktWrite : Access::Write, false, static_cast<uint16_t>(i));
        endMove(di);
      }
      break;
    case OpType::ReadPutPackets: {
      uint64_t bytes = spanOf(ctx, tb, op, true, 0);
      for (uint32_t i = 0; i < nDst; ++i) bytes = std::min(bytes, spanOf(ctx, tb, op, false, i));
      for (uint32_t i = 0; i < nDst; ++i) {
        const uint32_t sp = nSrc == 1 ? 0 : i;
        resolve(ctx, tb, op, true, sp, true, &a);
        resolve(ctx, tb, op, false, i, true, &b);
        beginMove(false, bytes);
        addLocs(a, Access::PktRead, true, static_cast<uint16_t>(sp));
        addLocs(b, Access::PktWrite, false, static_cast<uint16_t>(i));
        endMove(di);
      }
      break;
    }
    case OpType::Copy:
    case OpType::CopyPackets:
    case OpType::UnpackPackets:
    case OpType::GroupStore:
    case OpType::GroupStorePackets: {
      const bool srcPkt = op.type == OpType::UnpackPackets || op.type == OpType::GroupStorePackets;
      const bool dstPkt = op.type == OpType::CopyPackets || op.type == OpType::GroupStorePackets;
      resolve(ctx, tb, op, true, 0, srcPkt, &a);
      resolve(ctx, tb, op, false, 0, dstPkt, &b);
      beginMove(false, std::min(a[0].len, b[0].len));
      addLocs(a, srcPkt ? Access::PktRead : Access::Read, true, 0);
      addLocs(b, dstPkt ? Access::PktWrite : Access::Write, false, 0);
      endMove(di);
      break;
    }
    case OpType::Reduce:
    case OpType::ReduceSend:
    case OpType::ReadReduce:
    case OpType::ReadReduceSend:
    case OpType::ReducePackets:
    case OpType::ReduceSendPackets:
    case OpType::ReduceCopyPackets:
    case OpType::ReduceCopySendPackets: {
      const bool packets = isPacketOp(op.type);
      const uint32_t dsts = (op.type == OpType::Reduce || op.type == OpType::ReadReduce) ? 1 : nDst;
      beginMove(true, spanOf(ctx, tb, op, true, 0));
      for (uint32_t k = 0; k < nSrc; ++k) {
        resolve(ctx, tb, op, true, k, packets && k > 0, &a);
        addLocs(a, packets && k > 0 ? Access::PktRead : Access::Read, true, static_cast<uint16_t>(k));
      }
      for (uint32_t d = 0; d < dsts; ++d) {
        resolve(ctx, tb, op, false, d, packets && d > 0, &b);
        addLocs(b, packets && d > 0 ? Access::PktWrite : Access::Write, false, static_cast<uint16_t>(d));
      }
      endMove(di);
      break;
    }
    case OpType::GroupLoadReduce:
    case OpType::GroupLoadReduceStore:
      resolve(ctx, tb, op, true, 0, false, &a);
      resolve(ctx, tb, op, false, 0, false, &b);
      beginMove(true, std::min(a[0].len, b[0].len));
      addLocs(a, Access::Read, true, 0);
      addLocs(b, Access::Write, false, 0);
      endMove(di);
      break;
    default:
      break;
  }
  // pws and pwsf over memory channels: the block's copy lands,
  // then the signals release it.
  if (!port && (op.type == OpType::PutWithSignal || op.type == OpType::PutWithSignalAndFlush)) {
    Event s = ev(EvKind::Sync);
    s.syncPoint = true;
    append(seq, s);
    Event sig = ev(EvKind::Signal);
    sig.thread = slotThread(op.nIds);
    const uint32_t si = append(seq, sig);
    for (uint32_t k = 0; k < op.nIds; ++k)
      g_.producers.push_back({si, pairedCounter(ChannelType::Memory, rank, id(k)), false});
  }
}

void Builder::expandBlock(uint32_t rank, uint32_t tbIndex, int call) {
  const ThreadblockPlan& tb = plan_.ranks[rank].threadblocks[tbIndex];
  Seq seq;
  seq.block = g_.blockBase[rank] + tbIndex;
  RefContext ctx;
  ctx.rank = static_cast<int>(rank);
  const RankLayout& R = g_.layout.ranks[rank];
  // The LL flag starts at 1 and advances per launch.
  // Double scratch uses the second half on even flags,
  // as op_interpreter.hpp does.
  ctx.half = (plan_.header.useDoubleScratchBuffer && ((call + 1) % 2 == 0)) ? R.halfBytes : 0;
  Event start;
  start.kind = EvKind::BlockStart;
  start.call = static_cast<uint8_t>(call);
  start.rank = rank;
  start.tb = static_cast<int32_t>(tbIndex);
  start.syncPoint = true;
  const uint32_t si = append(seq, start);
  g_.addEdge(g_.kernelStart[call * g_.nRanks() + rank], si, true);
  for (uint32_t i = 0; i < tb.ops.size();) {
    const Op& op = tb.ops[i];
    expandOp(seq, rank, tbIndex, i, ctx, call);
    i += op.type == OpType::Pipeline ? 1 + op.bodyCount : 1;
  }
  Event end = start;
  end.kind = EvKind::BlockEnd;
  const uint32_t ei = append(seq, end);
  g_.addEdge(ei, g_.kernelEnd[call * g_.nRanks() + rank], true);
}

void Builder::buildBarriers() {
  for (auto& [key, perBlock] : barriers_) {
    const auto [rank, barrierId] = key;
    for (int call = 0; call < g_.calls; ++call) {
      size_t rounds = SIZE_MAX, most = 0;
      uint32_t fewTb = 0, manyTb = 0;
      for (auto& [tb, perCall] : perBlock) {
        perCall.resize(g_.calls);
        const size_t n = perCall[call].size();
        if (n < rounds) rounds = n, fewTb = tb;
        if (n > most) most = n, manyTb = tb;
      }
      if (rounds != most && call == 0) {
        Finding f;
        f.kind = FindingKind::Deadlock;
        f.at.rank = static_cast<int>(rank);
        f.at.threadblock = static_cast<int>(manyTb);
        f.message = strFormat(
            "barrier %u of rank %u: threadblock %u reaches it %zu time(s) per call but threadblock %u "
            "only %zu: its later rounds never complete",
            barrierId, rank, manyTb, most, fewTb, rounds);
        sink_->add(strFormat("barrier-count r%u b%u", rank, barrierId), f);
      }
      for (size_t j = 0; j < most; ++j) {
        if (j >= rounds) {  // no round for these: the block waits forever
          for (auto& [tb, perCall] : perBlock)
            if (j < perCall[call].size())
              g_.blocked.push_back(
                  {perCall[call][j].depart, strFormat("barrier %u never completes this round", barrierId)});
          continue;
        }
        Event round;
        round.kind = EvKind::BarrierRound;
        round.call = static_cast<uint8_t>(call);
        round.rank = rank;
        const uint32_t ri = g_.addEvent(round);
        for (auto& [tb, perCall] : perBlock) {
          g_.addEdge(perCall[call][j].arrive, ri, true);
          g_.addEdge(ri, perCall[call][j].depart, true);
        }
      }
    }
  }
}

Graph Builder::build() {
  const int n = g_.nRanks();
  makeCounters();
  g_.blockBase.assign(n + 1, 0);
  for (int r = 0; r < n; ++r)
    g_.blockBase[r + 1] = g_.blockBase[r] + static_cast<uint32_t>(plan_.ranks[r].threadblocks.size());
  const int calls = g_.calls;
  g_.kernelStart.assign(calls * n, kNone);
  g_.kernelEnd.assign(calls * n, kNone);
  g_.hostIn.assign(calls * n, kNone);
  g_.hostOut.assign(calls * n, kNone);
  auto rankNode = [&](EvKind kind, int call, int rank) {
    Event e;
    e.kind = kind;
    e.call = static_cast<uint8_t>(call);
    e.rank = static_cast<uint32_t>(rank);
    return g_.addEvent(e);
  };
  for (int call = 0; call < calls; ++call) {
    for (int r = 0; r < n; ++r) {
      const size_t i = call * n + r;
      g_.hostIn[i] = rankNode(EvKind::HostIn, call, r);
      g_.kernelStart[i] = rankNode(EvKind::KernelStart, call, r);
      g_.kernelEnd[i] = rankNode(EvKind::KernelEnd, call, r);
      g_.hostOut[i] = rankNode(EvKind::HostOut, call, r);
      g_.addEdge(g_.hostIn[i], g_.kernelStart[i], true);
      g_.addEdge(g_.kernelEnd[i], g_.hostOut[i], true);
      if (call > 0) g_.addEdge(g_.hostOut[i - n], g_.hostIn[i], true);
      if (plan_.ranks[r].threadblocks.empty()) g_.addEdge(g_.kernelStart[i], g_.kernelEnd[i], true);
    }
    for (int r = 0; r < n; ++r)
      for (uint32_t t = 0; t < plan_.ranks[r].threadblocks.size(); ++t) expandBlock(static_cast<uint32_t>(r), t, call);
    fifos_.clear();
  }
  buildBarriers();
  return std::move(g_);
}

}  // namespace

Graph buildGraph(const Plan& plan, const CallLayout& layout, int calls, FindingSink* sink) {
  Builder b(plan, layout, calls, sink);
  return b.build();
}

}  // namespace mscclpp::plan::verify
